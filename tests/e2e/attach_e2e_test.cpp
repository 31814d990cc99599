// Issue 5, end to end: a long-running scenario on the simulated GPU runs armed under a real
// `gpuattr daemon`; `gpuattr attach` opens capture windows in it. Each window's report must equal
// the simulator's truth restricted to that window (tests/e2e/window_truth.h), with CUPTI detached
// at an API exit after every window, and a graph captured before the windows attributed to its
// launch range and named in coverage.fallbacks.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "window_truth.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::Subprocess;
using test_support::TempDir;
using test_support::WriteFile;

// One process: a graph captured under "setup", then top-level steps (forward, backward with a
// copy, optimizer replaying the graph) until `stop_file` exists.
json LongRunningScenario(const std::string& stop_file) {
  const json step = {
      {"push", "step"},
  };
  json ops = json::array({
      {{"push", "setup"}},
      {{"capture_begin", "g0"}, {"stream", 1}},
      {{"launch", "graph_gemm"}, {"stream", 1}, {"us", 20}},
      {{"launch", "graph_relu"}, {"stream", 1}, {"us", 5}},
      {{"capture_end", "g0"}},
      {{"pop", true}},
      {{"repeat_until_file", stop_file},
       {"max", 20000},
       {"ops", json::array({step,
                            {{"push", "forward"}},
                            {{"launch", "fwd_gemm"}, {"stream", 0}, {"us", 40}},
                            {{"launch", "fwd_act"}, {"stream", 0}, {"us", 10}},
                            {{"pop", true}},
                            {{"push", "backward"}},
                            {{"launch", "bwd_gemm"}, {"stream", 0}, {"us", 80}},
                            {{"memcpy", "DtoH"}, {"bytes", 4096}, {"stream", 2}, {"us", 8}},
                            {{"pop", true}},
                            {{"push", "optimizer"}},
                            {{"graph_launch", "g0"}, {"stream", 1}},
                            {{"pop", true}},
                            {{"sync", "device"}},
                            {{"cpu_us", 1500}},
                            {{"pop", true}}})}},
  });
  return {
      {"processes", json::array({{{"name", "trainer"},
                                  {"threads", json::array({{{"name", "main"}, {"ops", ops}}})}}})}};
}

