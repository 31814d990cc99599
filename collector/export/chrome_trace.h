// ChromeTraceWriter: the timeline export (`gpuattr run --trace`, `gpuattr export --perfetto`), a
// Chrome trace-event JSON file that the Perfetto UI (ui.perfetto.dev) and chrome://tracing open.
//
// Layout of the file (docs/visualization.md §Timeline):
//
//   process "simgpu-run rank 0"                    one per traced process, labelled by rank
//     thread "main"             X nvtx      the NVTX push/pop ranges, nested
//                               X gpu       the launch API calls, inside them
//     thread "stream 7 (GPU 0)" X gpu       kernels, memcpys, memsets; args: kind, family, path,
//                                           attribution
//     async  "nvtx"             b/e         NVTX start/end ranges (they may cross threads)
//   flow "launch" (s → f)       from each launch call to each device activity it made: one
//                               arrow per activity, so a graph launch fans out to its N kernels
//
// Timestamps are the collector's integer nanoseconds written as microseconds with exactly three
// decimals ("ts": 1234.567 is 1234567 ns), so nothing is rounded. A stream's track is a thread
// of its process with a made-up tid at or above kDeviceTrackTidBase (Linux tids stay below
// 2^22), numbered in order of first appearance; its thread name says which device and stream.
// A flow starts at its launch slice's start and ends ("bp": "e") at its device slice's start,
// the flow and both slices in category "gpu", which is how Chrome DevTools, catapult and Perfetto
// all bind it. Process sort indices fit in int32 (Perfetto).
//
// Memory: events are written as they are observed, through an AtomicTextFile (renamed onto the
// path at Commit), with a buffer of about 1 MiB; what is kept is one entry per thread and per
// stream seen, for the metadata written when each process finishes. Single-threaded: every
// call comes from the thread that folds (trace_observer.h).
#ifndef GPUATTR_COLLECTOR_EXPORT_CHROME_TRACE_H_
#define GPUATTR_COLLECTOR_EXPORT_CHROME_TRACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "analysis/trace_observer.h"
#include "base/status.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

inline constexpr uint32_t kDeviceTrackTidBase = 1u << 30;

class ChromeTraceWriter : public TraceObserver {
 public:
  // Opens the temporary file beside `path` and writes the document's head. `generator` names
  // the tool in the file's metadata ("gpuattr " GPUATTR_VERSION); `existing`: whether Commit
  // replaces a file of that name (atomic_write.h).
  static StatusOr<std::unique_ptr<ChromeTraceWriter>> Create(const std::string& path,
                                                             const std::string& generator,
                                                             ExistingFile existing);

  void RangeClosed(uint32_t pid, const HostRange& range,
                   const std::vector<std::string>& path) override;
  void LaunchDone(uint32_t pid, uint32_t correlation_id, const LaunchRecord& launch) override;
  void ActivityReleased(const ObservedActivity& activity) override;
  void ProcessFinished(const TraceData& data, const ProcessAnalysis& analysis) override;

  // Ends the document and renames it onto the path; the first write error, if any.
  Status Commit();

 private:
  explicit ChromeTraceWriter(AtomicTextFile file);

  struct Tracks {
    std::set<uint32_t> host_tids;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> device_tids;  // (device, stream) -> tid
  };

  uint32_t DeviceTid(uint32_t pid, uint32_t device, uint32_t stream);
  void BeginEvent();  // the separator before an event
  void Flush();

  AtomicTextFile file_;
  std::string buffer_;
  bool first_event_ = true;
  uint64_t next_flow_id_ = 1;
  uint64_t next_span_id_ = 1;
  std::map<uint32_t, Tracks> tracks_;  // by pid
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_EXPORT_CHROME_TRACE_H_
