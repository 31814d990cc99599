// Faults end to end (DESIGN §4, exemplars §9.6): the traced process comes first. A collector that
// dies or stalls must cost the app nothing but counted drops, and an app that dies must leave a
// `truncated` process in the report with whatever arrived before it died.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::MonotonicSeconds;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::Subprocess;
using test_support::TempDir;

constexpr size_t kLongRunKernels = 500 * 40;  // fault_long_run.json

std::vector<std::string> GpuattrRun(const TempDir& dir, const std::string& scenario) {
  return {GPUATTR_BIN,
          "run",
          "--quiet",
          "-o",
          dir.File("report.json"),
          "--",
          SIMGPU_RUN,
          GPUATTR_SCENARIO_DIR "/" + scenario,
          "--truth",
          dir.File("truth.json")};
}

// gpuattr's private socket directory goes under TMPDIR, so the test's TempDir removes it even when
// gpuattr is killed before it can clean up.
std::map<std::string, std::string> PrivateTmp(const TempDir& dir) {
  return {{"TMPDIR", dir.path()}};
}

TEST_CASE("an app that dies of SIGKILL or SIGSEGV leaves a truncated process with what arrived",
          "[e2e]") {
  // fault_crash.json ends with SIGKILL; the SIGSEGV run is the same scenario with its last op
  // changed (a crash: nothing is flushed at death either way).
  const auto [signal_name, signal_number] =
      GENERATE(std::pair<std::string, int>{"SIGKILL", SIGKILL},
               std::pair<std::string, int>{"SIGSEGV", SIGSEGV});
  INFO("signal " << signal_name);
  TempDir dir;
  json scenario = ReadJson(GPUATTR_SCENARIO_DIR "/fault_crash.json");
  json& last_op = scenario["processes"][0]["threads"][0]["ops"].back();
  REQUIRE(last_op.contains("crash"));
  last_op["crash"] = signal_name;
  std::ofstream(dir.File("crash.json")) << scenario.dump();
  const ProcessResult run = test_support::RunProcess(
      {GPUATTR_BIN, "run", "--quiet", "-o", dir.File("report.json"), "--", SIMGPU_RUN,
       dir.File("crash.json"), "--truth", dir.File("truth.json")});
  INFO("gpuattr stderr: " << run.err);
  CHECK(ExitStatus(run) == 128 + signal_number);  // the app's own fate, passed through
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  const json truth = ReadJson(dir.File("truth.json"));
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  CHECK(process["status"] == "truncated");
  // simgpu-run forked the victim and reaped it, so the victim's status is its launcher's to say
  // (docs/attribution.md §Ranks), passed on as 128 + the signal.
  REQUIRE(report["launchers"].size() == 1);
  CHECK(report["launchers"][0]["exit_status"] == 128 + signal_number);
  CHECK(report["launchers"][0]["children"] == json::array({process["pid"]}));
  // Both steps were flushed during the 300 ms pause before the crash: nothing that arrived is lost.
  REQUIRE(truth["processes"][0]["activities"].size() == 4);
  CHECK(process["totals"]["kernels"] == 4);
  CHECK(process["coverage"]["attributed_fraction"] == 1.0);
  CHECK(FlattenPasses(process).at({"step"})["instances"] == 2);
  CheckReconciliation(process);
}

TEST_CASE("a collector killed mid-run costs the app nothing and leaves no partial report",
          "[e2e]") {
  TempDir dir;
  Subprocess gpuattr(GpuattrRun(dir, "fault_long_run.json"), PrivateTmp(dir));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  REQUIRE(kill(gpuattr.pid(), SIGKILL) == 0);
  const ProcessResult killed = gpuattr.Wait(30);
  CHECK(killed.signal == SIGKILL);

  // The app runs on, orphaned, and writes its truth when it ends.
  const double deadline = MonotonicSeconds() + 30;
  json truth;
  while (MonotonicSeconds() < deadline) {
    truth = ReadJson(dir.File("truth.json"));
    if (truth.is_object()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(truth.is_object());
  CHECK(truth["processes"][0]["exit_status"] == 5);
  CHECK(truth["processes"][0]["activities"].size() == kLongRunKernels);
  // Reports are written whole or not at all; this one was never written.
  CHECK_FALSE(std::filesystem::exists(dir.File("report.json")));
}

TEST_CASE("a stalled collector means counted drops, not a stalled app", "[e2e]") {
  TempDir dir;
  Subprocess gpuattr(GpuattrRun(dir, "fault_long_run.json"), PrivateTmp(dir));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(kill(gpuattr.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  REQUIRE(kill(gpuattr.pid(), SIGCONT) == 0);
  const ProcessResult run = gpuattr.Wait(60);
  INFO("gpuattr stderr: " << run.err);
  CHECK(ExitStatus(run) == 5);
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  const json truth = ReadJson(dir.File("truth.json"));
  REQUIRE(truth["processes"][0]["activities"].size() == kLongRunKernels);

  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  CHECK(process["status"] == "complete");
  const json& loss = process["loss"];
  CHECK(loss["dropped_records"].get<uint64_t>() > 0);
  CHECK(loss["socket_dropped_records"].get<uint64_t>() > 0);
  // The loss shows: kernels that never arrived, or kernels whose launch never arrived.
  const uint64_t kernels = process["totals"]["kernels"].get<uint64_t>();
  CHECK(kernels <= kLongRunKernels);
  CHECK((kernels < kLongRunKernels || process["coverage"]["attributed_fraction"] < 1.0));
  CheckReconciliation(process);
}

}  // namespace
}  // namespace gpuattr::e2e
