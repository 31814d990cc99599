// StepFold: instances registered from pushes, per-row terms by launch time, the rows' share of
// the all-device busy union, the choice of the step range, --step and --skip-steps.
#include "analysis/step_fold.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

// Three `step > forward` instances on thread 1, [0, 1000), [1000, 2000), [2000, 3000), and one
// top-level `init` range.
struct ThreeSteps {
  ThreeSteps() {
    trace.Range(1, {"init"}, 0, 0);
    for (uint64_t i = 0; i < 3; ++i) {
      trace.Range(1, {"step"}, i * 1000, i * 1000 + 1000);
      trace.Range(1, {"step", "forward"}, i * 1000 + 100, i * 1000 + 500);
    }
    paths.Refresh();
  }

  // Folds an activity [start, end) launched at `launch_ns` on thread 1, attributed to `names`
  // (empty: unattributed) with `phase`.
  void Fold(StepFold& fold, uint64_t launch_ns, uint64_t start, uint64_t end,
            const std::vector<std::string>& names, std::optional<Phase> phase,
            WorkCategory category = WorkCategory::kCompute) {
    const LaunchRecord launch = trace.Launch(launch_ns, 1, names);
    ActivityOutcome outcome;
    outcome.node = names.empty() ? 0 : trace.Node(names);
    outcome.phase = phase;
    fold.Fold({trace.Kernel(start, end), &launch, false, outcome}, category);
  }

  TraceFixture trace;
  PathNames paths{trace.data};
};

TEST_CASE("a step row holds what was launched in it, from any thread, and its share of busy",
          "[unit][step_fold]") {
  ThreeSteps steps;
  StepFold fold(steps.trace.data, steps.paths, std::nullopt, 0);
  fold.RegisterInstances();
  CHECK(fold.registered() == 7);
  steps.Fold(fold, 150, 200, 600, {"step", "forward"}, Phase::kForward);
  steps.Fold(fold, 600, 700, 800, {"step"}, std::nullopt);
  steps.Fold(fold, 900, 900, 1100, {"step"}, std::nullopt);  // busy crosses into row 1
  steps.Fold(fold, 1500, 1600, 1700, {}, std::nullopt);      // unattributed, in row 1
  // Launched while the third step was open, by work whose path is not under it (another
  // thread's range): the row's all the same.
  steps.Fold(fold, 2100, 2200, 2300, {"init"}, std::nullopt);
  ProcessAnalysis analysis;
  fold.Finish(steps.trace.HostDurations(), analysis);
  REQUIRE(analysis.steps);
  const Steps& result = *analysis.steps;
  CHECK(result.range == "step");
  CHECK(result.detected);
  CHECK(result.instances == 3);
  REQUIRE(result.rows->size() == 3);
  const StepRow& first = (*result.rows)[0];
  CHECK(first.index == 0);
  CHECK(first.name == "step");
  CHECK(first.start_ns == 0);
  CHECK(first.end_ns == 1000);
  CHECK(first.phases.ns[static_cast<size_t>(Phase::kForward)] == 400);
  CHECK(first.phases.other_ns == 300);
  CHECK(first.busy_ns == 400 + 100 + 100);
  CHECK(first.gaps_ns() == 400);
  const StepRow& second = (*result.rows)[1];
  CHECK(second.unattributed_ns == 100);
  CHECK(second.busy_ns == 100 + 100);
  const StepRow& third = (*result.rows)[2];
  CHECK(third.busy_ns == 100);
  CHECK(third.phases.other_ns == 100);
  CHECK(analysis.steps_reason.empty());
}

TEST_CASE("a step row's category unions: compute, communication, memory, hidden and exposed",
          "[unit][step_fold]") {
  ThreeSteps steps;
  StepFold fold(steps.trace.data, steps.paths, std::nullopt, 0);
  fold.RegisterInstances();
  // Row 0: compute [200, 600), an all-reduce [500, 800) (100 under compute), a copy [850, 900).
  // Row 1: an all-reduce [1900, 2100) crossing into row 2, where compute [2000, 2050) hides 50.
  steps.Fold(fold, 150, 200, 600, {"step", "forward"}, Phase::kForward);
  steps.Fold(fold, 160, 500, 800, {"step"}, Phase::kCommunication, WorkCategory::kCommunication);
  steps.Fold(fold, 170, 850, 900, {"step"}, std::nullopt, WorkCategory::kMemory);
  steps.Fold(fold, 1800, 1900, 2100, {"step"}, Phase::kCommunication, WorkCategory::kCommunication);
  steps.Fold(fold, 1950, 2000, 2050, {"step"}, std::nullopt);
  ProcessAnalysis analysis;
  fold.Finish(steps.trace.HostDurations(), analysis);
  REQUIRE(analysis.steps);
  REQUIRE(analysis.steps->rows->size() == 3);
  const CategoryBusy& first = (*analysis.steps->rows)[0].categories;
  CHECK(first.compute_ns == 400);
  CHECK(first.communication_ns == 300);
  CHECK(first.memory_ns == 50);
  CHECK(first.communication_hidden_ns == 100);
  CHECK(first.communication_exposed_ns == 200);
  const CategoryBusy& second = (*analysis.steps->rows)[1].categories;
  CHECK(second.communication_ns == 100);
  CHECK(second.communication_exposed_ns == 100);
  const CategoryBusy& third = (*analysis.steps->rows)[2].categories;
  CHECK(third.compute_ns == 50);
  CHECK(third.communication_ns == 100);
  CHECK(third.communication_hidden_ns == 50);
  // The terms add up: hidden + exposed is the communication union, and busy is the union of
  // compute ∪ communication with memory here (nothing overlaps the copy).
  for (const StepRow& row : *analysis.steps->rows) {
    CHECK(row.categories.communication_hidden_ns + row.categories.communication_exposed_ns ==
          row.categories.communication_ns);
    CHECK(row.busy_ns == row.categories.compute_ns + row.categories.communication_exposed_ns +
                             row.categories.memory_ns);
  }
}

