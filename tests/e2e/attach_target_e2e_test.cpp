// Issue 41: `gpuattr attach` never touches a process that has not loaded the CUDA driver. Given
// the pid of a launcher, a shell or torchrun's agent, it refuses (attach_no_cuda_driver, exit 3)
// before any ptrace, and names the descendants that did load it; --all passes over armed
// processes without it and says so.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "attach_fixture.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using Catch::Matchers::Contains;

// The single refusal of a refused attach report, schema-checked; its process entry is `pid`'s.
json OnlyRefusal(const std::string& path, pid_t pid) {
  REQUIRE(SchemaValid(path));
  const json report = ReadJson(path);
  const json& process = OnlyProcess(report);
  CHECK(process["pid"] == pid);
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  return process["refusals"][0];
}

// The only child of `pid`, once it has one.
pid_t OnlyChild(pid_t pid) {
  const double deadline = test_support::MonotonicSeconds() + 20;
  for (;;) {
    const std::vector<pid_t> children = test_support::ChildrenOf(pid);
    if (children.size() == 1) return children[0];
    REQUIRE(test_support::MonotonicSeconds() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST_CASE_METHOD(DaemonFixture,
                 "attach --pid of a process that never loaded CUDA is refused before injection, "
                 "and its maps never show the shim",
                 "[attach][e2e]") {
  Subprocess no_cuda({"sleep", "30"});
  const std::string out = dir.File("refused.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(no_cuda.pid()), "--duration",
                  "200ms", "--socket", socket, "-o", out});
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 3);
  CHECK_THAT(result.err, Contains("refused (attach_no_cuda_driver)"));
  CHECK_THAT(result.err, !Contains("loaded the shim"));
  const json refusal = OnlyRefusal(out, no_cuda.pid());
  CHECK(refusal["code"] == "attach_no_cuda_driver");
  CHECK_THAT(refusal["cause"].get<std::string>(),
             Contains("pid " + std::to_string(no_cuda.pid()) + " has not loaded libcuda.so"));
  CHECK_THAT(refusal["cause"].get<std::string>(), !Contains("did you mean"));
  CHECK(Maps(no_cuda.pid()).find("libgpuattr_inject") == std::string::npos);

  kill(no_cuda.pid(), SIGKILL);
  no_cuda.Wait(5);
  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "attach --pid of a shell whose child runs CUDA is refused naming the child, "
                 "with its rank",
                 "[attach][e2e]") {
  Subprocess shell({"sh", "-c", "\"$0\" \"$1\" --truth \"$2\"; exit $?", SIMGPU_RUN, scenario,
                    dir.File("truth.json")},
                   {{"RANK", "3"}});
  const pid_t launcher = OnlyChild(shell.pid());  // simgpu-run, which maps libcuda.so.1
  const pid_t job = OnlyChild(launcher);          // its scenario process
  const std::string out = dir.File("refused.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(shell.pid()), "--duration",
                  "200ms", "--socket", socket, "-o", out});
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 3);
  const json refusal = OnlyRefusal(out, shell.pid());
  CHECK(refusal["code"] == "attach_no_cuda_driver");
  const std::string cause = refusal["cause"].get<std::string>();
  // By pid; each named by its comm (the scenario's process took its main thread's name).
  CHECK_THAT(cause,
             Contains("did you mean " + std::to_string(launcher) + " (simgpu-run, rank 3) or " +
                      std::to_string(job) + " (" + test_support::CommandName(job) + ", rank 3)."));
  CHECK_THAT(result.err, Contains("did you mean " + std::to_string(launcher)));
  CHECK(Maps(shell.pid()).find("libgpuattr_inject") == std::string::npos);

  WriteFile(stop_file, "");
  CHECK(ExitStatus(shell.Wait(60)) == 0);
  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "attach --all passes over an armed process that never loaded CUDA and says so",
                 "[attach][e2e]") {
  // Registered with the daemon by its first NVTX call, through the toolkit's NVTX library that
  // gpuattr run names; it never loads the CUDA driver.
  const std::string ready = dir.File("ready");
  Subprocess armed({GPUATTR_BIN, "run", "--armed", "--socket", socket, "--", GPUATTR_PYTHON, "-c",
                    "import ctypes, os, sys, time\n"
                    "nvtx = ctypes.CDLL(os.environ['GPUATTR_NVTX_LIBRARY'])\n"
                    "nvtx.nvtxRangePushA(b'setup')\nnvtx.nvtxRangePop()\n"
                    "open(sys.argv[1], 'w').close()\n"
                    "while not os.path.exists(sys.argv[2]):\n    time.sleep(0.01)\n",
                    ready, stop_file});
  REQUIRE(WaitForPath(ready, 60));
  const pid_t python = OnlyChild(armed.pid());
  const std::string out = dir.File("refused.json");
  // The shim registers with the daemon shortly after the NVTX call: asked until it has.
  const std::string skipped = "skipped pid " + std::to_string(python) + " (no CUDA driver loaded)";
  ProcessResult result;
  const double deadline = test_support::MonotonicSeconds() + 20;
  do {
    result = RunProcess({GPUATTR_BIN, "attach", "--all", "--duration", "200ms", "--socket", socket,
                         "-o", out, "--force-overwrite"});
  } while (result.err.find(skipped) == std::string::npos &&
           test_support::MonotonicSeconds() < deadline);
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 3);
  CHECK_THAT(result.err, Contains(skipped));
  const json refusal = OnlyRefusal(out, 0);
  CHECK(refusal["code"] == "attach_requires_shim");
  CHECK_THAT(refusal["cause"].get<std::string>(), Contains(skipped));

  WriteFile(stop_file, "");
  CHECK(ExitStatus(armed.Wait(60)) == 0);
  StopDaemon();
}

}  // namespace
}  // namespace gpuattr::e2e
