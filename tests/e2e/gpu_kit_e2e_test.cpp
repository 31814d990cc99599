// The real-GPU kit's comparison (tests/gpu/compare.py, docs/gpu-validation.md) on what it will
// read after a GPU run, made here on the simulated GPU: reports of the scenarios that mirror the
// PyTorch scripts (gpu_course_block for torch_lesson, autograd_threads for torch_train,
// graph_microstep for torch_train_graph; two_streams_overlap and graph_microstep again as gpu_probe
// runs, with the simulator's truth in gpu_probe's format) under `gpuattr run`, torch.profiler's
// side as a Kineto trace of the same kernels imported with `gpuattr import`, step-time truths,
// and cupti_questions' output in tests/gpu/fixtures. Each check must pass, fail or stay `not run`
// exactly when its inputs say so.
#include <cxxabi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "gpu_kit_compare.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;
using test_support::WriteFile;

// Microseconds with exactly three decimals, as a JSON number token: the importer reads the
// decimal text, so the nanoseconds survive exactly.
std::string Microseconds(uint64_t ns) {
  const std::string fraction = std::to_string(1000 + ns % 1000).substr(1);
  return std::to_string(ns / 1000) + "." + fraction;
}

// The truth's kernels as torch.profiler's chrome trace would list them; kernels whose name
// contains `stretched` last `stretch_percent` % of their true duration.
std::string KinetoTrace(const json& truth, const std::string& stretched = "",
                        uint64_t stretch_percent = 100) {
  std::string events;
  for (const json& process : truth["processes"]) {
    for (const json& a : process["activities"]) {
      if (a["kind"] != "kernel") continue;
      const std::string name = a["name"];
      uint64_t duration = a["end_ns"].get<uint64_t>() - a["start_ns"].get<uint64_t>();
      if (!stretched.empty() && name.find(stretched) != std::string::npos) {
        duration = duration * stretch_percent / 100;
      }
      const std::string stream = std::to_string(a["stream"].get<int64_t>());
      events += std::string(events.empty() ? "" : ",\n") + R"({"ph":"X","cat":"kernel","name":)" +
                json(name).dump() + R"(,"pid":0,"tid":)" + stream + R"(,"ts":)" +
                Microseconds(a["start_ns"]) + R"(,"dur":)" + Microseconds(duration) +
                R"(,"args":{"device":0,"stream":)" + stream + R"(,"correlation":)" +
                std::to_string(a["correlation_id"].get<uint64_t>()) + "}}";
    }
  }
  return "{\"traceEvents\":[\n" + events + "\n]}\n";
}

// Runs `scenario` under gpuattr into OUT/NAME.report.json; with `profiler`, also imports the
// Kineto trace of its truth into OUT/NAME.import.json.
void MakeRun(const TempDir& dir, const std::string& out, const std::string& name,
             const std::string& scenario, bool profiler, const std::string& stretched = "",
             uint64_t stretch_percent = 100) {
  const auto [report, truth] = RunScenario(dir, std::string(GPUATTR_SCENARIO_DIR) + "/" + scenario);
  WriteFile(out + "/" + name + ".report.json", report.dump());
  if (!profiler) return;
  const std::string trace = out + "/" + name + ".torch_trace.json";
  WriteFile(trace, KinetoTrace(truth, stretched, stretch_percent));
  const ProcessResult imported = RunProcess(
      {GPUATTR_BIN, "import", "--quiet", trace, "-o", out + "/" + name + ".import.json"});
  INFO(imported.err);
  REQUIRE(ExitStatus(imported) == 0);
}

// A kernel's bare function name, as gpu_probe names its operations: `_Z7computePfi` is `compute`.
std::string FunctionName(const std::string& mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  const std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  return name.substr(0, name.find('('));
}

