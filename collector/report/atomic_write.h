// Atomic writes: every file gpuattr writes (reports, exports, gate outputs) appears whole or not at
// all. A temporary file is created beside the target (same directory, so same filesystem) and
// renamed onto it once complete; on failure the temporary file is removed and the target is left
// as it was. With ExistingFile::kRefuse the file is published with link(2) instead, which fails
// rather than replace a file of that name (one that appeared since the name was chosen: two ranks
// given one name); where the file system has no hard links, an existence check and rename(2).
// An existing character device or FIFO (/dev/null, a terminal, a pipe) is written in place
// instead: renaming onto it would replace the node. A FIFO that no process reads is refused at
// once (kFailedPrecondition naming the remedy), never waited on. Other files that are not
// regular are refused.
//
// Single-threaded objects; no global state.
#ifndef GPUATTR_COLLECTOR_REPORT_ATOMIC_WRITE_H_
#define GPUATTR_COLLECTOR_REPORT_ATOMIC_WRITE_H_

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace gpuattr::collector {

// A character device or a FIFO: written in place, never replaced, never "existing" for the
// no-overwrite rule (output_names.h).
bool IsWrittenInPlace(mode_t mode);

// What publishing does when `path` names a file already.
enum class ExistingFile {
  kReplace,  // replace it (rename)
  kRefuse,   // leave it and fail (kFailedPrecondition)
};

// Writes `text` to `path` through a temporary file in the same directory and rename(2), so a
// reader sees the old file, the new file, or none, never half of one.
Status WriteTextAtomically(const std::string& text, const std::string& path,
                           ExistingFile existing = ExistingFile::kReplace);

// A text file written piecewise and published at once: a temporary file beside `path`, renamed
// onto it by Commit (the streamed --activities lines, the timeline). Destroyed uncommitted, the
// temporary file is removed. Single-threaded; Append keeps the first write error for Commit to
// return.
class AtomicTextFile {
 public:
  static StatusOr<AtomicTextFile> Create(const std::string& path,
                                         ExistingFile existing = ExistingFile::kReplace);
  AtomicTextFile(AtomicTextFile&& other) noexcept;
  AtomicTextFile& operator=(AtomicTextFile&&) = delete;
  ~AtomicTextFile();

  void Append(const std::string& text);
  Status Commit();

 private:
  AtomicTextFile() = default;
  int fd_ = -1;
  std::string path_;
  std::string temp_path_;
  ExistingFile existing_ = ExistingFile::kReplace;
  Status status_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_ATOMIC_WRITE_H_
