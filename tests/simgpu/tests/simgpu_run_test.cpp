// simgpu-run as a program: scenario errors exit 2 with the JSON path, a run without any
// injection writes truth in which one stream is FIFO and two streams overlap, the simulated clock
// makes every host time the scenario's own, and repeat_until_file stops at its file or its bound,
// under an injection that subscribes nothing.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cupti_client_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace {

using gpuattr::test_support::CheckCuptiClientRecords;
using gpuattr::test_support::ProcessResult;
using gpuattr::test_support::RunProcess;
using gpuattr::test_support::Subprocess;
using gpuattr::test_support::TempDir;

struct Outcome {
  int status;
  std::string output;  // stdout, then stderr
};

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string file = dir.File(name);
  std::ofstream(file) << text;
  return file;
}

// Runs simgpu-run with no injection at all.
Outcome RunSimgpu(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "env", "-u",         "CUDA_INJECTION64_PATH", "-u", "NVTX_INJECTION64_PATH",
      "-u",  "LD_PRELOAD", SIMGPU_RUN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult result = RunProcess(argv);
  return {result.exited ? result.exit_code : -1, result.out + result.err};
}

// simgpu-run's argv with CUDA_INJECTION64_PATH naming an injection that subscribes nothing (the
// shim in armed mode, as far as the simulated driver can tell).
std::vector<std::string> ArmedArgv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "env",
      "-u",
      "NVTX_INJECTION64_PATH",
      "-u",
      "LD_PRELOAD",
      std::string("CUDA_INJECTION64_PATH=") + SIMGPU_NULL_INJECTION_PATH,
      SIMGPU_RUN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

}  // namespace

TEST_CASE("scenario errors name the JSON path and exit 2", "[simgpu][scenario]") {
  TempDir dir;
  struct Case {
    const char* text;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"{\"processes\": [", "$: malformed JSON"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"launch": "k", "us": 1, "colour": 1}]}]}]})",
       "$.processes[0].threads[0].ops[0].colour: unknown key"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"launch": "k", "us": "ten"}]}]}]})",
       "$.processes[0].threads[0].ops[0].us: expected a number"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"sync": {"stream": -1}}]}]}]})",
       "$.processes[0].threads[0].ops[0].sync.stream: expected an integer"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"start_thread": "nobody"}]}]}]})",
       "$.processes[0].threads[0].ops[0]: no thread named \"nobody\""},
      {R"({"processes": [], "seed": 1})", "$.processes: expected a non-empty array"},
      {R"({"process": []})", "$.process: unknown key"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "stop", "max": 1, "ops": []}]}]}]})",
       "$.processes[0].threads[0].ops[0].repeat_until_file: expected an absolute path"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": 7, "max": 1, "ops": []}]}]}]})",
       "$.processes[0].threads[0].ops[0].repeat_until_file: expected a string"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "ops": []}]}]}]})",
       "$.processes[0].threads[0].ops[0]: repeat_until_file needs \"max\""},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": -1, "ops": []}]}]}]})",
       "$.processes[0].threads[0].ops[0].max: expected an integer in [0, 100000000]"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": 1}]}]}]})",
       "$.processes[0].threads[0].ops[0]: repeat_until_file needs \"ops\""},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": 1, "ops": {}}]}]}]})",
       "$.processes[0].threads[0].ops[0].ops: expected an array of ops"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": 1, "ops": [{"launch": "k", "us": "x"}]}]}]}]})",
       "$.processes[0].threads[0].ops[0].ops[0].us: expected a number"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": 1, "repeat": 2, "ops": []}]}]}]})",
       "$.processes[0].threads[0].ops[0].repeat: unknown key"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"repeat_until_file": "/stop", "max": 1, "ops": [{"join_thread": "x"}]}]}]}]})",
       "$.processes[0].threads[0].ops[0].ops[0]: no thread named \"x\""},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"cupti_client": "pause"}]}]}]})",
       "$.processes[0].threads[0].ops[0].cupti_client: expected \"start\" or \"stop\""},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"cupti_client": "stop", "finalize": 1}]}]}]})",
       "$.processes[0].threads[0].ops[0].finalize: expected true or false"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"cupti_client": "start", "finalize": true}]}]}]})",
       "$.processes[0].threads[0].ops[0].finalize: unknown key"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"cupti_client": "start"}]}]}]})",
       "$.processes[0].threads[0].ops[0].kinds: expected kinds"},
      {R"({"processes": [{"threads": [{"name": "main", "ops": [{"cupti_client": "start", "kinds": ["nvtx"]}]}]}]})",
       "$.processes[0].threads[0].ops[0].kinds[0]: expected kernel, memcpy or memset"},
      {R"({"clock": "wall", "processes": [{"threads": [{"name": "main", "ops": []}]}]})",
       "$.clock: expected \"real\" or \"simulated\""},
      {R"({"clock": "simulated", "processes": [{"threads": [{"name": "main", "ops": []}, {"name": "t", "ops": []}]}]})",
       "$.processes[0].threads: a process on the simulated clock runs exactly one thread"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string scenario = WriteFile(dir, "bad.json", c.text);
    const Outcome outcome = RunSimgpu({scenario, "--truth", dir.File("truth.json")});
    CHECK(outcome.status == 2);
    CHECK(outcome.output.find(c.expected) != std::string::npos);
    CHECK(access((dir.path() + "/truth.json").c_str(), F_OK) != 0);
  }
  CHECK(RunSimgpu({"--truth", "x.json"}).status == 2);
  CHECK(RunSimgpu({dir.File("missing.json"), "--truth", "x.json"}).status == 2);
}

