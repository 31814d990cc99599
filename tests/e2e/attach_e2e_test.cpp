// Issue 5, end to end: a long-running scenario on the simulated GPU runs armed under a real
// `gpuattr daemon`; `gpuattr attach` opens capture windows in it. Each window's report must equal
// the simulator's truth restricted to that window (tests/e2e/window_truth.h), with CUPTI detached
// at an API exit after every window, and a graph captured before the windows attributed to its
// launch range and named in coverage.fallbacks. Issue 43: a window opening and closing while the
// program's own CUPTI client is on takes nothing from it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "attach_fixture.h"
#include "cupti_client_check.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "window_truth.h"

namespace gpuattr::e2e {
namespace {

using test_support::CheckCuptiClientRecords;

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

TEST_CASE_METHOD(DaemonFixture,
                 "an armed long-running job attached twice: each window equals the truth in it",
                 "[attach][e2e]") {
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

  StopDaemon();
}

// The long-running job with a Kineto-like CUPTI client (the cupti_client op) on from its start
// to its end; returns the scenario's path.
std::string WriteClientScenario(const TempDir& dir, const std::string& stop_file) {
  json client_job = LongRunningScenario(stop_file);
  json& ops = client_job["processes"][0]["threads"][0]["ops"];
  ops.insert(ops.begin(), json{{"cupti_client", "start"}, {"kinds", {"kernel", "memcpy"}}});
  ops.push_back(json{{"cupti_client", "stop"}});
  const std::string path = dir.File("client_scenario.json");
  WriteFile(path, client_job.dump());
  return path;
}

TEST_CASE_METHOD(DaemonFixture,
                 "an attach window opening and closing while the program's own CUPTI client is on "
                 "takes nothing from the client",
                 "[attach][e2e]") {
  // CUDA 13.0's one subscriber (the multiplexer), and 13.3+'s several (the V2 bridge).
  const std::string cupti_mode = GENERATE(as<std::string>{}, "", "multi_subscriber");
  INFO("SIMGPU_CUPTI_MODE=" << cupti_mode);
  const std::string client_scenario = WriteClientScenario(dir, stop_file);
  const std::string truth_path = dir.File("truth.json");
  Subprocess job({GPUATTR_BIN, "run", "--armed", "--socket", socket, "--", SIMGPU_RUN,
                  client_scenario, "--truth", truth_path},
                 {{"SIMGPU_CUPTI_MODE", cupti_mode}});

  const std::string window = dir.File("window.json");
  const ProcessResult attached = Attach(socket, window, {"--all", "--steps", "2"});
  INFO("attach: " << attached.err);
  REQUIRE(ExitStatus(attached) == 0);
  // Steps go on after the window closed, the client still on.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  WriteFile(stop_file, "");
  const ProcessResult finished = job.Wait(60);
  INFO("job stderr: " << finished.err);
  REQUIRE(ExitStatus(finished) == 0);
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(truth.is_discarded());
  REQUIRE(SchemaValid(window));
  CheckWindow(ReadJson(window), truth, 1, 2);
  CheckCuptiClientRecords(truth["processes"][0]);
  CHECK(truth["processes"][0]["cupti_client"]["old_subscriber"] ==
        (cupti_mode.empty() ? "" : "gpuattr"));
  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "attach --no-inject to a process started without the shim is attach_requires_shim",
                 "[attach][e2e]") {
  Subprocess unprepared({"sleep", "30"});

  const std::string out = dir.File("refused.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(unprepared.pid()), "--duration",
                  "1s", "--no-inject", "--socket", socket, "-o", out});
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
  CHECK(Maps(unprepared.pid()).find("libgpuattr_inject") == std::string::npos);

