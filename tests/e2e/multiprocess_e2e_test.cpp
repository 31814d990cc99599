// Multi-process `gpuattr run` end to end (issue 5; Python multiprocessing from issue 8): every
// descendant that loads the shim is its own process in the report, with its rank and its parent;
// the per-rank table (docs/attribution.md §Ranks) equals what the simulator's truth says; a
// launcher that never touches CUDA is only a parent; a rank killed mid-run is `truncated` with
// what arrived while the others stay exact; Python children started with fork and with spawn are
// traced, each once.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;

// Host times (range bounds) are read by the simulator and by the shim separately, so a thread
// descheduled between the two readings shifts one against the other (scenario_library_test.cpp
// saw 11.5 ms on a loaded 2-core machine). Step times are compared with the truth within this;
// device times exactly.
constexpr int64_t kHostSkewNs = 50'000'000;

struct Run {
  ProcessResult result;
  json report;
  json truth;
};

// `gpuattr run` (not quiet: the summary is on stderr) over simgpu-run and a scenario.
Run RunUnderGpuattr(const TempDir& dir, const std::string& scenario) {
  Run run;
  run.result = RunProcess({GPUATTR_BIN, "run", "-o", dir.File("report.json"), "--", SIMGPU_RUN,
                           GPUATTR_SCENARIO_DIR "/" + scenario, "--truth", dir.File("truth.json")});
  UNSCOPED_INFO("gpuattr stderr: " << run.result.err);
  REQUIRE_FALSE(run.result.timed_out);
  REQUIRE(SchemaValid(dir.File("report.json")));
  run.report = ReadJson(dir.File("report.json"));
  run.truth = ReadJson(dir.File("truth.json"));
  REQUIRE(run.report.is_object());
  REQUIRE(run.truth.is_object());
  return run;
}

