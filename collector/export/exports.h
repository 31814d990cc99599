// Exports: the files one analysis writes besides the report, behind the one TraceObserver the
// analysis takes (AnalysisOptions::observer):
//   --trace / --perfetto FILE   the timeline, Chrome trace-event JSON (chrome_trace.h);
//   --folded FILE               folded stacks of device time (folded_stacks.h);
//   --speedscope FILE           the same as a speedscope profile (docs/visualization.md);
//   --activities FILE           one JSON line per device activity (activity_lines.h).
// `gpuattr run` sets it on the live analysis; `gpuattr import` and `gpuattr export` on the replay
// of imported traces.
//
// Every file is written through a temporary file beside its path and appears, whole, only at
// Commit (after the report); destroyed uncommitted, nothing appears. Create checks the paths
// before any work starts. Single-threaded: the analysis calls it on the thread that folds, and
// Commit runs on the same thread after the last process finished.
#ifndef GPUATTR_COLLECTOR_EXPORT_EXPORTS_H_
#define GPUATTR_COLLECTOR_EXPORT_EXPORTS_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/trace_observer.h"
#include "base/status.h"
#include "export/activity_lines.h"
#include "export/chrome_trace.h"
#include "export/folded_stacks.h"

namespace gpuattr::collector {

struct ExportPaths {
  std::string trace;                               // Chrome trace-event JSON; empty: none
  std::string folded;                              // folded stacks; empty: none
  std::string speedscope;                          // speedscope JSON; empty: none
  std::string activities;                          // per-activity JSON lines; empty: none
  ExistingFile existing = ExistingFile::kReplace;  // what publishing does with a file of a name
  bool any() const {
    return !trace.empty() || !folded.empty() || !speedscope.empty() || !activities.empty();
  }
};

class Exports : public TraceObserver {
 public:
  // Opens what `paths` names; `generator` ("gpuattr " GPUATTR_VERSION) goes into the files'
  // metadata.
  // kFailedPrecondition when a path cannot be written (a directory, a missing parent).
  static StatusOr<std::shared_ptr<Exports>> Create(const ExportPaths& paths,
                                                   const std::string& generator);

  void RangeClosed(uint32_t pid, const HostRange& range,
                   const std::vector<std::string>& path) override;
  void LaunchDone(uint32_t pid, uint32_t correlation_id, const LaunchRecord& launch) override;
  void ActivityReleased(const ObservedActivity& activity) override;
  void ProcessFinished(const TraceData& data, const ProcessAnalysis& analysis) override;

  // Writes the folded outputs and publishes every file; the first error.
  Status Commit();

  // The folded stacks gathered so far, one entry per finished process (tests).
  const std::vector<FoldedProcess>& folded() const { return folded_; }

 private:
  Exports() = default;
  static std::string StackKey(const ObservedActivity& activity);
  void NoteFirstStart(const ObservedActivity& activity);

  ExportPaths paths_;
  std::string generator_;
  std::unique_ptr<ChromeTraceWriter> trace_;
  std::unique_ptr<ActivityLinesWriter> activities_;
  std::vector<FoldedProcess> folded_;
  // Per pid, per folded stack (StackKey): the earliest start of its device activities, while the
  // process runs (--folded and --speedscope only; one entry per stack).
  std::unordered_map<uint32_t, std::unordered_map<std::string, uint64_t>> first_start_ns_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_EXPORT_EXPORTS_H_
