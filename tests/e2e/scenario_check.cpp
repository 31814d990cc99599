#include "scenario_check.h"

#include <catch2/catch.hpp>

#include "subprocess.h"
#include "truth_compare.h"

namespace gpuattr::e2e {

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

std::pair<json, json> RunScenario(const TempDir& dir, const std::string& scenario,
                                  const std::map<std::string, std::string>& env) {
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  // A test may run several scenarios in one directory: each run replaces the last report.
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "--force-overwrite", "-o", report_path, "--",
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

    CHECK(UnattributedNs(*process) == expected.unattributed_ns);
    CheckReconciliation(*process);
  }
}

uint64_t UnattributedNs(const json& process) {
  uint64_t unattributed = 0;
  for (const auto& entry : process["coverage"]["unattributed"]) {
    unattributed += entry["ns"].get<uint64_t>();
  }
  return unattributed;
}

void CheckReconciliation(const json& process) {
  uint64_t roots = 0;
  for (const auto& root : process["passes"]) roots += root["device"]["total_ns"].get<uint64_t>();
  const json& totals = process["totals"];
  CHECK(roots + UnattributedNs(process) == totals["kernel_ns"].get<uint64_t>() +
                                               totals["memcpy_ns"].get<uint64_t>() +
                                               totals["memset_ns"].get<uint64_t>());
}

}  // namespace gpuattr::e2e
