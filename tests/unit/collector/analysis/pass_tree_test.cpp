// PassTree: self and total time, busy unions, attribution kinds, launch contexts, device time by
// family, host durations and phases, on a tree folded by hand.
#include "analysis/pass_tree.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

using Path = std::vector<std::string>;

struct Folded {
  TraceFixture trace;
  PassTree tree{PhaseRules::Default()};
  PhaseRules::NameMasks masks;

  void Fold(const Path& path, const ActivityRecord& activity, AttributionKind kind,
            bool late = false, const std::string& family = "gemm",
            const std::optional<Path>& context = std::nullopt) {
    ActivityOutcome outcome;
    outcome.node = 1;  // any attributed node: the tree keys by pass and names
    outcome.kind = kind;
    const AttributedActivity attributed{activity, nullptr, late, outcome};
    tree.Fold(attributed, PassOf(path), path, family, context);
  }
  // One pass id per distinct path, as PathNames gives them.
  uint32_t PassOf(const Path& path) {
    return static_cast<uint32_t>(passes.try_emplace(path, passes.size() + 1).first->second);
  }
  std::map<Path, size_t> passes;
};

const PassNode& Child(const std::vector<PassNode>& nodes, const std::string& name) {
  for (const PassNode& node : nodes) {
    if (node.name == name) return node;
  }
  FAIL("no pass named " << name);
  return nodes.front();
}

TEST_CASE("a pass's total is its self time plus its children's, its busy time a union",
          "[unit][pass_tree]") {
  Folded folded;
  TraceFixture& trace = folded.trace;
  folded.Fold({"step"}, trace.Kernel(0, 100), AttributionKind::kDirect);
  folded.Fold({"step", "forward"}, trace.Kernel(100, 300), AttributionKind::kDirect);
  folded.Fold({"step", "forward"}, trace.Kernel(200, 400, "k", 1), AttributionKind::kInherited,
              false, "elementwise");
  folded.Fold({"step", "forward"}, trace.Copy(150, 160 + 440), AttributionKind::kInherited, true,
              "[memcpy]");  // late (it starts before what was released): in every sum, no union
  folded.Fold({"step", "backward"}, trace.Kernel(500, 900), AttributionKind::kDirect);

  const std::vector<PassNode> roots = folded.tree.Finish(folded.masks);
  REQUIRE(roots.size() == 1);
  const PassNode& step = roots[0];
  CHECK(step.path == Path{"step"});
  CHECK(step.self_ns == 100);
  CHECK(step.total_ns == 100 + 850 + 400);
  const PassNode& forward = Child(step.children, "forward");
  CHECK(forward.path == Path{"step", "forward"});
  CHECK(forward.self_ns == 400 + 450);
  CHECK(forward.busy_ns == 300);  // [100, 400): the late copy is not in the union
  CHECK(forward.kernels == 2);
  CHECK(forward.activities == 3);
  CHECK(forward.direct_ns == 200);
  CHECK(forward.inherited_ns == 650);
  CHECK(forward.phase == Phase::kForward);
  REQUIRE(forward.self_by_family.size() == 3);
  CHECK(forward.self_by_family[0] == std::pair<std::string, uint64_t>{"[memcpy]", 450});
  CHECK(forward.self_by_family[1] == std::pair<std::string, uint64_t>{"elementwise", 200});
  CHECK(forward.self_by_family[2] == std::pair<std::string, uint64_t>{"gemm", 200});
  // Children by total device time, largest first.
  REQUIRE(step.children.size() == 2);
  CHECK(step.children[0].name == "forward");
  CHECK(step.children[1].name == "backward");
  CHECK(step.children[1].phase == Phase::kBackward);
  CHECK_FALSE(step.host);  // never a host range here
}

TEST_CASE("captured device time is split by the path its graph was launched under",
          "[unit][pass_tree]") {
  Folded folded;
  TraceFixture& trace = folded.trace;
  folded.Fold({"capture"}, trace.Kernel(0, 10), AttributionKind::kCaptured, false, "gemm",
              Path{"replay", "a"});
  folded.Fold({"capture"}, trace.Kernel(10, 40), AttributionKind::kCaptured, false, "gemm", Path{});
  folded.Fold({"capture"}, trace.Kernel(40, 45), AttributionKind::kCaptured, false, "gemm",
              Path{"replay", "a"});
  folded.Fold({"capture"}, trace.Kernel(50, 51), AttributionKind::kCaptured, false, "gemm",
              std::nullopt);
  const std::vector<PassNode> roots = folded.tree.Finish(folded.masks);
  REQUIRE(roots.size() == 1);
  const PassNode& capture = roots[0];
  CHECK(capture.captured_ns == 46);
  REQUIRE(capture.launch_contexts.size() == 3);
  CHECK(capture.launch_contexts[0].path == Path{});  // 30 ns, largest first
  CHECK(capture.launch_contexts[0].ns == 30);
  CHECK(capture.launch_contexts[1].path == Path{"replay", "a"});
  CHECK(capture.launch_contexts[1].ns == 15);
  CHECK(capture.launch_contexts[1].activities == 2);
  CHECK_FALSE(capture.launch_contexts[2].path.has_value());  // launch never seen
}

TEST_CASE("host durations make instances and host statistics, merged by path",
          "[unit][pass_tree]") {
  Folded folded;
  Samples<uint64_t> first;
  first.Add(30);
  first.Add(10);
  Samples<uint64_t> second;
  second.Add(20);
  folded.tree.AddHostDurations(folded.PassOf({"loader"}), {"loader"}, first);
  // Another node of the same pass.
  folded.tree.AddHostDurations(folded.PassOf({"loader"}), {"loader"}, second);
  folded.tree.AddHostDurations(folded.PassOf({"step"}), {"step"}, second);
  folded.Fold({"step"}, folded.trace.Kernel(0, 5), AttributionKind::kDirect);
  const std::vector<PassNode> roots = folded.tree.Finish(folded.masks);
  REQUIRE(roots.size() == 2);
  CHECK(roots[0].name == "step");  // device time first; host-only passes after
  const PassNode& loader = roots[1];
  CHECK(loader.instances == 3);
  REQUIRE(loader.host);
  CHECK(loader.host->total == 60);
  CHECK(loader.host->min == 10);
  CHECK(loader.host->median == 20);
  CHECK(loader.host->max == 30);
  CHECK(loader.total_ns == 0);
  CHECK_FALSE(loader.phase);
}

}  // namespace
}  // namespace gpuattr::collector::testing
