// PhaseFold: device time by phase, other time, and coverage by reason and by the main thread's
// phase.
#include "analysis/phase_fold.h"

#include <catch2/catch.hpp>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

TEST_CASE("each attributed activity counts in its path's phase, unattributed by reason",
          "[unit][phase_fold]") {
  TraceFixture trace;
  trace.Range(1, {"step"}, 0, 10000);
  trace.Range(1, {"step", "backward"}, 1000, 5000);
  trace.Range(1, {"step", "backward", "forward"}, 2000, 3000);  // recompute
  PathNames paths(trace.data);
  paths.Refresh();
  PhaseRules::NameMasks masks;
  PhaseFold fold(trace.data, paths, PhaseRules::Default(), masks);
  auto fold_one = [&](const ActivityRecord& activity, const LaunchRecord* launch, uint32_t node,
                      const char* reason = nullptr, const char* fallback = nullptr) {
    ActivityOutcome outcome;
    outcome.node = node;
    outcome.kind = node ? AttributionKind::kDirect : AttributionKind::kNone;
    outcome.reason = reason;
    outcome.fallback = fallback;
    outcome.phase = fold.PhaseOf(node);
    fold.Fold({activity, launch, false, outcome});
  };
  const uint32_t backward = trace.Node({"step", "backward"});
  const uint32_t recompute = trace.Node({"step", "backward", "forward"});
  CHECK(fold.PhaseOf(backward) == Phase::kBackward);
  CHECK(fold.PhaseOf(recompute) == Phase::kRecompute);
  CHECK_FALSE(fold.PhaseOf(trace.Node({"step"})));
  CHECK_FALSE(fold.PhaseOf(0));

  fold_one(trace.Kernel(0, 100), nullptr, backward);
  fold_one(trace.Kernel(0, 30), nullptr, recompute, nullptr, kFallbackGraphBeforeWindow);
  fold_one(trace.Copy(0, 7), nullptr, backward);  // not a kernel: no coverage term
  fold_one(trace.Kernel(0, 11), nullptr, trace.Node({"step"}));
  const LaunchRecord in_backward = trace.Launch(1500, 2);
  fold_one(trace.Kernel(0, 50), &in_backward, 0, kReasonNoOpenRange);
  fold_one(trace.Kernel(0, 5), nullptr, 0, kReasonLaunchNotSeen);
  fold_one(trace.Copy(0, 60), nullptr, 0, kReasonLaunchNotSeen);

  ProcessAnalysis analysis;
  fold.Finish(analysis);
  const auto& ns = analysis.phases.ns;
  CHECK(ns[static_cast<size_t>(Phase::kBackward)] == 107);
  CHECK(ns[static_cast<size_t>(Phase::kRecompute)] == 30);
  CHECK(analysis.phases.other_ns == 11);
  CHECK(analysis.attributed_kernel_ns == 141);
  const auto& coverage = analysis.phase_coverage;
  CHECK(coverage.attributed_kernel_ns[static_cast<size_t>(Phase::kBackward)] == 100);
  CHECK(coverage.unattributed_kernel_ns[static_cast<size_t>(Phase::kBackward)] == 50);
  REQUIRE(analysis.unattributed.size() == 2);
  CHECK(analysis.unattributed[0].reason == kReasonLaunchNotSeen);  // 65 ns, largest first
  CHECK(analysis.unattributed[0].ns == 65);
  CHECK(analysis.unattributed[0].kernel_ns == 5);
  CHECK(analysis.unattributed[0].activities == 2);
  CHECK(analysis.unattributed[1].ns == 50);
  REQUIRE(analysis.fallbacks.size() == 1);
  CHECK(analysis.fallbacks[0].ns == 30);
}

}  // namespace
}  // namespace gpuattr::collector::testing
