// What the attribution decided for one released device activity, and the bundle every fold unit
// receives for it (activity_folder.h).
//
// ActivityFolder attributes each activity once (attribution_rules.h, rules 1-4 of
// docs/attribution.md §Attribution), gives the outcome its phase (phase_fold.h), and hands the
// same AttributedActivity to each fold and to the observers. The references live for the call.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTED_ACTIVITY_H_
#define GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTED_ACTIVITY_H_

#include <cstdint>
#include <optional>

#include "analysis/phase.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

enum class AttributionKind : uint8_t { kNone, kDirect, kInherited, kCaptured };

// The exports' spelling: "none", "direct", "inherited", "captured".
const char* AttributionKindName(AttributionKind kind);

// Unattributed reasons (DESIGN §2).
inline constexpr const char* kReasonNoOpenRange = "no_open_range";
inline constexpr const char* kReasonLaunchNotSeen = "launch_not_seen";
// Launch not seen, and its correlation id is below every launch the process reported: launched
// before the capture began (a trace whose device side starts before its CPU side).
inline constexpr const char* kReasonLaunchedBeforeCapture = "launched_before_capture";
// Fallbacks (coverage.fallbacks): a graph node whose creation was never seen (captured before
// the capture window, or its records were lost) is attributed by rules 2-3 at its graph launch.
inline constexpr const char* kFallbackGraphBeforeWindow = "graph_captured_before_window";
// The same in a window of a process gpuattr attach loaded the shim into: the graph was built
// before the shim was there at all.
inline constexpr const char* kFallbackGraphBeforeAttach = "graph_captured_before_attach";

// Activities without timestamps are never attributed: they are not device time.
struct ActivityOutcome {
  uint32_t node = 0;             // attributed path node; 0: unattributed
  uint32_t launch_node = 0;      // graph nodes: path node by rules 2-3 at the graph launch; 0: none
  const char* reason = nullptr;  // unattributed reason (a kReason* constant)
  const char* fallback = nullptr;  // a kFallback* constant when a fallback rule was applied
  AttributionKind kind = AttributionKind::kNone;
  std::optional<Phase> phase;  // of the attributed path (docs/attribution.md §Phases)
};

// One activity with timestamps leaving the reorder window, joined and attributed.
struct AttributedActivity {
  const ActivityRecord& activity;
  const LaunchRecord* launch;  // null: the launch was never seen
  // It starts before an activity already released: counted in every sum but in no union.
  bool late;
  const ActivityOutcome& outcome;

  uint64_t ns() const { return activity.duration_ns(); }
  bool kernel() const { return activity.kind == ActivityKind::kKernel; }
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTED_ACTIVITY_H_