// The lower median (an observed value), as steps.summary takes it.
uint64_t LowerMedian(std::vector<uint64_t> values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

// One row of the per-rank table derived from a truth process alone (§Ranks).
struct TruthRow {
  int64_t pid = 0;
  json rank;
  std::vector<uint64_t> step_ns;  // every closed top-level `step` range, host time
  uint64_t busy_ns = 0;           // summed over devices, interval unions
  uint64_t idle_ns = 0;
  json coverage;  // attributed kernel time / kernel time
};

TruthRow RowFromTruth(const json& process, const ExpectedProcess& expected) {
  TruthRow row;
  row.pid = process["pid"].get<int64_t>();
  row.rank = process["rank"];
  for (const json& range : process["ranges"]) {
    if (range["path"] == json::array({"step"}) && range["end_ns"].is_number()) {
      row.step_ns.push_back(range["end_ns"].get<uint64_t>() - range["start_ns"].get<uint64_t>());
    }
  }
  for (const auto& [id, device] : expected.devices) {
    row.busy_ns += device.busy_ns;
    row.idle_ns += device.idle_ns;
  }
  uint64_t attributed_kernel_ns = 0;
  for (const json& activity : process["activities"]) {
    if (activity["kind"] == "kernel" && activity["attribution"] != "none") {
      attributed_kernel_ns +=
          activity["end_ns"].get<uint64_t>() - activity["start_ns"].get<uint64_t>();
    }
  }
  row.coverage = expected.kernel_ns == 0 ? json(nullptr)
                                         : json(static_cast<double>(attributed_kernel_ns) /
                                                static_cast<double>(expected.kernel_ns));
  return row;
}

std::vector<TruthRow> RowsFromTruth(const json& truth) {
  const std::vector<ExpectedProcess> expected = ExpectFromTruth(truth);
  std::vector<TruthRow> rows;
  for (size_t i = 0; i < expected.size(); ++i) {
    rows.push_back(RowFromTruth(truth["processes"][i], expected[i]));
  }
  return rows;
}

const json* FindRow(const json& report, int64_t pid) {
  for (const json& row : report["summary"]["ranks"]) {
    if (row["pid"].get<int64_t>() == pid) return &row;
  }
  return nullptr;
}

// The report's row for `want` against the truth: device terms exactly, the step time exactly
// against the process's own step rows and within the host skew of the truth's median.
void CheckRow(const json& report, const TruthRow& want) {
  INFO("pid " << want.pid);
  const json* row = FindRow(report, want.pid);
  const json* process = FindProcess(report, want.pid);
  REQUIRE(row != nullptr);
  REQUIRE(process != nullptr);
  CHECK((*row)["rank"] == want.rank);
  CHECK((*row)["local_rank"] == (*process)["local_rank"]);
  CHECK((*row)["ppid"] == (*process)["ppid"]);
  CHECK((*row)["status"] == (*process)["status"]);
  CHECK((*row)["busy_ns"] == want.busy_ns);
  CHECK((*row)["idle_ns"] == want.idle_ns);
  CHECK((*row)["coverage"] == want.coverage);
  REQUIRE_FALSE(want.step_ns.empty());
  const json& step_rows = (*process)["steps"]["rows"];
  REQUIRE(step_rows.size() == want.step_ns.size());
  std::vector<uint64_t> reported;
  for (const json& step : step_rows) reported.push_back(step["host_ns"].get<uint64_t>());
  REQUIRE((*row)["step_ns"].is_number_integer());
  const uint64_t step_ns = (*row)["step_ns"].get<uint64_t>();
  CHECK(step_ns == LowerMedian(reported));
  CHECK(std::llabs(static_cast<int64_t>(step_ns) -
                   static_cast<int64_t>(LowerMedian(want.step_ns))) < kHostSkewNs);
}

// Which truth row has the largest (`slowest`) or smallest median step time.
const TruthRow& Extreme(const std::vector<TruthRow>& rows, bool slowest) {
  const TruthRow* best = &rows.front();
  for (const TruthRow& row : rows) {
    const uint64_t median = LowerMedian(row.step_ns);
    const uint64_t best_median = LowerMedian(best->step_ns);
    if (slowest ? median > best_median : median < best_median) best = &row;
  }
  return *best;
}

std::vector<int64_t> SortedPids(const json& truth) {
  std::vector<int64_t> pids;
  for (const json& process : truth["processes"]) pids.push_back(process["pid"].get<int64_t>());
  std::sort(pids.begin(), pids.end());
  return pids;
}

TEST_CASE("four ranks under a launcher: the per-rank table equals the truth", "[e2e]") {
  TempDir dir;
  const Run run = RunUnderGpuattr(dir, "four_ranks.json");
  REQUIRE(ExitStatus(run.result) == 0);
  const json& report = run.report;
  const json& truth = run.truth;
  REQUIRE(truth["processes"].size() == 4);
  CheckAgainstTruth(report, truth);

  // One process and one row per rank, by rank, each with its RANK and LOCAL_RANK.
  REQUIRE(report["processes"].size() == 4);
  const json& ranks = report["summary"]["ranks"];
  REQUIRE(ranks.size() == 4);
  for (size_t i = 0; i < ranks.size(); ++i) {
    CHECK(ranks[i]["rank"] == i);
    CHECK(ranks[i]["local_rank"] == i);
    CHECK(report["processes"][i]["rank"] == i);
    CHECK(report["processes"][i]["local_rank"] == i);
  }
  const std::vector<TruthRow> rows = RowsFromTruth(truth);
  for (const TruthRow& row : rows) CheckRow(report, row);
  CHECK(ranks[3]["coverage"].get<double>() < 1.0);  // the warm-up kernel outside every range

  // Slowest and fastest by median step time: the truth's, with the rows' step times.
  const json& summary = report["summary"];
  const TruthRow& slowest = Extreme(rows, /*slowest=*/true);
  const TruthRow& fastest = Extreme(rows, /*slowest=*/false);
  CHECK(slowest.rank == 2);
  CHECK(fastest.rank == 0);
  REQUIRE(summary["slowest"].is_object());
  REQUIRE(summary["fastest"].is_object());
  CHECK(summary["slowest"]["rank"] == slowest.rank);
  CHECK(summary["slowest"]["pid"] == slowest.pid);
  CHECK(summary["slowest"]["step_ns"] == (*FindRow(report, slowest.pid))["step_ns"]);
  CHECK(summary["fastest"]["rank"] == fastest.rank);
  CHECK(summary["fastest"]["pid"] == fastest.pid);
  CHECK(summary["fastest"]["step_ns"] == (*FindRow(report, fastest.pid))["step_ns"]);
  const auto slow_ns = summary["slowest"]["step_ns"].get<uint64_t>();
  const auto fast_ns = summary["fastest"]["step_ns"].get<uint64_t>();
  CHECK(summary["straggler_spread"] ==
        static_cast<double>(slow_ns - fast_ns) / static_cast<double>(fast_ns));
  // 160 ms against 10 ms of kernels per step: a spread of about 15.
  CHECK(summary["straggler_spread"].get<double>() > 3.0);

  // simgpu-run's parent never loaded CUDA nor called NVTX: it is a launcher, not a process.
  REQUIRE(report["launchers"].size() == 1);
  const json& launcher = report["launchers"][0];
  const int64_t launcher_pid = launcher["pid"].get<int64_t>();
  CHECK(launcher["exit_status"] == 0);
  CHECK(launcher["children"] == json(SortedPids(truth)));
  CHECK(FindProcess(report, launcher_pid) == nullptr);
  CHECK(FindRow(report, launcher_pid) == nullptr);
  for (const json& process : report["processes"]) {
    CHECK(process["ppid"] == launcher_pid);
    CHECK(process["parent"] == json({{"pid", launcher_pid}, {"kind", "launcher"}}));
    CHECK(process["totals"]["kernels"].get<uint64_t>() > 0);  // no empty rows
  }

  // The text summary's rank table.
  using Catch::Contains;
  CHECK_THAT(run.result.err,
             Contains("step time: slowest rank 2 (pid " + std::to_string(slowest.pid) + ")"));
  CHECK_THAT(run.result.err, Contains("fastest rank 0 (pid " + std::to_string(fastest.pid) + ")"));
  CHECK_THAT(run.result.err,
             Contains("launcher pid " + std::to_string(launcher_pid) + " (exit 0, not traced)"));
}

TEST_CASE("a rank killed mid-run is truncated with what arrived and the others stay exact",
          "[e2e]") {
  TempDir dir;
  const Run run = RunUnderGpuattr(dir, "rank_killed.json");
  CHECK(ExitStatus(run.result) == 0);  // simgpu-run passes on rank 0's status
  const json& report = run.report;
  const json& truth = run.truth;
  REQUIRE(truth["processes"].size() == 3);
  const json& killed_truth = truth["processes"][1];
  REQUIRE(killed_truth["exit_status"] == 128 + 9);

  json survivors = truth;
  survivors["processes"] = json::array({truth["processes"][0], truth["processes"][2]});
  CheckAgainstTruth(report, survivors);

  REQUIRE(report["processes"].size() == 3);
  const json* killed = FindProcess(report, killed_truth["pid"].get<int64_t>());
  REQUIRE(killed != nullptr);
  CHECK((*killed)["rank"] == 1);
  CHECK((*killed)["status"] == "truncated");
  CHECK((*killed)["goodbye"] == false);
  // simgpu-run, not gpuattr, reaped the rank, so the report cannot know how it ended.
  CHECK((*killed)["exit_status"].is_null());
  // Both steps were flushed during the 300 ms pause before the kill: all of them arrived.
  const ExpectedProcess expected =
      ExpectFromTruth(json{{"processes", json::array({killed_truth})}})[0];
  REQUIRE(expected.kernels == 6);
  CHECK((*killed)["totals"]["kernels"] == expected.kernels);
  CHECK((*killed)["totals"]["kernel_ns"] == expected.kernel_ns);
  CHECK((*killed)["coverage"]["attributed_fraction"] == 1.0);
  CHECK(FlattenPasses(*killed).at({"step"})["instances"] == 2);
  CheckReconciliation(*killed);

  const json& summary = report["summary"];
  CHECK(summary["statuses"]["complete"] == 2);
  CHECK(summary["statuses"]["truncated"] == 1);
  const json* killed_row = FindRow(report, killed_truth["pid"].get<int64_t>());
  REQUIRE(killed_row != nullptr);
  CHECK((*killed_row)["status"] == "truncated");
  for (const TruthRow& row : RowsFromTruth(truth)) CheckRow(report, row);
  REQUIRE(report["launchers"].size() == 1);
  CHECK(report["launchers"][0]["children"] == json(SortedPids(truth)));
}

// Python multiprocessing: tests/e2e/python_workers/multiprocessing_workers.py runs scenario
// processes 0-1 in 'fork' children, 2-3 in 'spawn' children and 4 in the parent.
TEST_CASE("python multiprocessing children started with fork and spawn are traced once each",
          "[e2e]") {
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--", GPUATTR_PYTHON,
                  PYTHON_WORKERS_SCRIPT, SIMGPU_PYWORK_LIBRARY,
                  GPUATTR_SCENARIO_DIR "/python_workers.json", dir.path()},
                 {{"GPUATTR_CUPTI_LIBRARY", FAKE_CUPTI_LIBRARY}}, /*timeout_s=*/60);
  INFO("gpuattr stderr: " << run.err);
  REQUIRE_FALSE(run.timed_out);  // no hang at exit, in any child
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  const json pids = ReadJson(dir.File("pids.json"));
  REQUIRE(pids.is_object());
  json truth = {{"processes", json::array()}};
  for (int i = 0; i < 5; ++i) {
    const json part = ReadJson(dir.File("p" + std::to_string(i) + ".json"));
    REQUIRE(part.is_object());
    truth["processes"].push_back(part["processes"][0]);
  }
  const int64_t parent_pid = pids["parent"].get<int64_t>();
  const std::vector<int64_t> children = {
      pids["fork"][0].get<int64_t>(), pids["fork"][1].get<int64_t>(),
      pids["spawn"][0].get<int64_t>(), pids["spawn"][1].get<int64_t>()};
  for (size_t i = 0; i < children.size(); ++i) {
    CHECK(truth["processes"][i]["pid"] == children[i]);
  }
  CHECK(truth["processes"][4]["pid"] == parent_pid);

  // Exactly the five processes that did traced work: the parent once, each child once, and
  // nothing for the interpreter's helpers (the spawn resource tracker) that never traced.
  REQUIRE(report["processes"].size() == 5);
  CHECK(report["launchers"].empty());
  const json* parent = FindProcess(report, parent_pid);
  REQUIRE(parent != nullptr);
  CHECK((*parent)["status"] == "complete");
  CHECK((*parent)["rank"].is_null());
  CHECK((*parent)["exit_status"] == 0);  // the command: gpuattr reaped it
  for (size_t i = 0; i < children.size(); ++i) {
    INFO("child " << children[i]);
    const json* child = FindProcess(report, children[i]);
    REQUIRE(child != nullptr);
    CHECK((*child)["rank"] == truth["processes"][i]["rank"]);
    CHECK((*child)["parent"] == json({{"pid", parent_pid}, {"kind", "traced"}}));
  }

  // multiprocessing ends a fork child with os._exit, which runs no atexit handler: the shim's
  // interposed _exit ends the child's session there, so its stream ends in order like the
  // spawn children's, and every process is exact.
  for (const int64_t child_pid : children) {
    INFO("child " << child_pid);
    const json& child = *FindProcess(report, child_pid);
    CHECK(child["status"] == "complete");
    CHECK(child["goodbye"] == true);
    CHECK(child["loss"]["lost_span"].is_null());
  }
  CheckAgainstTruth(report, truth);
}