  kill(unprepared.pid(), SIGKILL);
  unprepared.Wait(5);
  StopDaemon();
}

// What a window of a late-attached process can be compared with: the truth's activities of the
// launches the window recorded (its launch correlation ids, first to last; the shim decides
// which launch is inside the window when its API callback runs, after the simulator stamped
// launch_ns, so a time cut would race at the edges), with no range seen (NVTX was never
// injected), so every activity is unattributed.
json LateAttachTruth(const json& truth, int64_t pid, const json& correlation_ids) {
  // Built field by field: copying the whole truth once per window is slow in the ASan build.
  json restricted = json::object();
  for (const auto& [key, value] : truth.items()) {
    if (key != "processes") restricted[key] = value;
  }
  restricted["processes"] = json::array();
  for (const json& process : truth["processes"]) {
    if (process["pid"] != pid) continue;
    json kept = json::object();
    for (const auto& [key, value] : process.items()) {
      if (key != "activities" && key != "ranges") kept[key] = value;
    }
    kept["ranges"] = json::array();
    kept["activities"] = json::array();
    for (const json& activity : process["activities"]) {
      if (activity["correlation_id"].is_null()) continue;
      const auto id = activity["correlation_id"].get<uint64_t>();
      if (id < correlation_ids["first"].get<uint64_t>() ||
          id > correlation_ids["last"].get<uint64_t>()) {
        continue;
      }
      json copy = activity;
      copy["attribution"] = "none";
      copy["range_path"] = json::array();
      kept["activities"].push_back(std::move(copy));
    }
    restricted["processes"].push_back(std::move(kept));
  }
  return restricted;
}

// A late-attached window against the truth, exactly, and what a late attach must say.
void CheckLateWindow(const json& report, const json& truth, int attach_index) {
  const json& process = OnlyProcess(report);
  const json& window = process["window"];
  INFO("window " << window.dump() << "\nloss " << process["loss"].dump());
  CHECK(process["status"] == "complete");
  CHECK(window["late_attach"] == true);
  CHECK(window["attach_index"] == attach_index);
  CHECK(window["end_reason"] == "closed");
  CHECK(window["detach"] == "finalized");
  REQUIRE(window["begin_ns"].get<uint64_t>() < window["end_ns"].get<uint64_t>());
  REQUIRE(window["launch_correlation_ids"].is_object());
  const json expected =
      LateAttachTruth(truth, process["pid"].get<int64_t>(), window["launch_correlation_ids"]);
  REQUIRE(expected["processes"].size() == 1);
  REQUIRE_FALSE(expected["processes"][0]["activities"].empty());
  CheckAgainstTruth(report, expected);
  CheckReconciliation(process);
  CHECK(RefusalCodes(process) ==
        std::vector<std::string>{"nvtx_bound_before_attach", "launches_in_flight_at_attach"});
  // Devices named through the driver API (no CUPTI device records after a late attach).
  REQUIRE_FALSE(process["devices"].empty());
  CHECK(process["devices"][0]["name"] == "simgpu simulated device");
  // The graph was instantiated before the shim was there: said so, by name.
  REQUIRE(process["coverage"]["fallbacks"].size() == 1);
  CHECK(process["coverage"]["fallbacks"][0]["reason"] == "graph_captured_before_attach");
}

TEST_CASE_METHOD(
    DaemonFixture,
    "a job started without gpuattr, attached by pid ten times: each window equals the truth, "
    "NVTX is refused, and its output and exit status are those of a run without attach",
    "[attach][e2e]") {
  // The same job without any attach, stopped after about the same number of steps.
  const std::string bare_truth = dir.File("bare_truth.json");
  Subprocess bare({SIMGPU_RUN, scenario, "--truth", bare_truth});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  WriteFile(stop_file, "");
  const ProcessResult bare_result = bare.Wait(60);
  REQUIRE(ExitStatus(bare_result) == 0);
  REQUIRE(unlink(stop_file.c_str()) == 0);

  const std::string truth_path = dir.File("truth.json");
  Subprocess job({SIMGPU_RUN, scenario, "--truth", truth_path});
  const pid_t target = ScenarioProcess(job);
  std::vector<std::string> windows;
  for (int attach = 1; attach <= 10; ++attach) {
    windows.push_back(dir.File("window" + std::to_string(attach) + ".json"));
    const ProcessResult result =
        RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(target), "--duration",
                    attach == 1 ? "1s" : "200ms", "--socket", socket, "-o", windows.back()},
                   {}, 60);
    INFO("attach " << attach << ": " << result.err);
    REQUIRE(ExitStatus(result) == 0);
    // Only the first attach loads the shim; the others find the process registered.
    CHECK((result.err.find("loaded the shim into pid") != std::string::npos) == (attach == 1));
  }
  WriteFile(stop_file, "");
  const ProcessResult finished = job.Wait(kLongestTestSeconds);
  INFO("job stderr: " << finished.err);
  CHECK(ExitStatus(finished) == ExitStatus(bare_result));
  CHECK(finished.out == bare_result.out);
  CHECK(finished.err == bare_result.err);
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(truth.is_discarded());
  for (size_t i = 0; i < windows.size(); ++i) {
    INFO("window " << i + 1);
    REQUIRE(SchemaValid(windows[i]));
    CheckLateWindow(ReadJson(windows[i]), truth, static_cast<int>(i) + 1);
  }

  StopDaemon();
}

