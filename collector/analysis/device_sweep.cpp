#include "analysis/device_sweep.h"

#include <algorithm>
#include <utility>

namespace gpuattr::collector {

void DeviceSweep::Fold(const ActivityRecord& activity, const LaunchRecord* launch, bool late,
                       WorkCategory category) {
  DeviceState& device = devices_[activity.device];
  StreamState& stream = device.streams[activity.stream];
  stream.stats.id = activity.stream;
  stream.stats.activities += 1;
  const uint64_t ns = activity.duration_ns();
  switch (activity.kind) {
    case ActivityKind::kKernel:
      stream.stats.kernel_ns += ns;
      break;
    case ActivityKind::kMemcpy:
      stream.stats.memcpy_ns += ns;
      break;
    case ActivityKind::kMemset:
      stream.stats.memset_ns += ns;
      break;
  }
  if (late) return;
  if (stream.busy.empty()) stream.first_start_ns = activity.start_ns;
  stream.busy.Add(activity.start_ns, activity.end_ns);
  device.categories.Add(category, activity.start_ns, activity.end_ns);
  if (device.busy.empty()) {
    device.stats.first_start_ns = activity.start_ns;
    device.busy.Add(activity.start_ns, activity.end_ns);
    return;
  }
  if (device.pending && activity.start_ns != device.pending->end) FinishHole(device);
  if (const auto closed = device.busy.Add(activity.start_ns, activity.end_ns)) {
    device.pending = Hole{closed->second, activity.start_ns, GapKind::kUnknown, false, 0, 0};
  }
  if (device.pending && launch &&
      (!device.pending->has_launch || launch->enter_ns < device.pending->launch_ns)) {
    device.pending->has_launch = true;
    device.pending->launch_ns = launch->enter_ns;
    device.pending->launch_tid = launch->tid;
  }
}

void DeviceSweep::FinishHole(DeviceState& device) {
  Hole hole = *device.pending;
  device.pending.reset();
  if (hole.has_launch) {
    hole.kind = hole.launch_ns >= hole.start ? GapKind::kHostBound : GapKind::kDependency;
  }
  const uint64_t ns = hole.end - hole.start;
  switch (hole.kind) {
    case GapKind::kHostBound:
      device.stats.host_bound_ns += ns;
      break;
    case GapKind::kDependency:
      device.stats.dependency_ns += ns;
      break;
    case GapKind::kUnknown:
      device.stats.unclassified_ns += ns;
      break;
  }
  ++device.stats.gaps;
  auto longer = [](const Hole& a, const Hole& b) {
    const uint64_t la = a.end - a.start;
    const uint64_t lb = b.end - b.start;
    return la != lb ? la > lb : a.start < b.start;
  };
  auto position = std::upper_bound(device.largest.begin(), device.largest.end(), hole, longer);
  if (static_cast<size_t>(position - device.largest.begin()) < kLargestGaps) {
    device.largest.insert(position, hole);
    if (device.largest.size() > kLargestGaps) device.largest.pop_back();
  }
}

std::vector<DeviceStats> DeviceSweep::Finish(uint64_t capture_end_ns,
                                             const HostRangeAt& host_range_at,
                                             const DeviceName& device_name) {
  std::vector<DeviceStats> result;
  for (auto& [device_id, state] : devices_) {
    if (state.busy.empty()) continue;  // only late activities: no span
    if (state.pending) FinishHole(state);
    DeviceStats device = std::move(state.stats);
    device.id = device_id;
    device.name = device_name(device_id);
    for (auto& [stream_id, stream] : state.streams) {
      stream.stats.busy_ns = stream.busy.Total();
      if (!stream.busy.empty()) {
        stream.stats.span_ns = stream.busy.current().second - stream.first_start_ns;
        stream.stats.idle_ns = stream.stats.span_ns - stream.stats.busy_ns;
      }
      device.streams.push_back(stream.stats);
    }
    device.categories = CategoryUnions::BusyOf(state.categories.Totals());
    device.busy_ns = state.busy.Total();
    device.last_end_ns = state.busy.current().second;
    device.span_ns = device.last_end_ns - device.first_start_ns;
    device.idle_ns = device.span_ns - device.busy_ns;
    device.tail_ns = capture_end_ns > device.last_end_ns ? capture_end_ns - device.last_end_ns : 0;
    for (const Hole& hole : state.largest) {
      Gap gap{hole.start, hole.end, hole.kind, std::nullopt, std::nullopt};
      if (hole.has_launch) {
        gap.launch_tid = hole.launch_tid;
        gap.host_range = host_range_at(hole.launch_tid, hole.start);
      }
      device.largest.push_back(std::move(gap));
    }
    result.push_back(std::move(device));
  }
  return result;
}

}  // namespace gpuattr::collector
