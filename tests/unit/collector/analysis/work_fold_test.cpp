// WorkFold: the FLOP counter's value marks to counts, the op ledger (counted, free, unknown: each
// op in exactly one), FLOPs by dtype, what ran with no range open, the counter's own marks, and
// value marks of other domains kept as plain marks. And StepFold::FoldWork: a count goes to the
// step open when it was sent, whichever thread sent it.
#include "analysis/work_fold.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "analysis/step_fold.h"
#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

struct Marks {
  // A value mark in `domain` with `message`, on `names`' node (empty: no range open).
  wire::ValueMark Mark(const std::string& domain, const std::string& message, uint64_t value,
                       const std::vector<std::string>& names = {"step", "forward"},
                       uint64_t timestamp_ns = 100) {
    return {timestamp_ns,
            1,
            trace.Str(message),
            trace.Str(domain),
            names.empty() ? 0 : trace.Node(names),
            value};
  }
  TraceFixture trace;
  PathNames paths{trace.data};
};

TEST_CASE("a counted op adds its FLOPs and bytes, free and unknown ops are calls in the ledger",
          "[unit][work_fold]") {
  Marks marks;
  WorkFold fold(marks.trace.data, marks.paths);
  const auto flops = fold.Fold(marks.Mark(kFlopsDomain, "aten::mm float32", 4096));
  const auto bytes = fold.Fold(marks.Mark(kBytesDomain, "aten::mm float32", 1536));
  fold.Fold(marks.Mark(kFlopsDomain, "aten::mm float32", 4096));
  fold.Fold(marks.Mark(kBytesDomain, "aten::mm float32", 1536));
  fold.Fold(marks.Mark(kFlopsDomain, "aten::add bfloat16", 64, {}));  // no range open
  fold.Fold(marks.Mark(kBytesDomain, "aten::add bfloat16", 384, {}));
  const auto free = fold.Fold(marks.Mark(kOpsDomain, "free aten::view", 1));
  const auto unknown = fold.Fold(marks.Mark(kOpsDomain, "unknown aten::special_op", 1));
  fold.Fold(marks.Mark(kOpsDomain, "unknown aten::special_op", 1));
  REQUIRE(flops);
  CHECK(flops->flops == 4096);
  CHECK(flops->bytes_estimate == 0);
  REQUIRE(bytes);
  CHECK(bytes->bytes_estimate == 1536);
  REQUIRE(free);
  CHECK((free->flops == 0 && free->bytes_estimate == 0 && free->unknown_ops == 0));
  REQUIRE(unknown);
  CHECK(unknown->unknown_ops == 1);

  marks.trace.data.marks[{marks.trace.Str("gpuattr.flops: counting (rules: x.json)"), 0}] = 1;
  ProcessAnalysis analysis;
  fold.Finish(analysis);
  REQUIRE(analysis.work);
  const WorkAnalysis& work = *analysis.work;
  CHECK(work.counter == "counting (rules: x.json)");
  CHECK_FALSE(work.off);
  CHECK(work.total.flops == 2 * 4096 + 64);
  CHECK(work.total.bytes_estimate == 2 * 1536 + 384);
  CHECK(work.total.unknown_ops == 2);
  CHECK(work.unattributed.flops == 64);
  CHECK(work.unattributed.bytes_estimate == 384);
  REQUIRE(work.counted.size() == 2);
  CHECK(work.counted[0].op == "aten::mm");  // most FLOPs first
  CHECK(work.counted[0].calls == 2);
  CHECK(work.counted[0].flops == 8192);
  CHECK(work.counted[0].bytes_estimate == 3072);
  CHECK(work.counted[1].op == "aten::add");
  REQUIRE(work.free.size() == 1);
  CHECK(work.free[0].op == "aten::view");
  CHECK(work.free[0].calls == 1);
  REQUIRE(work.unknown.size() == 1);
  CHECK(work.unknown[0].op == "aten::special_op");
  CHECK(work.unknown[0].calls == 2);
  REQUIRE(work.flops_by_dtype.size() == 2);
  CHECK(work.flops_by_dtype[0] == std::pair<std::string, uint64_t>("float32", 8192));
  CHECK(work.flops_by_dtype[1] == std::pair<std::string, uint64_t>("bfloat16", 64));
}

TEST_CASE("value marks of other domains are plain marks, and a counter that cannot count says why",
          "[unit][work_fold]") {
  Marks marks;
  WorkFold fold(marks.trace.data, marks.paths);
  CHECK_FALSE(fold.Fold(marks.Mark("app", "tokens", 512)));
  CHECK_FALSE(fold.Fold(marks.Mark("app", "tokens", 512)));
  marks.trace.data.marks[{marks.trace.Str("tokens"), marks.trace.Str("app")}] = 1;
  marks.trace.data.marks[{marks.trace.Str("gpuattr.flops: off: no dispatch modes"), 0}] = 1;
  ProcessAnalysis analysis;
  analysis.marks.push_back({"tokens", std::string("app"), 1});  // the host-range fold's
  fold.Finish(analysis);
  REQUIRE(analysis.work);
  CHECK(analysis.work->off == "no dispatch modes");
  CHECK_FALSE(analysis.work->counter);
  REQUIRE(analysis.marks.size() == 1);
  CHECK(analysis.marks[0].count == 3);
}

TEST_CASE("without the counter's marks there is no work, and malformed messages count nowhere",
          "[unit][work_fold]") {
  Marks marks;
  WorkFold fold(marks.trace.data, marks.paths);
  ProcessAnalysis nothing;
  fold.Finish(nothing);
  CHECK_FALSE(nothing.work);

  WorkFold malformed(marks.trace.data, marks.paths);
  const auto counts = malformed.Fold(marks.Mark(kFlopsDomain, "no-dtype", 7));
  REQUIRE(counts);
  CHECK(counts->flops == 0);
  malformed.Fold(marks.Mark(kOpsDomain, "neither aten::x", 1));
  ProcessAnalysis analysis;
  malformed.Finish(analysis);
  REQUIRE(analysis.work);
  CHECK(analysis.work->total.flops == 0);
  CHECK(analysis.work->counted.empty());
  CHECK(analysis.work->unknown.empty());
}

TEST_CASE("a count goes to the step open when it was sent, from any thread", "[unit][step_fold]") {
  TraceFixture trace;
  for (uint64_t i = 0; i < 2; ++i) trace.Range(1, {"step"}, i * 1000, i * 1000 + 1000);
  PathNames paths(trace.data);
  StepFold fold(trace.data, paths, std::nullopt, 0);
  fold.RegisterInstances();
  fold.FoldWork(100, {300, 30, 0});
  fold.FoldWork(1500, {50, 5, 1});  // another thread's, while step 1 was open
  fold.FoldWork(1600, {50, 5, 0});
  fold.FoldWork(5000, {7, 7, 7});  // after the last step: in none
  ProcessAnalysis analysis;
  fold.Finish(trace.HostDurations(), analysis);
  REQUIRE(analysis.steps);
  const std::vector<StepRow>& rows = *analysis.steps->rows;
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].work.flops == 300);
  CHECK(rows[0].work.bytes_estimate == 30);
  CHECK(rows[1].work.flops == 100);
  CHECK(rows[1].work.bytes_estimate == 10);
  CHECK(rows[1].work.unknown_ops == 1);
}

}  // namespace
}  // namespace gpuattr::collector::testing
