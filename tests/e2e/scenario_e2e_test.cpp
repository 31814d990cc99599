// End-to-end: each scenario of tests/scenarios runs on the simulated GPU under `gpuattr run`, and
// the report must agree with the simulator's ground truth exactly (integer nanoseconds) on
// counts, every pass path's self_ns and total_ns, and every device's span, busy and idle; the
// reconciliation invariant must hold and the report must validate against the schema.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cupti_client_check.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::CheckCuptiClientRecords;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;

void CheckScenario(const std::string& name) {
  TempDir dir;
  const auto [report, truth] = RunScenario(dir, GPUATTR_SCENARIO_DIR "/" + name + ".json");
  CheckAgainstTruth(report, truth);
}

TEST_CASE("nested ranges on one thread agree with the truth", "[e2e]") {
  CheckScenario("nested_ranges");
}

TEST_CASE("two overlapping streams agree with the truth", "[e2e]") {
  CheckScenario("two_streams_overlap");
}

TEST_CASE("several threads with their own ranges agree with the truth", "[e2e]") {
  CheckScenario("threads_own_ranges");
}

TEST_CASE("a kernel launched outside any range agrees with the truth", "[e2e]") {
  CheckScenario("launch_outside_range");
}

// A scenario with a second CUPTI client under `gpuattr run`, on CUDA 13.0's rules (one subscriber
// slot, which gpuattr holds: the client gets CUPTI through gpuattr's multiplexer, exactly what it
// would get alone, and no first subscriber is named) and on 13.3+'s (CUPTI lets the client in
// itself, naming gpuattr, which subscribed with allowMultipleSubscribers; the client's V1
// activity calls reach a V2 subscriber of its own through the bridge). gpuattr's report equals
// the truth either way.
void CheckScenarioWithCuptiClient(const std::string& scenario) {
  const std::string cupti_mode = GENERATE(as<std::string>{}, "", "multi_subscriber");
  INFO("SIMGPU_CUPTI_MODE=" << cupti_mode);
  TempDir dir;
  const auto [report, truth] = RunScenario(dir, scenario, {{"SIMGPU_CUPTI_MODE", cupti_mode}});
  CheckAgainstTruth(report, truth);
  CHECK(truth["processes"][0]["cupti_client"]["old_subscriber"] ==
        (cupti_mode.empty() ? "" : "gpuattr"));
  CheckCuptiClientRecords(truth["processes"][0]);
}

TEST_CASE(
    "a second CUPTI client started mid-run leaves gpuattr's report equal to the truth "
    "on CUDA 13.0 and 13.3+",
    "[e2e]") {
  CheckScenarioWithCuptiClient(GPUATTR_SCENARIO_DIR "/cupti_client_midrun.json");
}

TEST_CASE(
    "a second CUPTI client that finalizes CUPTI mid-run leaves gpuattr's report whole "
    "on CUDA 13.0 and 13.3+",
    "[e2e]") {
  // Every step, those after the client's cuptiFinalize included, equals the truth.
  CheckScenarioWithCuptiClient(GPUATTR_SCENARIO_DIR "/cupti_client_finalize.json");
}

TEST_CASE("a child forked without exec is its own process and leaves the parent intact", "[e2e]") {
  TempDir dir;
  const auto [report, truth] = RunScenario(dir, GPUATTR_SCENARIO_DIR "/fork_without_exec.json");
  REQUIRE(truth["processes"].size() == 2);
  const json& parent_truth = truth["processes"][0];
  const json& child_truth = truth["processes"][1];
  REQUIRE(report["processes"].size() == 2);

  // The parent agrees with its own truth exactly; the child's share of it is empty.
  json parent_only = truth;
  parent_only["processes"] = json::array({parent_truth});
  CheckAgainstTruth(report, parent_only);

  const json* child = FindProcess(report, child_truth["pid"].get<int64_t>());
  REQUIRE(child != nullptr);
  // CUDA is unusable in a forked child: it never initialises CUDA, and nothing is refused.
  CHECK((*child)["status"] == "host_only");
  CHECK((*child)["refusals"].empty());
  CHECK((*child)["loss"]["lost_span"].is_null());
  CHECK((*child)["loss"]["dropped_records"] == 0);
  // Its own session, on its own connection, closed in order at its exit: no hang, no stream
  // shared with the parent.
  CHECK((*child)["goodbye"] == true);
  CHECK((*child)["parent"] == json({{"pid", parent_truth["pid"]}, {"kind", "traced"}}));
  // simgpu-run's launcher is the parent's parent, not the child's.
  REQUIRE(report["launchers"].size() == 1);
  CHECK(report["launchers"][0]["children"] == json::array({parent_truth["pid"]}));
  // Only the child's own range, once: nothing the parent recorded before the fork is replayed.
  const auto passes = FlattenPasses(*child);
  REQUIRE(passes.size() == 1);
  REQUIRE(passes.count({"child_work"}) == 1);
  CHECK(passes.at({"child_work"})["instances"] == 1);
  CHECK(passes.at({"child_work"})["host_ns"]["total"].get<uint64_t>() >= 300000);
}

