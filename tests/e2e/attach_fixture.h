// The attach e2e tests' daemon fixture and helpers (attach_e2e_test.cpp,
// attach_target_e2e_test.cpp): a real `gpuattr daemon` in a temporary directory, a long-running
// simulated job, and readers of what a process mapped and of the reports' refusals.
#ifndef GPUATTR_TESTS_E2E_ATTACH_FIXTURE_H_
#define GPUATTR_TESTS_E2E_ATTACH_FIXTURE_H_

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::Subprocess;
using test_support::TempDir;
using test_support::WriteFile;

// One process: a graph captured under "setup", then top-level steps (forward, backward with a
// copy, optimizer replaying the graph) until `stop_file` exists.
inline json LongRunningScenario(const std::string& stop_file) {
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

inline bool WaitForPath(const std::string& path, double seconds) {
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
inline std::unique_ptr<Subprocess> StartDaemon(const TempDir& dir, const std::string& socket) {
  const std::string reports = dir.File("reports");
  REQUIRE(mkdir(reports.c_str(), 0700) == 0);
  auto daemon = std::make_unique<Subprocess>(std::vector<std::string>{
      GPUATTR_BIN, "daemon", "--quiet", "--socket", socket, "--reports-dir", reports});
  REQUIRE(WaitForPath(socket, 10));
  return daemon;
}

// What Subprocess::Wait is given for processes that live as long as a test: its limit counts
// from their start, and ten attaches under the ASan build take about a minute.
constexpr double kLongestTestSeconds = 300;

// Every attach test's fixture (TEST_CASE_METHOD): a temporary directory with a `gpuattr daemon`
// listening in it and the long-running scenario written there (its job stops once `stop_file`
// exists). StopDaemon ends the daemon, which must exit 0.
struct DaemonFixture {
  TempDir dir;
  std::string socket = dir.File("daemon.sock");
  std::unique_ptr<Subprocess> daemon = StartDaemon(dir, socket);
  std::string stop_file = dir.File("stop");
  std::string scenario = dir.File("scenario.json");

  DaemonFixture() { WriteFile(scenario, LongRunningScenario(stop_file).dump()); }
  // (Subprocess::Wait's limit counts from the start: the daemon has run as long as the test.)
  void StopDaemon() {
    kill(daemon->pid(), SIGTERM);
    const ProcessResult stopped = daemon->Wait(kLongestTestSeconds);
    INFO("daemon stderr: " << stopped.err);
    CHECK(ExitStatus(stopped) == 0);
  }
};

// `gpuattr attach ARGS... --socket S -o OUT`, retried while the process has not registered yet
// (the shim registers at its first CUDA or NVTX event).
inline ProcessResult Attach(const std::string& socket, const std::string& out,
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

// /proc/PID/maps: which files the process has mapped.
inline std::string Maps(pid_t pid) {
  return test_support::ReadFile("/proc/" + std::to_string(pid) + "/maps");
}

inline const json& OnlyProcess(const json& report) {
  REQUIRE(report["processes"].size() == 1);
  return report["processes"][0];
}

// The scenario process of a simgpu-run job (simgpu-run runs each one as its own child process).
inline pid_t ScenarioProcess(const Subprocess& job) {
  const double deadline = test_support::MonotonicSeconds() + 20;
  for (;;) {
    const std::vector<pid_t> children = test_support::ChildrenOf(job.pid());
    if (children.size() == 1) return children[0];
    REQUIRE(test_support::MonotonicSeconds() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

inline std::vector<std::string> RefusalCodes(const json& process) {
  std::vector<std::string> codes;
  for (const json& refusal : process["refusals"]) codes.push_back(refusal["code"]);
  return codes;
}

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_ATTACH_FIXTURE_H_
