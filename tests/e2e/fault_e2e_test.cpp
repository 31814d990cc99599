// Faults end to end (DESIGN §4, exemplars §9.6): the traced process comes first. A collector that
// dies must cost the app nothing but counted drops; one that stalls costs nothing while the shim
// can hold the backlog, and at the app's exit no more than the shim's exit budgets; an app that
// dies must leave a `truncated` process in the report with whatever arrived before it died.
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

// `gpuattr run` of simgpu-run on the scenario file at `scenario_path`.
std::vector<std::string> GpuattrRun(const TempDir& dir, const std::string& scenario_path) {
  return {GPUATTR_BIN, "run",      "--quiet",     "-o",      dir.File("report.json"),
          "--",        SIMGPU_RUN, scenario_path, "--truth", dir.File("truth.json")};
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
  Subprocess gpuattr(GpuattrRun(dir, GPUATTR_SCENARIO_DIR "/fault_long_run.json"), PrivateTmp(dir));
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

// A steady app (a launch every 100 us) that runs until dir.File("stop") exists, then launches a
// burst of kBurstLaunches (about 2 MB of records, more than a socket holds) and exits with
// status 5. Waiting for a file, not a time, makes a stall land where the test puts it on any
// machine.
constexpr uint64_t kBurstLaunches = 500 * 40;

std::string WriteUntilFileScenario(const TempDir& dir) {
  std::string text = R"({"processes": [{"name": "steady", "threads": [{"name": "main", "ops": [
    {"repeat_until_file": "STOP_FILE", "max": 100000000, "ops": [
      {"push": "step"},
      {"repeat": 40, "ops": [{"launch": "_Z6kernelPf", "us": 20}, {"cpu_us": 100}]},
      {"sync": "device"},
      {"pop": true}]},
    {"repeat": 500, "ops": [
      {"push": "step"},
      {"repeat": 40, "ops": [{"launch": "_Z6kernelPf", "us": 1}]},
      {"sync": "device"},
      {"pop": true}]},
    {"exit": 5}]}]}]})";
  text.replace(text.find("STOP_FILE"), 9, dir.File("stop"));
  const std::string path = dir.File("until_file.json");
  std::ofstream(path) << text;
  return path;
}

// Waits until `gpuattr run` has started the scenario process (simgpu-run's child).
void AwaitScenarioProcess(pid_t gpuattr) {
  const double deadline = MonotonicSeconds() + 30;
  while (MonotonicSeconds() < deadline) {
    for (pid_t launcher : test_support::ChildrenOf(gpuattr)) {
      if (!test_support::ChildrenOf(launcher).empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL("the scenario process never started");
}

TEST_CASE("a collector stalled mid-run loses nothing: the shim waits for it, the app never does",
          "[e2e]") {
  TempDir dir;
  const std::string stop_file = dir.File("stop");
  Subprocess gpuattr(GpuattrRun(dir, WriteUntilFileScenario(dir)), PrivateTmp(dir));
  AwaitScenarioProcess(gpuattr.pid());
  REQUIRE(kill(gpuattr.pid(), SIGSTOP) == 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the app launches on meanwhile
  REQUIRE(kill(gpuattr.pid(), SIGCONT) == 0);
  std::ofstream(stop_file) << "";
  const ProcessResult run = gpuattr.Wait(60);
  INFO("gpuattr stderr: " << run.err);
  CHECK(ExitStatus(run) == 5);
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  const json truth = ReadJson(dir.File("truth.json"));
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  INFO("loss " << process["loss"].dump());
  CHECK(process["status"] == "complete");
  CHECK(process["loss"]["dropped_records"] == 0);
  CHECK(process["totals"]["kernels"] == truth["processes"][0]["activities"].size());
  CHECK(process["coverage"]["attributed_fraction"] == 1.0);
  CheckReconciliation(process);
}

TEST_CASE("a collector stalled past the app's exit: the app exits on time, the loss shows",
          "[e2e]") {
  TempDir dir;
  const std::string stop_file = dir.File("stop");
  Subprocess gpuattr(GpuattrRun(dir, WriteUntilFileScenario(dir)), PrivateTmp(dir));
  AwaitScenarioProcess(gpuattr.pid());
  REQUIRE(kill(gpuattr.pid(), SIGSTOP) == 0);
  std::ofstream(stop_file) << "";
  // The app bursts, exits and writes its truth while the collector is still stopped: its exit
  // waited for the collector no longer than the shim's exit budgets.
  const double deadline = MonotonicSeconds() + 60;
  json truth;
  while (!truth.is_object() && MonotonicSeconds() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    truth = ReadJson(dir.File("truth.json"));
  }
  REQUIRE(kill(gpuattr.pid(), SIGCONT) == 0);
  REQUIRE(truth.is_object());
  const ProcessResult run = gpuattr.Wait(60);
  INFO("gpuattr stderr: " << run.err);
  CHECK(ExitStatus(run) == 5);
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  INFO("status " << process["status"] << ", loss " << process["loss"].dump());
  // The burst outgrew what the socket holds, so the stream's end never arrived: the process is
  // truncated, the time after the last record that came is a lost span, and kernels are missing.
  CHECK(process["status"] == "truncated");
  CHECK(process["loss"]["lost_span"].is_object());
  const uint64_t launched = truth["processes"][0]["activities"].size();
  const uint64_t kernels = process["totals"]["kernels"].get<uint64_t>();
  CHECK(launched >= kBurstLaunches);
  CHECK(kernels < launched);
  CheckReconciliation(process);
}

}  // namespace
}  // namespace gpuattr::e2e