TEST_CASE("skipped steps drop the first rows, and an explicit step range may be nested",
          "[unit][step_fold]") {
  ThreeSteps steps;
  SECTION("skip") {
    StepFold fold(steps.trace.data, steps.paths, std::nullopt, 2);
    fold.RegisterInstances();
    ProcessAnalysis analysis;
    fold.Finish(steps.trace.HostDurations(), analysis);
    REQUIRE(analysis.steps);
    CHECK(analysis.steps->skipped == 2);
    REQUIRE(analysis.steps->rows->size() == 1);
    CHECK((*analysis.steps->rows)[0].index == 2);
  }
  SECTION("a nested range") {
    StepFold fold(steps.trace.data, steps.paths, std::string("forward"), 0);
    fold.RegisterInstances();
    steps.Fold(fold, 150, 200, 600, {"step", "forward"}, Phase::kForward);
    ProcessAnalysis analysis;
    fold.Finish(steps.trace.HostDurations(), analysis);
    REQUIRE(analysis.steps);
    CHECK_FALSE(analysis.steps->detected);
    REQUIRE(analysis.steps->rows->size() == 3);
    CHECK((*analysis.steps->rows)[0].start_ns == 100);
    CHECK((*analysis.steps->rows)[0].phases.ns[static_cast<size_t>(Phase::kForward)] == 400);
  }
  SECTION("a name never closed") {
    StepFold fold(steps.trace.data, steps.paths, std::string("nosuch"), 0);
    fold.RegisterInstances();
    ProcessAnalysis analysis;
    fold.Finish(steps.trace.HostDurations(), analysis);
    CHECK_FALSE(analysis.steps);
    CHECK(analysis.steps_reason == "no range named 'nosuch' was closed");
  }
}

TEST_CASE("auto-detection needs a top-level range with two instances and prefers step names",
          "[unit][step_fold]") {
  TraceFixture trace;
  for (uint64_t i = 0; i < 3; ++i) trace.Range(1, {"chunk"}, i * 10, i * 10 + 5);
  trace.Range(1, {"ProfilerStep#7"}, 100, 200);
  PathNames paths(trace.data);
  paths.Refresh();
  {
    StepFold fold(trace.data, paths, std::nullopt, 0);
    fold.RegisterInstances();
    ProcessAnalysis analysis;
    fold.Finish(trace.HostDurations(), analysis);
    REQUIRE(analysis.steps);
    CHECK(analysis.steps->range == "chunk");  // ProfilerStep#* has one instance only
  }
  trace.Range(1, {"ProfilerStep#8"}, 200, 300);
  StepFold fold(trace.data, paths, std::nullopt, 0);
  fold.RegisterInstances();
  ProcessAnalysis analysis;
  fold.Finish(trace.HostDurations(), analysis);
  REQUIRE(analysis.steps);
  CHECK(analysis.steps->range == "ProfilerStep#*");  // step-like beats more instances
  REQUIRE(analysis.steps->rows->size() == 2);
  CHECK((*analysis.steps->rows)[1].name == "ProfilerStep#8");

  TraceFixture lonely;
  lonely.Range(1, {"once"}, 0, 10);
  PathNames lonely_paths(lonely.data);
  StepFold none(lonely.data, lonely_paths, std::nullopt, 0);
  none.RegisterInstances();
  ProcessAnalysis empty;
  none.Finish({}, empty);
  CHECK_FALSE(empty.steps);
  CHECK(empty.steps_reason == "no top-level range has two or more instances");
}

TEST_CASE("ProfilerStep#N names share one step key", "[unit][step_fold]") {
  CHECK(StepRangeKey("ProfilerStep#12") == "ProfilerStep#*");
  CHECK(StepRangeKey("ProfilerStep#") == "ProfilerStep#");
  CHECK(StepRangeKey("train_step") == "train_step");
}

}  // namespace
}  // namespace gpuattr::collector::testing
