// DeviceSweep: per device and per stream, busy time as a union of activity intervals, the device
// span, and its idle gaps classified (docs/attribution.md §Busy and idle, §Gaps).
//
// Activities come in start order (the reorder window's release). Per device the sweep keeps the
// open merged interval and the hole it last opened: a hole stays pending while activities start
// exactly at its end, because the gap's class is decided by the earliest-launched of those
// (host_bound when that launch was entered at or after the gap began, dependency when before,
// unclassified when no launch was seen). A finished hole is counted and offered to the device's
// kLargestGaps longest; their host ranges are resolved at the end, through the caller. Beside the
// device's union it keeps its CategoryUnions (category_unions.h). A late activity counts in the
// stream's sums but joins no union.
//
// Single-threaded, on the thread that folds. Memory: per device and stream, O(1) plus the top K.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_DEVICE_SWEEP_H_
#define GPUATTR_COLLECTOR_ANALYSIS_DEVICE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/category_unions.h"
#include "analysis/interval_union.h"
#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class DeviceSweep {
 public:
  // The range a gap's host side was in (`tid`: the launching thread of the work that ended it).
  using HostRangeAt =
      std::function<std::optional<std::vector<std::string>>(uint32_t tid, uint64_t t)>;
  // A device's name, if the trace named it.
  using DeviceName = std::function<std::optional<std::string>(uint32_t device)>;

  // `launch` null: never seen. `late`: see the file comment.
  void Fold(const ActivityRecord& activity, const LaunchRecord* launch, bool late,
            WorkCategory category);

  // The devices that ran at least one activity in order, by id. `capture_end_ns` ends each
  // device's tail. Once.
  std::vector<DeviceStats> Finish(uint64_t capture_end_ns, const HostRangeAt& host_range_at,
                                  const DeviceName& device_name);

 private:
  struct Hole {
    uint64_t start = 0;
    uint64_t end = 0;
    GapKind kind = GapKind::kUnknown;
    bool has_launch = false;
    uint64_t launch_ns = 0;
    uint32_t launch_tid = 0;
  };
  struct StreamState {
    StreamStats stats;
    IntervalUnion busy;
    uint64_t first_start_ns = 0;
  };
  struct DeviceState {
    DeviceStats stats;
    IntervalUnion busy;
    CategoryUnions categories;
    std::optional<Hole> pending;
    std::vector<Hole> largest;  // longest first (then earliest), at most kLargestGaps
    std::map<uint32_t, StreamState> streams;
  };

  static void FinishHole(DeviceState& device);

  std::map<uint32_t, DeviceState> devices_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_DEVICE_SWEEP_H_
