// AttributionRules: docs/attribution.md §Attribution rules 1-4 on hand-built traces.
#include "analysis/attribution_rules.h"

#include <catch2/catch.hpp>
#include <string>

#include "analysis/thread_history.h"
#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

// A reason or fallback as text ("" for none): the constants' addresses may differ between
// translation units, their text does not.
std::string Text(const char* reason) { return reason ? reason : ""; }

TEST_CASE("a launch inside a range on its own thread is direct", "[unit][attribution_rules]") {
  TraceFixture trace;
  trace.Range(1, {"step"}, 0, 1000);
  const LaunchRecord launch = trace.Launch(100, 1, {"step"});
  const ActivityOutcome outcome =
      AttributionRules(trace.data, true).Attribute(trace.Kernel(200, 300), &launch);
  CHECK(outcome.kind == AttributionKind::kDirect);
  CHECK(outcome.node == trace.Node({"step"}));
  CHECK(Text(outcome.reason).empty());
  CHECK(Text(outcome.fallback).empty());
}

TEST_CASE("a launch from a thread without ranges inherits the main thread's innermost range",
          "[unit][attribution_rules]") {
  TraceFixture trace;
  trace.Range(1, {"step"}, 0, 1000);
  trace.Range(1, {"step", "backward"}, 100, 500);
  const LaunchRecord during = trace.Launch(200, 2);  // autograd thread, no range
  const LaunchRecord after = trace.Launch(600, 2);
  const LaunchRecord outside = trace.Launch(2000, 2);
  const AttributionRules rules(trace.data, true);
  const ActivityOutcome inside = rules.Attribute(trace.Kernel(300, 400), &during);
  CHECK(inside.kind == AttributionKind::kInherited);
  CHECK(inside.node == trace.Node({"step", "backward"}));
  CHECK(rules.Attribute(trace.Kernel(700, 800), &after).node == trace.Node({"step"}));
  const ActivityOutcome none = rules.Attribute(trace.Kernel(2100, 2200), &outside);
  CHECK(none.kind == AttributionKind::kNone);
  CHECK(Text(none.reason) == kReasonNoOpenRange);

  const ActivityOutcome off =
      AttributionRules(trace.data, false).Attribute(trace.Kernel(300, 400), &during);
  CHECK(off.node == 0);
  CHECK(Text(off.reason) == kReasonNoOpenRange);
}

TEST_CASE("an activity whose launch was never seen is launch_not_seen",
          "[unit][attribution_rules]") {
  TraceFixture trace;
  const ActivityOutcome outcome =
      AttributionRules(trace.data, true).Attribute(trace.Kernel(1, 2), nullptr);
  CHECK(outcome.node == 0);
  CHECK(Text(outcome.reason) == kReasonLaunchNotSeen);
}

TEST_CASE("work without a launch below every launch's correlation id was launched before capture",
          "[unit][attribution_rules]") {
  TraceFixture trace;
  trace.data.min_launch_correlation = 100;  // the first launch the process reported
  const AttributionRules rules(trace.data, true);
  ActivityRecord early = trace.Kernel(1, 2);
  early.correlation_id = 42;
  CHECK(Text(rules.Attribute(early, nullptr).reason) == kReasonLaunchedBeforeCapture);
  ActivityRecord lost = trace.Kernel(3, 4);  // inside the capture: its launch was lost
  lost.correlation_id = 150;
  CHECK(Text(rules.Attribute(lost, nullptr).reason) == kReasonLaunchNotSeen);
  ActivityRecord unknown = trace.Kernel(5, 6);  // no correlation id at all
  CHECK(Text(rules.Attribute(unknown, nullptr).reason) == kReasonLaunchNotSeen);
  trace.data.min_launch_correlation = 0;  // no launch seen: nothing to be before
  CHECK(Text(rules.Attribute(early, nullptr).reason) == kReasonLaunchNotSeen);
}

TEST_CASE("a graph kernel is attributed where its node was created, through clones",
          "[unit][attribution_rules]") {
  TraceFixture trace;
  trace.Range(1, {"capture"}, 0, 100);
  trace.Range(1, {"replay"}, 200, 1000);
  const uint32_t capture = trace.Node({"capture"});
  trace.data.graph_nodes[7] = {true, capture, 1, 0};
  trace.data.graph_nodes[70] = {true, 0, 1, 7};  // a clone, created again inside instantiate
  const LaunchRecord launch = trace.Launch(300, 1, {"replay"});
  ActivityRecord kernel = trace.Kernel(400, 500);
  kernel.graph_node_id = 70;
  const AttributionRules rules(trace.data, true);
  const ActivityOutcome outcome = rules.Attribute(kernel, &launch);
  CHECK(outcome.kind == AttributionKind::kCaptured);
  CHECK(outcome.node == capture);
  CHECK(outcome.launch_node == trace.Node({"replay"}));
  CHECK(GraphOrigin(trace.data, 70) == &trace.data.graph_nodes.at(7));

  SECTION("its creation never seen: attributed at its graph launch, as a fallback") {
    kernel.graph_node_id = 99;
    const ActivityOutcome fallback = rules.Attribute(kernel, &launch);
    CHECK(fallback.kind == AttributionKind::kDirect);
    CHECK(fallback.node == trace.Node({"replay"}));
    CHECK(Text(fallback.fallback) == kFallbackGraphBeforeWindow);
    CHECK(Text(rules.Attribute(kernel, nullptr).reason) == kReasonLaunchNotSeen);
  }
  SECTION("captured with no range open: the graph launch's rules") {
    trace.data.graph_nodes[7].path_node = 0;
    const ActivityOutcome at_launch = rules.Attribute(kernel, &launch);
    CHECK(at_launch.kind == AttributionKind::kDirect);
    CHECK(Text(at_launch.fallback).empty());
    CHECK(Text(rules.Attribute(kernel, nullptr).reason) == kReasonLaunchNotSeen);
  }
}

TEST_CASE("the innermost open range walks up past closed siblings", "[unit][attribution_rules]") {
  TraceFixture trace;
  trace.Range(1, {"a"}, 0, 100);
  trace.Range(1, {"a", "b"}, 10, 20);
  trace.Range(1, {"a", "c"}, 30, 40);
  const ThreadHistory history(trace.data);
  CHECK(history.InnermostAt(1, 35) == trace.Node({"a", "c"}));
  CHECK(history.InnermostAt(1, 50) == trace.Node({"a"}));  // c closed at 40: its parent
  CHECK(history.InnermostAt(1, 20) == trace.Node({"a"}));  // [start, end): b ended at 20
  CHECK(history.InnermostAt(1, 100) == 0);
  CHECK(history.InnermostAt(2, 35) == 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
