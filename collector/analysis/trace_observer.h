// TraceObserver: what the streaming analysis shows, as it goes, to the exports that draw
// pictures of a trace (docs/visualization.md): the Chrome trace-event file, folded stacks and
// speedscope profiles, and to the per-activity export (--activities) (collector/export/).
//
// ActivityFolder (activity_folder.h) is the only caller. It calls the observer from the same places
// it folds: each device activity when the reorder window releases it (start order, joined and
// attributed), each launch when it leaves the join, each closed NVTX push/pop range at the next
// release after it closed (when its path's names are known), and once per process at the end
// with the finished analysis. Nothing here is kept by the analysis for the observer's sake, so
// an observer that writes as it is called keeps the collector's memory bounded by work in
// flight (docs/architecture.md §Streaming analysis).
//
// Runs on: the thread that owns the ProcessTrace (the ingest thread while streaming; the main
// thread for imported traces, which release everything at the end). One observer may serve
// several ProcessTraces (every connection of a run): each call names its process by pid.
// Single-threaded; no call re-enters the analysis.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_TRACE_OBSERVER_H_
#define GPUATTR_COLLECTOR_ANALYSIS_TRACE_OBSERVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attributed_activity.h"
#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

// One released device activity with timestamps, and what the analysis decided for it. The
// references live only for the call.
struct ObservedActivity {
  uint32_t pid = 0;
  const ActivityRecord* activity = nullptr;
  const LaunchRecord* launch = nullptr;      // null: the launch was never seen
  const std::string* kernel_name = nullptr;  // demangled; null for memcpy and memset
  const std::string* family = nullptr;       // the kernel's family; null for memcpy and memset
  const std::vector<std::string>* path = nullptr;  // attributed pass path; empty: unattributed
  // Graph activities whose launch was seen: the path the graph was launched under (empty: no
  // range); null otherwise.
  const std::vector<std::string>* launch_path = nullptr;
  std::optional<std::string> thread_name;  // the launching thread's name, when it has one
  AttributionKind attribution = AttributionKind::kNone;
  const char* reason = nullptr;  // the unattributed reason, else null
  std::optional<Phase> phase;    // of the attributed path
};

class TraceObserver {
 public:
  virtual ~TraceObserver() = default;

  // A closed push/pop range of thread `range.tid`; `path` is its full path (last: its name).
  virtual void RangeClosed(uint32_t pid, const HostRange& range,
                           const std::vector<std::string>& path) = 0;
  // A launch-like API call leaving the join, matched or not (exit_ns 0: its ApiExit never came).
  virtual void LaunchDone(uint32_t pid, uint32_t correlation_id, const LaunchRecord& launch) = 0;
  // A device activity, in release (start) order per process.
  virtual void ActivityReleased(const ObservedActivity& activity) = 0;
  // The process's analysis ended; `data` is finished (names, spans, threads, devices known).
  virtual void ProcessFinished(const TraceData& data, const ProcessAnalysis& analysis) = 0;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_TRACE_OBSERVER_H_
