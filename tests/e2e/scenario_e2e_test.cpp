// End-to-end: each scenario of tests/scenarios runs on the simulated GPU under `gpuattr run`, and
// the report must agree with the simulator's ground truth exactly (integer nanoseconds) on
// counts, every pass path's self_ns and total_ns, and every device's span, busy and idle; the
// reconciliation invariant must hold and the report must validate against the schema.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

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

// Exit status as a shell reports it: the code, or 128 + the signal.
int ExitStatus(const ProcessResult& result) {
  return result.exited ? result.exit_code : 128 + result.signal;
}

const json* FindProcess(const json& report, int64_t pid) {
  for (const auto& process : report["processes"]) {
    if (process["pid"].get<int64_t>() == pid) return &process;
  }
  return nullptr;
}

bool SchemaValid(const std::string& report_path) {
  const test_support::SchemaCheck check = test_support::ValidateReport(report_path);
  if (!check.valid) UNSCOPED_INFO("schema: " << check.output);
  return check.valid;
}

// Runs `scenario` under gpuattr and returns {report, truth}.
std::pair<json, json> RunScenario(const TempDir& dir, const std::string& scenario,
                                  const std::map<std::string, std::string>& env = {}) {
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  const ProcessResult run = RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--",
                                         SIMGPU_RUN, scenario, "--truth", truth_path},
                                        env);
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(report.is_discarded());
  REQUIRE_FALSE(truth.is_discarded());
  return {report, truth};
}

void CheckAgainstTruth(const json& report, const json& truth) {
  const auto expected_processes = ExpectFromTruth(truth);
  REQUIRE_FALSE(expected_processes.empty());
  for (const ExpectedProcess& expected : expected_processes) {
    INFO("pid " << expected.pid);
    const json* process = FindProcess(report, expected.pid);
    REQUIRE(process != nullptr);
    CHECK((*process)["status"] == "complete");
    CHECK((*process)["loss"]["dropped_records"] == 0);
    CHECK((*process)["loss"]["orphan_activities"] == 0);

    const json& totals = (*process)["totals"];
    CHECK(totals["kernels"] == expected.kernels);
    CHECK(totals["kernel_ns"] == expected.kernel_ns);
    CHECK(totals["memcpy_ns"] == expected.memcpy_ns);
    CHECK(totals["memset_ns"] == expected.memset_ns);

    std::map<int64_t, const json*> devices;
    for (const auto& device : (*process)["devices"]) devices[device["id"]] = &device;
    REQUIRE(devices.size() == expected.devices.size());
    for (const auto& [id, device] : expected.devices) {
      INFO("device " << id);
      REQUIRE(devices.count(id) == 1);
      CHECK((*devices[id])["span_ns"] == device.span_ns);
      CHECK((*devices[id])["busy_ns"] == device.busy_ns);
      CHECK((*devices[id])["idle_ns"] == device.idle_ns);
    }

    const auto passes = FlattenPasses(*process);
    for (const auto& [path, pass] : expected.passes) {
      INFO("pass " << json(path).dump());
      REQUIRE(passes.count(path) == 1);
      const json& device = passes.at(path)["device"];
      CHECK(device["self_ns"] == pass.self_ns);
      CHECK(device["total_ns"] == pass.total_ns);
      for (const auto& [kind, ns] : pass.ns_by_attribution) {
        CHECK(passes.at(path)["attribution"][kind + "_ns"] == ns);
      }
    }
    // Passes with device time in the report must all be expected ones.
    for (const auto& [path, pass] : passes) {
      if (pass["device"]["total_ns"].get<uint64_t>() > 0) {
        INFO("unexpected pass " << json(path).dump());
        CHECK(expected.passes.count(path) == 1);
      }
    }

    // Reconciliation: root totals + unattributed == all device activity time.
    uint64_t roots = 0;
    for (const auto& root : (*process)["passes"]) roots += root["device"]["total_ns"].get<uint64_t>();
    uint64_t unattributed = 0;
    for (const auto& entry : (*process)["coverage"]["unattributed"]) {
      unattributed += entry["ns"].get<uint64_t>();
    }
    CHECK(unattributed == expected.unattributed_ns);
    CHECK(roots + unattributed ==
          expected.kernel_ns + expected.memcpy_ns + expected.memset_ns);
  }
}

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

TEST_CASE("a child forked without exec is its own process and leaves the parent intact",
          "[e2e]") {
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
  CHECK((*child)["status"] == "refused");  // CUDA is unusable in a forked child
  CHECK((*child)["refusals"][0]["code"] == "cuda_not_initialized");
  CHECK((*child)["loss"]["dropped_records"] == 0);
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
  std::ofstream(scenario) << R"({"processes": [{"threads": [{"name": "main", "ops": [{"lunch": "k"}]}]}]})";
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