TEST_CASE("without injection the truth keeps each stream FIFO and lets two streams overlap",
          "[simgpu][device]") {
  TempDir dir;
  const std::string scenario = WriteFile(dir, "s.json", R"({"processes": [{"name": "p",
    "env": {"RANK": "3"}, "threads": [{"name": "main", "ops": [
      {"push": "step"},
      {"launch": "a", "stream": 1, "us": 50000},
      {"launch": "b", "stream": 2, "us": 50000},
      {"launch": "c", "stream": 1, "us": 500},
      {"pop": true},
      {"sync": "device"},
      {"launch": "d", "stream": 1, "ns": 1000}]}]}]})");
  const std::string truth_path = dir.File("truth.json");
  const Outcome outcome = RunSimgpu({scenario, "--truth", truth_path});
  INFO(outcome.output);
  REQUIRE(outcome.status == 0);
  std::ifstream in(truth_path);
  const nlohmann::json truth = nlohmann::json::parse(in, nullptr, false);
  REQUIRE(truth.is_object());
  REQUIRE(truth["processes"].size() == 1);
  const nlohmann::json& process = truth["processes"][0];
  CHECK(process["rank"] == 3);
  CHECK(process["exit_status"] == 0);
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& a : process["activities"]) by_name[a["name"]] = a;
  REQUIRE(by_name.size() == 4);
  auto start = [&](const char* n) { return by_name[n]["start_ns"].get<uint64_t>(); };
  auto end = [&](const char* n) { return by_name[n]["end_ns"].get<uint64_t>(); };
  CHECK(end("a") - start("a") == 50000000);
  CHECK(start("c") >= end("a"));  // FIFO on stream 1
  CHECK(start("b") < end("a"));   // streams 1 and 2 overlap
  CHECK(start("a") < end("b"));
  CHECK(start("d") >= end("b"));  // the sync really waited for the device
  for (const char* n : {"a", "b", "c"}) {
    CHECK(by_name[n]["attribution"] == "direct");
    CHECK(by_name[n]["range_path"] == nlohmann::json::array({"step"}));
    CHECK(by_name[n]["correlation_id"].is_number());  // the fake assigned it
    CHECK(by_name[n]["launch_ns"].get<uint64_t>() <= start(n));
  }
  CHECK(by_name["d"]["attribution"] == "none");
  REQUIRE(process["ranges"].size() == 1);
  CHECK(process["ranges"][0]["path"] == nlohmann::json::array({"step"}));
}

TEST_CASE("on the simulated clock every host time is the scenario's own, to the nanosecond",
          "[simgpu][device]") {
  TempDir dir;
  // 100 s of host work: spun on the real clock, only counted on the simulated one.
  const std::string scenario = WriteFile(dir, "s.json", R"({"clock": "simulated",
    "processes": [{"threads": [{"name": "main", "ops": [
      {"push": "step"},
      {"cpu_us": 100000000},
      {"launch": "a", "us": 10},
      {"sync": "device"},
      {"launch": "b", "us": 20},
      {"pop": true}]}]}]})");
  const std::string truth_path = dir.File("truth.json");
  const Outcome outcome = RunSimgpu({scenario, "--truth", truth_path});
  INFO(outcome.output);
  REQUIRE(outcome.status == 0);
  const nlohmann::json process = ReadJson(truth_path)["processes"][0];
  REQUIRE(process["activities"].size() == 2);
  REQUIRE(process["ranges"].size() == 1);
  const nlohmann::json& a = process["activities"][0];
  const nlohmann::json& b = process["activities"][1];
  auto ns = [](const nlohmann::json& value) { return value.get<uint64_t>(); };
  constexpr uint64_t kHostCallNs = 1000;  // sim_clock.h
  constexpr uint64_t kLaunchLatencyNs = 5000;
  const uint64_t step_start = ns(process["ranges"][0]["start_ns"]);
  CHECK(ns(a["launch_ns"]) == step_start + 100000000000ull);
  CHECK(ns(a["start_ns"]) == ns(a["launch_ns"]) + kLaunchLatencyNs);
  CHECK(ns(a["end_ns"]) == ns(a["start_ns"]) + 10000);
  CHECK(ns(a["launch_returned_ns"]) == ns(a["launch_ns"]) + 2 * kHostCallNs);
  // The sync: its entry, a jump to the device's completion, its exit.
  CHECK(ns(b["launch_ns"]) == ns(a["end_ns"]) + kHostCallNs);
  CHECK(ns(b["start_ns"]) == ns(b["launch_ns"]) + kLaunchLatencyNs);
  CHECK(ns(process["ranges"][0]["end_ns"]) == ns(b["launch_returned_ns"]) + kHostCallNs);
}