TEST_CASE("another CUPTI subscriber gets a typed refusal and the app runs on", "[e2e]") {
  TempDir dir;
  const auto [report, truth] = RunScenario(dir, GPUATTR_SCENARIO_DIR "/nested_ranges.json",
                                           {{"SIMGPU_CUPTI_MODE", "conflict:nsys"}});
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  REQUIRE(process["refusals"].size() >= 1);
  CHECK(process["refusals"][0]["code"] == "cupti_subscriber_conflict");
  CHECK_THAT(process["refusals"][0]["cause"].get<std::string>(), Catch::Contains("nsys"));
  CHECK(process["devices"].is_null());
  CHECK(FlattenPasses(process).count({"step", "forward", "layer1"}) == 1);
}

TEST_CASE("a malformed scenario fails clearly under gpuattr, without a crash", "[e2e]") {
  TempDir dir;
  const std::string scenario = dir.File("bad.json");
  std::ofstream(scenario)
      << R"({"processes": [{"threads": [{"name": "main", "ops": [{"lunch": "k"}]}]}]})";
  const ProcessResult run = RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", dir.File("r.json"),
                                        "--", SIMGPU_RUN, scenario, "--truth", dir.File("t.json")});
  CHECK(ExitStatus(run) == 2);
  CHECK_THAT(run.err, Catch::Contains("lunch"));
  CHECK(SchemaValid(dir.File("r.json")));
}

TEST_CASE("with the real libcupti and no driver, the report refuses device time", "[e2e]") {
  TempDir dir;
  const auto [report, truth] = RunScenario(dir, GPUATTR_SCENARIO_DIR "/nested_ranges.json",
                                           {{"GPUATTR_CUPTI_LIBRARY", REAL_CUPTI_LIBRARY}});
  REQUIRE(report["processes"].size() == truth["processes"].size());
  for (const auto& process : report["processes"]) {
    REQUIRE(process["refusals"].size() >= 1);
    CHECK(process["refusals"][0]["code"] == "cupti_unavailable");
    CHECK_FALSE(process["refusals"][0]["cause"].get<std::string>().empty());
    CHECK_FALSE(process["refusals"][0]["remedy"].get<std::string>().empty());
    CHECK(process["status"] == "refused");
    CHECK(process["devices"].is_null());
    CHECK(process["totals"]["kernel_ns"].is_null());
    // The NVTX host ranges are still reported, with their instance counts.
    std::map<std::vector<std::string>, uint64_t> truth_instances;
    for (const auto& range : truth["processes"][0]["ranges"]) {
      ++truth_instances[range["path"].get<std::vector<std::string>>()];
    }
    const auto passes = FlattenPasses(process);
    REQUIRE_FALSE(truth_instances.empty());
    for (const auto& [path, instances] : truth_instances) {
      INFO("pass " << json(path).dump());
      REQUIRE(passes.count(path) == 1);
      CHECK(passes.at(path)["instances"] == instances);
      CHECK(passes.at(path)["host_ns"]["total"].get<uint64_t>() > 0);
      CHECK(passes.at(path)["device"].is_null());
    }
  }
}

TEST_CASE("the app's stdout, stderr and exit status are the same with and without gpuattr",
          "[e2e]") {
  TempDir dir;
  const std::string scenario = GPUATTR_SCENARIO_DIR "/exit_status.json";
  const ProcessResult bare = RunProcess({SIMGPU_RUN, scenario, "--truth", dir.File("bare.json")});
  const ProcessResult traced =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", dir.File("report.json"), "--", SIMGPU_RUN,
                  scenario, "--truth", dir.File("traced.json")});
  CHECK(ExitStatus(bare) == 3);
  CHECK(ExitStatus(traced) == ExitStatus(bare));
  CHECK(traced.out == bare.out);
  CHECK(traced.err == bare.err);
  CHECK(SchemaValid(dir.File("report.json")));
}

TEST_CASE("gpuattr run works on programs that never touch CUDA", "[e2e]") {
  TempDir dir;
  SECTION("/bin/true") {
    const ProcessResult run =
        RunProcess({GPUATTR_BIN, "run", "-o", dir.File("true.json"), "--", "/bin/true"});
    CHECK(ExitStatus(run) == 0);
    CHECK(run.out.empty());
    CHECK(SchemaValid(dir.File("true.json")));
  }
  SECTION("python3 -c 'print(1)'") {
    const ProcessResult run = RunProcess(
        {GPUATTR_BIN, "run", "-o", dir.File("py.json"), "--", "python3", "-c", "print(1)"});
    CHECK(ExitStatus(run) == 0);
    CHECK(run.out == "1\n");
    CHECK(SchemaValid(dir.File("py.json")));
  }
}

}  // namespace
}  // namespace gpuattr::e2e
