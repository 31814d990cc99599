#include "analysis/launch_join.h"

#include <algorithm>

namespace gpuattr::collector {

void LaunchJoin::Enter(const wire::ApiEnter& enter) {
  if (enter.kind == static_cast<uint8_t>(wire::ApiKind::kCapture)) return;  // no device work
  if (enter.correlation_id == 0) {
    ++counts_.zero_correlation_launches;
    return;
  }
  auto [it, inserted] = launches_.try_emplace(enter.correlation_id);
  if (!inserted) return;
  ++counts_.launches_seen;
  order_.emplace_back(enter.timestamp_ns, enter.correlation_id);
  if (counts_.first_correlation == 0 || enter.correlation_id < counts_.first_correlation) {
    counts_.first_correlation = enter.correlation_id;
  }
  counts_.last_correlation = std::max(counts_.last_correlation, enter.correlation_id);
  LaunchRecord& launch = it->second;
  launch.enter_ns = enter.timestamp_ns;
  launch.tid = enter.tid;
  launch.node = enter.node;
  launch.cbid = enter.cbid;
  launch.domain = enter.domain;
  launch.kind = enter.kind;
}

void LaunchJoin::Exit(const wire::ApiExit& exit) {
  auto it = launches_.find(exit.correlation_id);
  if (it == launches_.end()) {
    ++counts_.orphan_api_exits;
    return;
  }
  it->second.exit_ns = std::max(it->second.exit_ns, exit.timestamp_ns);
}

const LaunchRecord* LaunchJoin::Match(uint32_t correlation_id) {
  if (correlation_id == 0) return nullptr;
  auto it = launches_.find(correlation_id);
  if (it == launches_.end()) return nullptr;
  it->second.matched = true;
  return &it->second;
}

bool LaunchJoin::OutsideWindow(uint32_t correlation_id) const {
  if (correlation_id == 0) return false;
  return counts_.first_correlation == 0 || correlation_id < counts_.first_correlation ||
         correlation_id > counts_.last_correlation;
}

}  // namespace gpuattr::collector