// The simulator's truth in gpu_probe's format: one op per kind, kernel name and range path, with
// its count and summed device time as the "event" time.
std::string ProbeTruth(const json& truth) {
  std::map<std::string, json> ops;
  std::string launch_path;
  for (const json& a : truth["processes"][0]["activities"]) {
    std::string path;
    for (const json& part : a["range_path"])
      path += (path.empty() ? "" : "/") + part.get<std::string>();
    const bool captured = a["attribution"] == "captured";
    const std::string name = FunctionName(a["name"]);
    json& op = ops[a["kind"].get<std::string>() + "|" + name + "|" + path];
    if (op.is_null()) {
      op = {{"kind", a["kind"]}, {"name", name}, {"path", path},        {"stream", "0"},
            {"count", 0},        {"ms", 0.0},    {"captured", captured}};
    }
    op["count"] = op["count"].get<int>() + 1;
    op["ms"] =
        op["ms"].get<double>() +
        static_cast<double>(a["end_ns"].get<uint64_t>() - a["start_ns"].get<uint64_t>()) / 1e6;
    if (captured) {
      launch_path.clear();
      for (const json& part : a["launch_path"]) {
        launch_path += (launch_path.empty() ? "" : "/") + part.get<std::string>();
      }
    }
  }
  json out = {{"program", "gpu_probe"}, {"ops", json::array()}};
  for (const auto& [key, op] : ops) out["ops"].push_back(op);
  if (!launch_path.empty()) out["graph_launch_path"] = launch_path;
  return out.dump() + "\n";
}

// `scenario` under gpuattr with --activities, as gpu-check.sh runs gpu_probe: OUT/NAME.report.json,
// NAME.activities.jsonl and NAME.truth.json (the simulator's truth as gpu_probe would print it).
void MakeProbeRun(const TempDir& dir, const std::string& out, const std::string& name,
                  const std::string& scenario) {
  const std::string truth_path = dir.File(name + ".simgpu-truth.json");
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", out + "/" + name + ".report.json",
                  "--activities", out + "/" + name + ".activities.jsonl", "--", SIMGPU_RUN,
                  std::string(GPUATTR_SCENARIO_DIR) + "/" + scenario, "--truth", truth_path});
  INFO(run.err);
  REQUIRE(ExitStatus(run) == 0);
  WriteFile(out + "/" + name + ".truth.json", ProbeTruth(ReadJson(truth_path)));
}

void WriteStepTruth(const std::string& path, double step_median_ms) {
  WriteFile(path, "{\"step_median_ms\":" + std::to_string(step_median_ms) + "}\n");
}

json CuptiQuestionsExample() {
  return ReadJson(GPUATTR_SOURCE_DIR "/tests/gpu/fixtures/cupti_questions.example.json");
}