// A 200 ms `attach --pid` into `job`, which another CUPTI subscriber named `holder` holds: the
// window is refused cupti_subscriber_conflict, naming it; the job is then stopped and exits 0.
void CheckLateAttachRefusedFor(DaemonFixture& fixture, Subprocess& job, const std::string& holder) {
  const std::string out = fixture.dir.File("window.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(ScenarioProcess(job)),
                  "--duration", "200ms", "--socket", fixture.socket, "-o", out},
                 {}, 60);
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 0);
  WriteFile(fixture.stop_file, "");
  CHECK(ExitStatus(job.Wait(60)) == 0);
  REQUIRE(SchemaValid(out));
  const json report = ReadJson(out);
  const json& process = OnlyProcess(report);
  CHECK(process["status"] == "refused");
  const std::vector<std::string> codes = RefusalCodes(process);
  REQUIRE_FALSE(codes.empty());
  CHECK(codes[0] == "cupti_subscriber_conflict");
  CHECK_THAT(process["refusals"][0]["cause"].get<std::string>(), Catch::Contains(holder));
  CHECK(process["totals"]["kernels"].is_null());
}

TEST_CASE_METHOD(DaemonFixture,
                 "a late attach into a job whose CUPTI slot another tool holds is refused typed",
                 "[attach][e2e]") {
  Subprocess job({SIMGPU_RUN, scenario, "--truth", dir.File("truth.json")},
                 {{"SIMGPU_CUPTI_MODE", "conflict:nsys-like-tool"}});
  CheckLateAttachRefusedFor(*this, job, "nsys-like-tool");
  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "a late attach into a job whose own CUPTI client is tracing is refused typed, and "
                 "the client keeps its session",
                 "[attach][e2e]") {
  const std::string truth_path = dir.File("truth.json");
  Subprocess job({SIMGPU_RUN, WriteClientScenario(dir, stop_file), "--truth", truth_path});
  CheckLateAttachRefusedFor(*this, job, "simgpu-cupti-client");
  // Its session was never redirected: it got everything, as without the attach.
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(truth.is_discarded());
  CheckCuptiClientRecords(truth["processes"][0]);
  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "an attach that ptrace policy denies is a typed refusal and touches nothing",
                 "[attach][e2e]") {
  // A non-dumpable process: only a tracer with CAP_SYS_PTRACE may trace it, and gpuattr runs
  // without (setpriv drops it from a root caller; another user has none).
  // It maps the (simulated) CUDA driver, as a process worth attaching to does.
  Subprocess target({"/usr/bin/python3", "-c",
                     "import ctypes, sys, time\nctypes.CDLL(sys.argv[1])\n"
                     "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE\n"
                     "time.sleep(3)\nprint('done')\n",
                     SIMGPU_LIBCUDA});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<std::string> argv = {
      GPUATTR_BIN, "attach", "--pid", std::to_string(target.pid()), "--duration", "1s",
      "--socket",  socket,   "-o",    dir.File("denied.json")};
  if (geteuid() == 0) {
    argv.insert(argv.begin(), {"setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"});
  }
  const ProcessResult result = RunProcess(argv, {}, 60);
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 3);
  REQUIRE(SchemaValid(dir.File("denied.json")));
  const json report = ReadJson(dir.File("denied.json"));
  const json& process = OnlyProcess(report);
  CHECK(process["status"] == "refused");
  CHECK(RefusalCodes(process) == std::vector<std::string>{"attach_ptrace_denied"});
  CHECK_THAT(process["refusals"][0]["remedy"].get<std::string>(),
             Catch::Contains("CAP_SYS_PTRACE"));
  CHECK(Maps(target.pid()).find("libgpuattr_inject") == std::string::npos);
  const ProcessResult finished = target.Wait(30);
  CHECK(finished.out == "done\n");
  CHECK(ExitStatus(finished) == 0);

  StopDaemon();
}