// Issue 21: a short-lived fork worker that leaves through os._exit (or libc's _Exit), which run
// no exit handler. The preloaded shim interposes both and ends the child's session there, so the
// child is complete with all its ranges however short its life. (docs/benchmarks.md records 20
// runs of each.)
TEST_CASE("a fork child that leaves through _exit is in the report with its ranges", "[e2e]") {
  for (const char* exit_call : {"_exit", "_Exit"}) {
    for (const char* work_ms : {"10", "1"}) {
      for (int run_index = 0; run_index < 3; ++run_index) {
        INFO(exit_call << ", work " << work_ms << " ms, run " << run_index);
        TempDir dir;
        const std::string report_path = dir.File("r.json");
        const ProcessResult run =
            RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--", GPUATTR_PYTHON,
                        FORK_EXIT_CHILD_SCRIPT, NVTX_INTEROP_LIBRARY, work_ms, exit_call});
        INFO("stdout: " << run.out << "\nstderr: " << run.err);
        REQUIRE(ExitStatus(run) == 0);
        REQUIRE(SchemaValid(report_path));
        const json report = ReadJson(report_path);
        const json* child = FindProcess(report, std::stoll(run.out));
        REQUIRE(child != nullptr);
        CHECK((*child)["status"] == "host_only");
        CHECK((*child)["goodbye"] == true);
        CHECK((*child)["loss"]["lost_span"].is_null());
        CHECK((*child)["loss"]["dropped_records"] == 0);
        const auto ranges = FlattenPasses(*child);
        CHECK(ranges.size() == 5);
        for (int i = 0; i < 5; ++i) {
          INFO("child_range_" << i);
          const auto range = ranges.find({"child_range_" + std::to_string(i)});
          REQUIRE(range != ranges.end());
          CHECK(range->second["instances"] == 1);
        }
      }
    }
  }
}