TEST_CASE(
    "compare.py passes the simulated runs that agree with their own truths and profiler traces",
    "[e2e][gpu-kit]") {
  TempDir dir;
  const std::string out = dir.File("out");
  REQUIRE(std::filesystem::create_directories(out));
  MakeRun(dir, out, "torch_lesson", "gpu_course_block.json", /*profiler=*/true);
  MakeRun(dir, out, "torch_train", "autograd_threads.json", /*profiler=*/true);
  MakeRun(dir, out, "torch_train_graph", "graph_microstep.json", /*profiler=*/false);
  MakeProbeRun(dir, out, "gpu_probe_streams", "two_streams_overlap.json");
  MakeProbeRun(dir, out, "gpu_probe_graph", "graph_microstep.json");
  WriteStepTruth(out + "/torch_train.bare.truth.json", 10.0);
  WriteStepTruth(out + "/torch_train.truth.json", 10.15);
  WriteFile(out + "/cupti_questions.json", CuptiQuestionsExample().dump());

  const Summary summary = Compare(out);
  CHECK(summary.exit_status == 0);
  int family_rows = 0;
  for (const auto& [check, row] : summary.rows) {
    INFO(check << ": " << row.dump());
    CHECK(row["result"] != "FAIL");
    family_rows += check.rfind("torch_lesson: ", 0) == 0 &&
                   check.find("vectorized_elementwise") != std::string::npos;
  }
  CHECK(family_rows == 4);  // mul, add, gelu, clamp: each compared with the profiler's
  CHECK(Result(summary, "torch_lesson: cublas_gemm") == "pass");
  CHECK(Result(summary, "torch_lesson: families in only one report") == "pass");
  CHECK(Result(summary, "torch_train: families in only one report") == "pass");
  // autograd_threads: the backward kernels come from a thread with no ranges; inheritance
  // attributes all of them.
  CHECK(Result(summary, "torch_train: coverage.by_phase.backward") == "pass");
  CHECK(summary.rows.at("torch_train: coverage.by_phase.backward")["value"] == 1.0);
  CHECK(Result(summary, "torch_train_graph: captured_ns / kernel_ns") == "pass");
  // gpu_course_block: eager 1.512 ms against fused 0.410 ms.
  CHECK(Result(summary, "torch_lesson: eager/fused device time") == "pass");
  CHECK(summary.rows.at("torch_lesson: eager/fused device time")["value"].get<double>() ==
        Approx(1512.0 / 410.0).epsilon(1e-9));
  CHECK(Result(summary, "torch_train: per-step overhead (10.000 -> 10.150 ms)") == "pass");
  // The probe runs against their truths: two kernels and two copies on two overlapping streams,
  // and graph kernels under four capture ranges, each count exact.
  int probe_counts = 0;
  for (const auto& [check, row] : summary.rows) {
    if (check.rfind("gpu_probe_", 0) == 0 && check.size() > 7 &&
        check.substr(check.size() - 7) == ": count") {
      ++probe_counts;
      CHECK(row["result"] == "pass");
    }
  }
  CHECK(probe_counts ==
        4 + 5);  // streams: compute, side, HtoD, DtoH; graph: 5 kernel names by range
  CHECK(Result(summary, "gpu_probe_streams: device 0 busy_ns = union of its activities") == "pass");
  CHECK(Result(summary, "gpu_probe_graph: device 0 busy_ns = union of its activities") == "pass");
  CHECK(Result(summary, "gpu_probe_chevron: activities against the program's truth") == "not run");
  // What the directory lacks is `not run`, never passed.
  CHECK(Result(summary, "gpu_probe_all: captured share of kernel time") == "not run");
  CHECK(Result(summary, "gpu_probe_steps: per-step overhead") == "not run");
  CHECK(Result(summary, "torch_lesson: per-step overhead") == "not run");
  // The simulator's own assumptions, in cupti_questions' format, agree with themselves.
  CHECK(Result(summary, "§10.1 <<<>>> enters __cudaLaunchKernel (505), not 211 (simgpu: 505)") ==
        "pass");
  CHECK(Result(summary,
               "§10.3 graph kernel graphNodeId is the instantiated clone's (simgpu: clone)") ==
        "pass");
  CHECK(Result(summary, "§10.4 kernel `completed` equals `end` (simgpu: equal)") == "pass");
  CHECK(Result(summary, "§10.8 chaining through cuptiNvtxInitialize2 beside one's own handler") ==
        "recorded");
}

