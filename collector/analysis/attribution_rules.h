// AttributionRules: docs/attribution.md §Attribution, rules 1-4, for one released activity.
//
//   1 direct     the launching thread's innermost open range at ApiEnter (LaunchRecord::node);
//   2 inherited  the launching thread had none: the range open on the main thread at that
//                instant (off with --no-inherit);
//   3 captured   a CUDA-graph node: the range open where the node was created, followed back
//                through GraphNodeCloned links to the most original node with a known creation;
//                the graph launch's own rules-2-3 path is kept as the launch context;
//   4 none       unattributed, with its reason (no_open_range, launch_not_seen, or
//                launched_before_capture when its correlation id is below every launch seen).
// A graph node whose creation was never seen is attributed by rules 2-4 at its graph launch and
// counted as a fallback (graph_captured_before_window).
//
// Pure with respect to the trace: reads TraceData (graph nodes, histories, main thread) as it
// stands at the release, const. Single-threaded, on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_RULES_H_
#define GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_RULES_H_

#include "analysis/attributed_activity.h"
#include "analysis/thread_history.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class AttributionRules {
 public:
  // `data` must outlive this. `inherit`: rule 2 applies.
  AttributionRules(const TraceData& data, bool inherit);

  // The outcome of rules 1-4 for `activity`, launched by `launch` (null: never seen); its phase
  // is left for the phase fold.
  ActivityOutcome Attribute(const ActivityRecord& activity, const LaunchRecord* launch) const;

 private:
  struct Decision {
    uint32_t node = 0;  // 0: unattributed
    AttributionKind kind = AttributionKind::kNone;
    const char* reason = nullptr;
  };
  // Rules 1, 2 and 4 for a launch.
  Decision ForLaunch(const LaunchRecord& launch) const;
  Decision ForActivity(const ActivityRecord& activity, const LaunchRecord* launch,
                       ActivityOutcome& outcome) const;
  // launch_not_seen, or launched_before_capture below every launch's correlation id.
  const char* LaunchNotSeenReason(const ActivityRecord& activity) const;

  const TraceData& data_;
  bool inherit_;
  ThreadHistory history_;
};

// Follows GraphNodeCloned links from `graph_node_id` to the most original node with a known
// creation (the original's creation wins over a clone's own: CUPTI also fires CREATED for clones
// inside instantiate); null when no creation is known.
const GraphNodeInfo* GraphOrigin(const TraceData& data, uint64_t graph_node_id);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_RULES_H_
