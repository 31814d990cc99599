// HostRangeFold: closed ranges' durations by node as they become available (and after the
// owner dropped folded ones), start/end spans and marks.
#include "analysis/host_range_fold.h"

#include <catch2/catch.hpp>
#include <vector>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

TEST_CASE("closed ranges fold once each, also after folded ones were dropped",
          "[unit][host_range_fold]") {
  TraceFixture trace;
  trace.Range(1, {"step"}, 0, 100);
  trace.Range(1, {"step"}, 200, 260);
  trace.data.host_ranges.push_back({5, 9, 1, 0});  // node 0 names no path: skipped
  HostRangeFold fold(trace.data);
  std::vector<uint64_t> seen;
  auto closed = [&](const HostRange& range) { seen.push_back(range.start_ns); };
  fold.FoldClosed(closed);
  CHECK(fold.folded() == 3);
  CHECK(seen == std::vector<uint64_t>{0, 200});
  // The owner drops what was folded; a later range still folds once.
  trace.data.host_ranges.clear();
  trace.data.host_ranges_dropped = 3;
  trace.data.host_ranges.push_back({300, 310, 1, trace.Node({"step"})});
  fold.FoldClosed(closed);
  fold.FoldClosed(nullptr);
  CHECK(fold.folded() == 4);
  CHECK(seen == std::vector<uint64_t>{0, 200, 300});
  const Samples<uint64_t>& step = fold.durations_by_node().at(trace.Node({"step"}));
  CHECK(step.count() == 3);
  CHECK(step.total() == 170);
  CHECK(fold.durations_by_node().size() == 1);
}

TEST_CASE("start/end ranges summarise by name and domain, marks count", "[unit][host_range_fold]") {
  TraceFixture trace;
  const uint32_t load = trace.Str("load");
  const uint32_t io = trace.Str("io");
  trace.data.spans = {{0, 10, 1, load, 0}, {20, 50, 2, load, 0}, {0, 5, 1, load, io}};
  trace.data.marks[{trace.Str("tick"), 0}] = 4;
  HostRangeFold fold(trace.data);
  ProcessAnalysis analysis;
  fold.FinishSpansAndMarks(analysis);
  REQUIRE(analysis.ranges.size() == 2);
  CHECK(analysis.ranges[0].name == "load");
  CHECK_FALSE(analysis.ranges[0].domain);
  CHECK(analysis.ranges[0].host.count == 2);
  CHECK(analysis.ranges[0].host.total == 40);
  CHECK(analysis.ranges[0].host.median == 10);
  CHECK(analysis.ranges[1].domain == "io");
  REQUIRE(analysis.marks.size() == 1);
  CHECK(analysis.marks[0].name == "tick");
  CHECK(analysis.marks[0].count == 4);
}

}  // namespace
}  // namespace gpuattr::collector::testing