TEST_CASE("repeat_until_file runs its ops until the file exists or max iterations ran",
          "[simgpu][scenario]") {
  TempDir dir;
  const std::string stop_file = dir.File("stop");
  auto scenario = [&](uint64_t max) {
    return WriteFile(dir, "s.json",
                     R"({"processes": [{"threads": [{"name": "main", "ops": [
      {"repeat_until_file": ")" +
                         stop_file + R"(", "max": )" + std::to_string(max) + R"(, "ops": [
        {"push": "step"}, {"launch": "k", "us": 1}, {"pop": true}, {"cpu_us": 1000}]}]}]}]})");
  };
  auto activities = [&](const std::string& truth_path) -> size_t {
    const nlohmann::json truth = ReadJson(truth_path);
    REQUIRE(truth.is_object());
    const nlohmann::json& process = truth["processes"][0];
    for (const nlohmann::json& a : process["activities"]) {
      CHECK(a["correlation_id"].is_number());  // the fake works with nobody subscribed
    }
    return process["activities"].size();
  };

  SECTION("no file: max iterations") {
    const std::string truth = dir.File("truth.json");
    const ProcessResult r = RunProcess(ArmedArgv({scenario(3), "--truth", truth}));
    INFO(r.err);
    REQUIRE(r.exited);
    REQUIRE(r.exit_code == 0);
    CHECK(activities(truth) == 3);
  }
  SECTION("the file exists before the first iteration: none") {
    std::ofstream(stop_file) << "";
    const std::string truth = dir.File("truth.json");
    const ProcessResult r = RunProcess(ArmedArgv({scenario(3), "--truth", truth}));
    REQUIRE(r.exited);
    REQUIRE(r.exit_code == 0);
    CHECK(activities(truth) == 0);
  }
  SECTION("the file appears while it runs: it stops at the next iteration") {
    // The file must appear after the first iteration: a slow machine (an ASan build starting)
    // may not have reached it yet after the first wait, so the run is repeated with longer ones.
    size_t n = 0;
    for (const int wait_ms : {200, 1000, 5000}) {
      std::remove(stop_file.c_str());
      const std::string truth = dir.File("truth.json");
      Subprocess run(ArmedArgv({scenario(100000000), "--truth", truth}));
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      std::ofstream(stop_file) << "";
      const ProcessResult r = run.Wait(30);
      INFO(r.err);
      REQUIRE_FALSE(r.timed_out);
      REQUIRE(r.exited);
      REQUIRE(r.exit_code == 0);
      n = activities(truth);
      CHECK(n < 100000);
      if (n >= 1) break;
    }
    CHECK(n >= 1);
  }
}

TEST_CASE("a second CUPTI client, alone in its process, gets what was launched while it was on",
          "[simgpu][cupti_client]") {
  TempDir dir;
  const std::string scenario = WriteFile(dir, "s.json", R"({"processes": [{"name": "p",
    "threads": [{"name": "main", "ops": [
      {"launch": "before", "us": 5},
      {"sync": "device"},
      {"cupti_client": "start", "kinds": ["kernel", "memcpy", "memset"]},
      {"launch": "during", "us": 5},
      {"memcpy": "HtoD", "bytes": 4096, "us": 2},
      {"memset": 0, "bytes": 64, "us": 1},
      {"sync": "device"},
      {"cupti_client": "stop"},
      {"launch": "after", "us": 5}]}]}]})");
  const std::string truth_path = dir.File("truth.json");
  const Outcome outcome = RunSimgpu({scenario, "--truth", truth_path});
  INFO(outcome.output);
  REQUIRE(outcome.status == 0);
  const nlohmann::json process = ReadJson(truth_path)["processes"][0];
  // Without gpuattr nobody registered a timestamp callback: the client's times are on CUPTI's
  // default clock (CLOCK_REALTIME), one offset from the truth's per buffer it received.
  CheckCuptiClientRecords(process);
  // The kernel, the copy and the set between start and stop; not "before" or "after".
  CHECK(process["cupti_client"]["launched_while_on"].size() == 3);
}