bool WaitForPath(const std::string& path, double seconds) {
  const double deadline = test_support::MonotonicSeconds() + seconds;
  struct stat status;
  while (stat(path.c_str(), &status) != 0) {
    if (test_support::MonotonicSeconds() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A `gpuattr daemon` listening at `socket`, its reports in `dir`/reports; it is listening on
// return.
std::unique_ptr<Subprocess> StartDaemon(const TempDir& dir, const std::string& socket) {
  const std::string reports = dir.File("reports");
  REQUIRE(mkdir(reports.c_str(), 0700) == 0);
  auto daemon = std::make_unique<Subprocess>(std::vector<std::string>{
      GPUATTR_BIN, "daemon", "--quiet", "--socket", socket, "--reports-dir", reports});
  REQUIRE(WaitForPath(socket, 10));
  return daemon;
}

// `gpuattr attach ARGS... --socket S -o OUT`, retried while the process has not registered yet
// (the shim registers at its first CUDA or NVTX event).
ProcessResult Attach(const std::string& socket, const std::string& out,
                     std::vector<std::string> args) {
  std::vector<std::string> argv = {GPUATTR_BIN, "attach"};
  argv.insert(argv.end(), args.begin(), args.end());
  // A refused attempt (exit 3, the job not armed yet) leaves its refusal report at `out`; the
  // retry replaces it.
  argv.insert(argv.end(), {"--socket", socket, "-o", out, "--force-overwrite"});
  const double deadline = test_support::MonotonicSeconds() + 20;
  for (;;) {
    ProcessResult result = RunProcess(argv, {}, 60);
    if (ExitStatus(result) != 3 || test_support::MonotonicSeconds() > deadline) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

const json& OnlyProcess(const json& report) {
  REQUIRE(report["processes"].size() == 1);
  return report["processes"][0];
}

// The window report against the truth cut to its window, exactly; plus what attach promises.
void CheckWindow(const json& report, const json& truth, int attach_index, int steps) {
  const json& process = OnlyProcess(report);
  const json& window = process["window"];
  INFO("window " << window.dump());
  CHECK(report["capture"]["mode"] == "attach");
  CHECK(window["attach_index"] == attach_index);
  CHECK(window["end_reason"] == "steps_done");
  CHECK(window["detach"] == "finalized");
  CHECK(window["steps"] == steps);
  const uint64_t begin = window["begin_ns"].get<uint64_t>();
  const uint64_t end = window["end_ns"].get<uint64_t>();
  REQUIRE(begin < end);
  const json restricted = RestrictTruthToWindow(truth, process["pid"].get<int64_t>(), begin, end);
  REQUIRE(restricted["processes"].size() == 1);
  CHECK(restricted["processes"][0]["ambiguous_captures"] == 0);
  CheckAgainstTruth(report, restricted);
  CheckReconciliation(process);
  // The window holds whole steps: its step rows are exactly the steps it asked for.
  REQUIRE(process["steps"].is_object());
  CHECK(process["steps"]["rows"].size() == static_cast<size_t>(steps));
  // The graph was captured before every window: attributed at its launch, and said so.
  bool graph_fallback = false;
  for (const json& entry : process["coverage"]["fallbacks"]) {
    if (entry["reason"] == "graph_captured_before_window" && entry["activities"] == 2 * steps) {
      graph_fallback = true;
    }
  }
  CHECK(graph_fallback);
}

TEST_CASE("an armed long-running job attached twice: each window equals the truth in it",
          "[attach][e2e]") {
  TempDir dir;
  const std::string socket = dir.File("daemon.sock");
  const std::unique_ptr<Subprocess> daemon = StartDaemon(dir, socket);

  const std::string stop_file = dir.File("stop");
  const std::string scenario = dir.File("scenario.json");
  WriteFile(scenario, LongRunningScenario(stop_file).dump());
  const std::string truth_path = dir.File("truth.json");
  Subprocess job({GPUATTR_BIN, "run", "--armed", "--socket", socket, "--", SIMGPU_RUN, scenario,
                  "--truth", truth_path});

  const std::string first = dir.File("window1.json");
  const ProcessResult one = Attach(socket, first, {"--all", "--steps", "3"});
  INFO("attach 1: " << one.err);
  REQUIRE(ExitStatus(one) == 0);
  const std::string second = dir.File("window2.json");
  const ProcessResult two = Attach(socket, second, {"--all", "--steps", "2"});
  INFO("attach 2: " << two.err);
  REQUIRE(ExitStatus(two) == 0);
  const std::string third = dir.File("window3.json");
  const ProcessResult three = Attach(socket, third, {"--all", "--duration", "100ms"});
  INFO("attach 3: " << three.err);
  REQUIRE(ExitStatus(three) == 0);

  WriteFile(stop_file, "");
  const ProcessResult finished = job.Wait(60);
  INFO("job stderr: " << finished.err);
  REQUIRE(ExitStatus(finished) == 0);
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(truth.is_discarded());

  for (const std::string& path : {first, second, third}) REQUIRE(SchemaValid(path));
  CheckWindow(ReadJson(first), truth, 1, 3);
  CheckWindow(ReadJson(second), truth, 2, 2);

  // A duration window starts at an arbitrary point of a step: complete, detached, reconciled.
  const json report = ReadJson(third);
  const json& process = OnlyProcess(report);
  CHECK(process["status"] == "complete");
  CHECK(process["window"]["attach_index"] == 3);
  CHECK(process["window"]["end_reason"] == "closed");
  CHECK(process["window"]["detach"] == "finalized");
  CHECK(process["totals"]["kernels"].get<int64_t>() > 0);
  CheckReconciliation(process);

  kill(daemon->pid(), SIGTERM);
  CHECK(ExitStatus(daemon->Wait(20)) == 0);
}

TEST_CASE("attaching to a process started without the shim is a typed refusal", "[attach][e2e]") {
  TempDir dir;
  const std::string socket = dir.File("daemon.sock");
  const std::unique_ptr<Subprocess> daemon = StartDaemon(dir, socket);
  Subprocess unprepared({"sleep", "30"});

  const std::string out = dir.File("refused.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(unprepared.pid()), "--duration",
                  "1s", "--socket", socket, "-o", out});
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 3);
  REQUIRE(SchemaValid(out));
  const json report = ReadJson(out);
  const json& process = OnlyProcess(report);
  CHECK(process["pid"] == unprepared.pid());
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  CHECK(process["refusals"][0]["code"] == "attach_requires_shim");
  CHECK(process["refusals"][0]["remedy"].get<std::string>().find("--armed") != std::string::npos);

  kill(unprepared.pid(), SIGKILL);
  unprepared.Wait(5);
  kill(daemon->pid(), SIGTERM);
  CHECK(ExitStatus(daemon->Wait(20)) == 0);
}

}  // namespace
}  // namespace gpuattr::e2e