// Issue 21: CPython's subprocess starts a child with vfork, and a child whose exec fails leaves
// through _exit while it shares the parent's memory. The interposed _exit must not end the
// parent's session from there: the parent stays complete with its ranges before and after, and
// the child, which recorded nothing, is not a process of the report.
TEST_CASE("a vfork child leaving through _exit leaves the parent's session alone", "[e2e]") {
  TempDir dir;
  const std::string report_path = dir.File("r.json");
  const ProcessResult run = RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--",
                                        GPUATTR_PYTHON, FAILED_EXEC_SCRIPT, NVTX_INTEROP_LIBRARY});
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  const json& parent = report["processes"][0];
  CHECK(parent["goodbye"] == true);
  CHECK(parent["loss"]["lost_span"].is_null());
  const auto ranges = FlattenPasses(parent);
  CHECK(ranges.count({"before_spawn"}) == 1);
  CHECK(ranges.count({"after_spawn"}) == 1);
}

// Issue 21: a script killed by an uncaught Ctrl-C inside a step. Its stream ends without Goodbye:
// truncated in the JSON and the text view, with the span it may have lost, and the interrupted
// step is no step row.
TEST_CASE("a script interrupted mid-step is truncated and its open step is no row", "[e2e]") {
  TempDir dir;
  const std::string report_path = dir.File("r.json");
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--", GPUATTR_PYTHON,
                  INTERRUPTED_STEPS_SCRIPT, NVTX_INTEROP_LIBRARY});
  INFO("stderr: " << run.err);
  CHECK(ExitStatus(run) == 128 + 2);  // the command's own status: killed by SIGINT
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  CHECK(process["status"] == "truncated");
  CHECK(process["goodbye"] == false);
  CHECK(process["loss"]["lost_span"]["ns"].is_number_unsigned());
  CHECK(report["summary"]["statuses"]["truncated"] == 1);
  REQUIRE(process["steps"].is_object());
  CHECK(process["steps"]["range"] == "step");
  CHECK(process["steps"]["instances"] == 3);
  CHECK(process["steps"]["unfinished"] == 1);
  CHECK(process["steps"]["rows"].size() == 3);
  const ProcessResult view = RunProcess({GPUATTR_BIN, "report", report_path});
  REQUIRE(ExitStatus(view) == 0);
  CHECK_THAT(view.out, Catch::Contains("status truncated"));
  CHECK_THAT(view.out, Catch::Contains("truncated: its stream ended without a Goodbye"));
  CHECK_THAT(view.out, Catch::Contains("processes 1: complete 0, truncated 1"));
}

}  // namespace
}  // namespace gpuattr::e2e