TEST_CASE_METHOD(DaemonFixture,
                 "a late attach into a Python process with torch refuses the annotator, typed",
                 "[attach][e2e]") {
  REQUIRE(std::string(GPUATTR_TORCH_PYTHON) != "");
  if (GPUATTR_ASAN_SHIM) {
    // The ASan-built shim needs the ASan runtime first in the process: dlopened into Debian's
    // uninstrumented interpreter it would bring the runtime in late and abort it. A
    // sanitizer-build artefact; the dev build's run checks this.
    WARN("skipped under the asan-ubsan preset");
    return;
  }
  const std::string ready = dir.File("ready");
  // A CUDA torch maps the driver: this CPU torch loads the simulated one's libcuda.so.1.
  Subprocess python({GPUATTR_TORCH_PYTHON, "-c",
                     "import ctypes, sys, time, torch\nctypes.CDLL(sys.argv[2])\n"
                     "open(sys.argv[1], 'w').close()\n"
                     "x = torch.ones(8)\n"
                     "for _ in range(400):\n    x = x * 1.0\n    time.sleep(0.01)\n"
                     "print(float(x.sum()))\n",
                     ready, SIMGPU_LIBCUDA});
  REQUIRE(WaitForPath(ready, 60));
  const std::string out = dir.File("window.json");
  const ProcessResult result =
      RunProcess({GPUATTR_BIN, "attach", "--pid", std::to_string(python.pid()), "--duration",
                  "200ms", "--socket", socket, "-o", out},
                 {}, 60);
  INFO("attach: " << result.err);
  CHECK(ExitStatus(result) == 0);
  REQUIRE(SchemaValid(out));
  const json report = ReadJson(out);
  const json& process = OnlyProcess(report);
  CHECK(process["window"]["late_attach"] == true);
  const std::vector<std::string> codes = RefusalCodes(process);
  CHECK(std::count(codes.begin(), codes.end(), "pytorch_annotator_requires_start") == 1);
  CHECK(std::count(codes.begin(), codes.end(), "nvtx_bound_before_attach") == 1);
  for (const json& refusal : process["refusals"]) {
    if (refusal["code"] == "pytorch_annotator_requires_start") {
      CHECK_THAT(refusal["remedy"].get<std::string>(), Catch::Contains("gpuattr run --armed"));
    }
  }
  const ProcessResult finished = python.Wait(60);
  CHECK(finished.out == "8.0\n");
  CHECK(ExitStatus(finished) == 0);

  StopDaemon();
}

}  // namespace
}  // namespace gpuattr::e2e