TEST_CASE(
    "compare.py fails a family 5 % off, a 3 % step overhead, a lost kernel, a busy time 1 ns off, "
    "a graph kernel not captured and a simulator assumption the GPU refutes",
    "[e2e][gpu-kit]") {
  TempDir dir;
  const std::string out = dir.File("out");
  REQUIRE(std::filesystem::create_directories(out));
  // torch.profiler's gelu kernels 5 % longer than gpuattr's.
  MakeRun(dir, out, "torch_lesson", "gpu_course_block.json", /*profiler=*/true,
          "GeluCUDAKernelImpl", 105);
  WriteStepTruth(out + "/torch_lesson.bare.truth.json", 10.0);
  WriteStepTruth(out + "/torch_lesson.truth.json", 10.3);
  json questions = CuptiQuestionsExample();
  json& launch = questions["answers"]["launch_callbacks"]["lines"][0]["<<<>>>"];
  launch["nested_driver_same_corr"] = nullptr;  // a real driver with no nested launch callback
  launch["runtime_cbids_entered"] = json::array({211, 505});  // both fire: a double count
  questions["answers"]["nvtx_chain"]["child"] = {
      {"exit", nullptr}, {"signal", 11}, {"timed_out", false}, {"lines", json::array()}};
  WriteFile(out + "/cupti_questions.json", questions.dump());

  // A kernel record lost between the device and the report, and a busy time off by 1 ns.
  MakeProbeRun(dir, out, "gpu_probe_streams", "two_streams_overlap.json");
  const std::string activities_path = out + "/gpu_probe_streams.activities.jsonl";
  std::string activities = test_support::ReadFile(activities_path);
  const size_t side_kernel = activities.find("\"name\":\"side(float*, int)\"");
  REQUIRE(side_kernel != std::string::npos);
  const size_t line_start = activities.rfind('\n', side_kernel) + 1;
  activities.erase(line_start, activities.find('\n', side_kernel) + 1 - line_start);
  WriteFile(activities_path, activities);
  json probe_report = ReadJson(out + "/gpu_probe_streams.report.json");
  json& busy = probe_report["processes"][0]["devices"][0]["busy_ns"];
  busy = busy.get<uint64_t>() + 1;
  WriteFile(out + "/gpu_probe_streams.report.json", probe_report.dump());

  // One graph kernel attributed as if launched directly.
  MakeProbeRun(dir, out, "gpu_probe_graph", "graph_microstep.json");
  const std::string graph_path = out + "/gpu_probe_graph.activities.jsonl";
  std::string graph_activities = test_support::ReadFile(graph_path);
  const size_t captured = graph_activities.find("\"attribution\":\"captured\"");
  REQUIRE(captured != std::string::npos);
  graph_activities.replace(captured, std::string("\"attribution\":\"captured\"").size(),
                           "\"attribution\":\"direct\"");
  WriteFile(graph_path, graph_activities);

  const Summary summary = Compare(out);
  CHECK(summary.exit_status == 1);
  int captured_rows = 0, captured_failures = 0;
  for (const auto& [check, row] : summary.rows) {
    if (check.find(": captured, launched under train_step") == std::string::npos) continue;
    ++captured_rows;
    captured_failures += row["result"] == "FAIL" ? 1 : 0;
  }
  CHECK(captured_rows == 6);
  CHECK(captured_failures == 1);
  CHECK(Result(summary, "gpu_probe_streams: side under step: count") == "FAIL");
  CHECK(Result(summary, "gpu_probe_streams: compute under step: count") == "pass");
  CHECK(Result(summary, "gpu_probe_streams: device 0 busy_ns = union of its activities") == "FAIL");
  CHECK(Result(summary, "torch_lesson: vectorized_elementwise_kernel<GeluCUDAKernelImpl>") ==
        "FAIL");
  CHECK(Result(summary, "torch_lesson: vectorized_elementwise_kernel<MulFunctor>") == "pass");
  CHECK(Result(summary, "torch_lesson: per-step overhead (10.000 -> 10.300 ms)") == "FAIL");
  CHECK(Result(summary, "§10.1 <<<>>> enters __cudaLaunchKernel (505), not 211 (simgpu: 505)") ==
        "FAIL");
  CHECK(
      Result(summary,
             "§10.1 nested driver launch callback shares the runtime id (simgpu default: same)") ==
      "FAIL");
  CHECK(Result(summary, "§10.4 kernel `completed` equals `end` (simgpu: equal)") == "pass");
  const auto chain =
      summary.rows.find("§10.8 chaining through cuptiNvtxInitialize2 beside one's own handler");
  REQUIRE(chain != summary.rows.end());
  CHECK(chain->second["value"] == "signal 11");
  CHECK(chain->second["result"] == "recorded");
}

TEST_CASE(
    "compare.py with no outputs, or only what failed programs leave, runs nothing and passes "
    "nothing",
    "[e2e][gpu-kit]") {
  TempDir dir;
  // What a program that refused or crashed leaves behind: an empty truth, a cut-off report.
  WriteFile(dir.File("torch_train.truth.json"), "");
  WriteFile(dir.File("torch_train.bare.truth.json"), "{\"step_median_ms\":");
  WriteFile(dir.File("torch_train.report.json"), "{\"processes\": [");
  // cupti_questions where CUPTI would not subscribe: every child answers with its errors only.
  json questions = {{"answers", json::object()}};
  for (const char* question :
       {"launch_callbacks", "memcpy_correlation", "graphs", "graph_trace", "completed",
        "buffer_threads", "register_twice", "reattach", "nvtx_slot"}) {
    questions["answers"][question] = {
        {"exit", 0},
        {"signal", nullptr},
        {"timed_out", false},
        {"lines",
         {{{"question", question},
           {"errors", {"cuptiSubscribe(...) = 999 CUPTI_ERROR_UNKNOWN"}}}}}};
  }
  WriteFile(dir.File("cupti_questions.json"), questions.dump());
  const Summary summary = Compare(dir.path());
  CHECK(summary.exit_status == 0);
  REQUIRE_FALSE(summary.rows.empty());
  for (const auto& [check, row] : summary.rows) {
    INFO(check);
    CHECK(row["result"] == "not run");
    CHECK(row["value"].is_null());
  }
}

}  // namespace
}  // namespace gpuattr::e2e
