// ActivityLinesWriter: the per-activity export (`--activities FILE`, docs/attribution.md
// §Per-activity export): one JSON object per line for every device activity with timestamps, in
// release (start) order per process, with what the analysis decided for it.
//
// A TraceObserver like the picture exports (exports.h owns it): lines are written as the
// analysis releases activities, through an AtomicTextFile with a buffer of about 1 MiB, and the
// file appears, whole, at Commit. Single-threaded: every call comes from the thread that folds.
#ifndef GPUATTR_COLLECTOR_EXPORT_ACTIVITY_LINES_H_
#define GPUATTR_COLLECTOR_EXPORT_ACTIVITY_LINES_H_

#include <memory>
#include <string>

#include "analysis/trace_observer.h"
#include "base/status.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

// The line of one activity, without its newline.
std::string ActivityLine(const ObservedActivity& activity);

class ActivityLinesWriter {
 public:
  static StatusOr<std::unique_ptr<ActivityLinesWriter>> Create(const std::string& path,
                                                               ExistingFile existing);

  void ActivityReleased(const ObservedActivity& activity);
  // Writes what is buffered and renames the file onto its path; the first write error.
  Status Commit();

 private:
  explicit ActivityLinesWriter(AtomicTextFile file) : file_(std::move(file)) {}

  static constexpr size_t kFlushBytes = 1 << 20;
  AtomicTextFile file_;
  std::string buffer_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_EXPORT_ACTIVITY_LINES_H_
