#include "analysis/attribution_rules.h"

#include <optional>

namespace gpuattr::collector {

const GraphNodeInfo* GraphOrigin(const TraceData& data, uint64_t graph_node_id) {
  constexpr int kMaxHops = 64;
  const GraphNodeInfo* best = nullptr;
  uint64_t id = graph_node_id;
  for (int hop = 0; hop < kMaxHops && id != 0; ++hop) {
    auto it = data.graph_nodes.find(id);
    if (it == data.graph_nodes.end()) break;
    if (it->second.created) best = &it->second;
    id = it->second.original_node;
  }
  return best;
}

AttributionRules::AttributionRules(const TraceData& data, bool inherit)
    : data_(data), inherit_(inherit), history_(data) {}

ActivityOutcome AttributionRules::Attribute(const ActivityRecord& activity,
                                            const LaunchRecord* launch) const {
  ActivityOutcome outcome;
  const Decision decision = ForActivity(activity, launch, outcome);
  outcome.node = decision.node;
  outcome.kind = decision.kind;
  outcome.reason = decision.reason;
  return outcome;
}

AttributionRules::Decision AttributionRules::ForLaunch(const LaunchRecord& launch) const {
  if (launch.node != 0) return {launch.node, AttributionKind::kDirect, nullptr};
  if (inherit_ && data_.main_tid) {
    const uint32_t node = history_.InnermostAt(*data_.main_tid, launch.enter_ns);
    if (node != 0) return {node, AttributionKind::kInherited, nullptr};
  }
  return {0, AttributionKind::kNone, kReasonNoOpenRange};
}

AttributionRules::Decision AttributionRules::ForActivity(const ActivityRecord& activity,
                                                         const LaunchRecord* launch,
                                                         ActivityOutcome& outcome) const {
  if (activity.graph_node_id == 0) {
    if (launch == nullptr) return {0, AttributionKind::kNone, LaunchNotSeenReason(activity)};
    return ForLaunch(*launch);
  }
  std::optional<Decision> at_launch;
  if (launch) {
    at_launch = ForLaunch(*launch);
    outcome.launch_node = at_launch->node;
  }
  const GraphNodeInfo* origin = GraphOrigin(data_, activity.graph_node_id);
  if (origin == nullptr) {
    // Its creation was never seen (captured before the window): rules 2-4 at the graph launch.
    if (!at_launch) return {0, AttributionKind::kNone, LaunchNotSeenReason(activity)};
    outcome.fallback = (data_.window_begin_flags & wire::kWindowBeginFlagLateAttach) != 0
                           ? kFallbackGraphBeforeAttach
                           : kFallbackGraphBeforeWindow;
    return *at_launch;
  }
  if (origin->path_node != 0) return {origin->path_node, AttributionKind::kCaptured, nullptr};
  // Captured with no range open: rules 2-4 with the graph launch as the launch.
  if (at_launch) return *at_launch;
  return {0, AttributionKind::kNone, LaunchNotSeenReason(activity)};
}

const char* AttributionRules::LaunchNotSeenReason(const ActivityRecord& activity) const {
  const bool before_capture = data_.min_launch_correlation != 0 && activity.correlation_id != 0 &&
                              activity.correlation_id < data_.min_launch_correlation;
  return before_capture ? kReasonLaunchedBeforeCapture : kReasonLaunchNotSeen;
}

const char* AttributionKindName(AttributionKind kind) {
  switch (kind) {
    case AttributionKind::kNone:
      return "none";
    case AttributionKind::kDirect:
      return "direct";
    case AttributionKind::kInherited:
      return "inherited";
    case AttributionKind::kCaptured:
      return "captured";
  }
  return "none";
}

}  // namespace gpuattr::collector
