#include "merge_fuzz_entry.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/merge_command.h"

namespace gpuattr::fuzz {
namespace {

// The memfd the fuzzed report is written to, and a private directory for the merged report;
// made once, and the directory removed at exit.
class Files {
 public:
  Files() {
    input_fd_ = ::memfd_create("gpuattr-merge-fuzz", MFD_CLOEXEC);
    char directory[] = "/tmp/gpuattr-merge-fuzz-XXXXXX";
    if (input_fd_ < 0 || ::mkdtemp(directory) == nullptr) {
      std::perror("merge fuzz setup");
      std::abort();
    }
    directory_ = directory;
    input_path_ = "/proc/self/fd/" + std::to_string(input_fd_);
    output_path_ = directory_ + "/merged.json";
  }
  ~Files() {
    ::unlink(output_path_.c_str());
    ::rmdir(directory_.c_str());
  }
  Files(const Files&) = delete;
  Files& operator=(const Files&) = delete;

  int input_fd() const { return input_fd_; }
  const std::string& input_path() const { return input_path_; }    // /proc/self/fd/N
  const std::string& output_path() const { return output_path_; }  // DIRECTORY/merged.json

 private:
  int input_fd_ = -1;
  std::string directory_;
  std::string input_path_;
  std::string output_path_;
};

const Files& FilesOnce() {
  static const Files files;
  return files;
}

}  // namespace

bool MergeReportBytes(const uint8_t* data, size_t size) {
  using namespace collector;
  const Files& files = FilesOnce();
  if (::ftruncate(files.input_fd(), 0) != 0 ||
      ::pwrite(files.input_fd(), data, size, 0) != static_cast<ssize_t>(size)) {
    std::perror("writing the memfd");
    std::abort();
  }
  MergeOptions options;
  options.inputs = {GPUATTR_FUZZ_MERGE_BASE, files.input_path()};
  options.output = files.output_path();
  options.force_overwrite = true;
  options.allow_mixed_captures = size % 2 == 1;
  options.quiet = true;
  const StatusOr<MergeResult> merged = MergeReports(options);
  if (merged.ok()) return true;
  const StatusCode code = merged.status().code();
  if (code != StatusCode::kDataLoss && code != StatusCode::kInvalidArgument) {
    std::fprintf(stderr, "merge failed with an unexpected error: %s\n",
                 merged.status().message().c_str());
    std::abort();
  }
  return false;
}

}  // namespace gpuattr::fuzz
