#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>

#include "import/kineto_importer.h"
#include "import_test_util.h"
#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

using nlohmann::json;
using test_support::TempDir;

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

// Today's schema: a graph launch (1:N), a kernel launch, a memcpy, a memset, a kernel whose
// launch is not in the file, and a cuda_sync on a stream.
constexpr char kCurrent[] = R"J({
  "distributedInfo": {"backend": "nccl", "rank": 1},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11,
   "ts": 1000.000, "dur": 900},
  {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 10, "tid": 11, "ts": 1010, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1020, "dur": 10},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11,
   "ts": 1021.5, "dur": 3, "args": {"cbid": 211, "correlation": 5}},
  {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 1030.001, "dur": 2.5,
   "args": {"device": 0, "stream": 7, "correlation": 5, "grid": [4, 2, 1], "block": [128, 1, 1],
            "shared memory": 1024, "registers per thread": 32}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuGraphLaunch", "pid": 10, "tid": 11,
   "ts": 1050, "dur": 4, "args": {"correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "graph_k1", "pid": 0, "tid": 7, "ts": 1060, "dur": 1,
   "args": {"device": 0, "stream": 7, "correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "graph_k2", "pid": 0, "tid": 7, "ts": 1061, "dur": 1,
   "args": {"device": 0, "stream": 7, "correlation": 9}},
  {"ph": "X", "cat": "kernel", "name": "graph_k3", "pid": 0, "tid": 8, "ts": 1061.5, "dur": 1,
   "args": {"device": 0, "stream": 8, "correlation": 9}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 10, "tid": 11,
   "ts": 1200, "dur": 5, "args": {"correlation": 12}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
   "ts": 1210, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 12, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
   "ts": 1220, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 13, "bytes": 64}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1230, "dur": 50,
   "args": {"device": 0, "stream": 7, "correlation": 14}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "forward", "pid": 0, "tid": 7, "ts": 1030, "dur": 40},
  {"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 1300, "dur": 2,
   "args": {"device": 0, "stream": 7, "correlation": 99}},
  {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "args": {"name": "python"}}
]})J";

TEST_CASE("Kineto import: launches join by correlation id, graphs 1:N, orphans stay",
          "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "trace.json", kCurrent)});
  const json& report = imported.report;
  CHECK(report["capture"]["mode"] == "import");
  CHECK(report["capture"]["source"]["format"] == "kineto");
  // Relative µs without baseTimeNanoseconds: no wall time, no named clock; never this host.
  CHECK(report["capture"]["started_at"] == nullptr);
  CHECK(report["capture"]["clock"] == nullptr);
  CHECK(report["capture"]["host"] == nullptr);
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  CHECK(process["pid"] == 10);
  CHECK(process["rank"] == 1);
  CHECK(process["totals"]["kernels"] == 5);
  CHECK(process["totals"]["memcpys"] == 1);
  CHECK(process["totals"]["memsets"] == 1);
  REQUIRE(imported.activities.size() == 7);  // cuda_sync and gpu_user_annotation are not work

  const auto gemm = Where(imported.activities, "name", "gemm_kernel");
  REQUIRE(gemm.size() == 1);
  CHECK(gemm[0]["start_ns"] == 1030001);
  CHECK(gemm[0]["end_ns"] == 1032501);
  CHECK(gemm[0]["launch_ns"] == 1021500);
  CHECK(gemm[0]["path"] == json::array({"ProfilerStep#3", "forward"}));
  CHECK(gemm[0]["attribution"] == "direct");

  const auto graph = Where(imported.activities, "correlation_id", 9);
  REQUIRE(graph.size() == 3);
  for (const json& kernel : graph) {
    CHECK(kernel["launch_ns"] == 1050000);
    CHECK(kernel["path"] == json::array({"ProfilerStep#3", "forward"}));
  }
  const auto orphan = Where(imported.activities, "name", "orphan_kernel");
  REQUIRE(orphan.size() == 1);
  CHECK(orphan[0]["attribution"] == "none");
  CHECK(orphan[0]["reason"] == "launch_not_seen");
  // The memset's launch is not in the file either.
  CHECK(Where(imported.activities, "kind", "memset")[0]["reason"] == "launch_not_seen");
  bool saw_reason = false;
  for (const json& entry : process["coverage"]["unattributed"]) {
    if (entry["reason"] == "launch_not_seen") {
      saw_reason = true;
      CHECK(entry["activities"] == 2);
      CHECK(entry["ns"] == 3000);
    }
  }
  CHECK(saw_reason);

  const json& device = process["devices"][0];
  CHECK(device["first_start_ns"] == 1030001);
  CHECK(device["last_end_ns"] == 1302000);
}

TEST_CASE("Kineto import: --ranges ops adds cpu_op ranges", "[import][kineto]") {
  TempDir dir;
  const std::string path = Write(dir, "trace.json", kCurrent);
  const auto by_default = Where(ImportPaths({path}).activities, "name", "gemm_kernel");
  const auto with_ops = Where(ImportPaths({path}, "ops").activities, "name", "gemm_kernel");
  REQUIRE(by_default.size() == 1);
  REQUIRE(with_ops.size() == 1);
  CHECK(by_default[0]["path"] == json::array({"ProfilerStep#3", "forward"}));
  CHECK(with_ops[0]["path"] == json::array({"ProfilerStep#3", "forward", "aten::mm"}));
}

// The 2021 schema: capitalised categories, ProfilerStep as an Operator, and the correlation
// carried by "async" flows only.
constexpr char k2021[] = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 20, "tid": 21, "ts": 100, "dur": 500},
  {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 20, "tid": 21, "ts": 110, "dur": 20},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 20, "tid": 21, "ts": 115, "dur": 4},
  {"ph": "s", "cat": "async", "id": 77, "pid": 20, "tid": 21, "ts": 115, "name": "launch"},
  {"ph": "X", "cat": "Kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 130, "dur": 3,
   "args": {"device": 0, "stream": 7}},
  {"ph": "f", "cat": "async", "id": 77, "pid": 0, "tid": 7, "ts": 130, "name": "launch", "bp": "e"},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH", "pid": 0, "tid": 7, "ts": 140, "dur": 2,
   "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "Memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 150, "dur": 1,
   "args": {"device": 0, "stream": 7}}
]})";

TEST_CASE("Kineto import: the 2021 schema and async flows", "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "old.json", k2021)});
  const json& process = imported.report["processes"][0];
  CHECK(process["pid"] == 20);
  CHECK(process["rank"] == nullptr);
  CHECK(process["totals"]["kernels"] == 1);
  CHECK(process["totals"]["memcpys"] == 1);
  CHECK(process["totals"]["memsets"] == 1);
  const auto kernel = Where(imported.activities, "name", "add_kernel");
  REQUIRE(kernel.size() == 1);
  CHECK(kernel[0]["correlation_id"] == 77);
  CHECK(kernel[0]["path"] == json::array({"ProfilerStep#1"}));
  CHECK(process["passes"][0]["name"] == "ProfilerStep#*");  // the pass of every step
}

// The 2021 schema as Kineto wrote it: tids (and here a pid) as strings, GPU rows named
// "stream N", correlation carried by the flows only.
constexpr char k2021StringIds[] = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#4", "pid": "20", "tid": "21", "ts": 100,
   "dur": 500},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 20, "tid": "21", "ts": 115,
   "dur": 4},
  {"ph": "s", "cat": "async", "id": 78, "pid": 20, "tid": "21", "ts": 115, "name": "launch"},
  {"ph": "X", "cat": "Kernel", "name": "add_kernel", "pid": 0, "tid": "stream 7", "ts": 130,
   "dur": 3, "args": {"device": 0, "stream": 7}},
  {"ph": "f", "cat": "async", "id": 78, "pid": 0, "tid": "stream 7", "ts": 130, "name": "launch",
   "bp": "e"}
]})";

TEST_CASE("Kineto import: 2021 string tids keep runtime calls, flows and steps",
          "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "strings.json", k2021StringIds)});
  REQUIRE(imported.report["processes"].size() == 1);
  const json& process = imported.report["processes"][0];
  CHECK(process["pid"] == 20);
  CHECK(process["totals"]["kernels"] == 1);
  const auto kernel = Where(imported.activities, "name", "add_kernel");
  REQUIRE(kernel.size() == 1);
  CHECK(kernel[0]["correlation_id"] == 78);
  CHECK(kernel[0]["thread"] == "21");  // a thread without a name: its tid
  CHECK(kernel[0]["path"] == json::array({"ProfilerStep#4"}));
  CHECK(process["coverage"]["attributed_fraction"] == 1.0);
}

// What Debian's python3-torch 1.13 (built without Kineto) writes from torch.profiler: the
// legacy autograd profiler's list, abridged from a real export.
constexpr char kLegacyList[] = R"([
  {"name": "## forward ##", "ph": "X", "ts": 255, "dur": 1094, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "aten::linear", "ph": "X", "ts": 441, "dur": 610, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "## backward ##", "ph": "X", "ts": 1400, "dur": 900, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "autograd::engine::evaluate_function: AddmmBackward0", "ph": "X", "ts": 1500, "dur": 300, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "gemm", "ph": "X", "ts": 460, "dur": 20, "tid": 0, "pid": "CUDA functions", "args": {}},
  {"name": "launch", "ph": "s", "ts": 450, "tid": 1, "pid": "CPU functions", "id": 5, "cat": "cpu_to_cuda", "args": {}}
])";

TEST_CASE("Kineto import: the legacy autograd profiler list gives host ranges and a refusal",
          "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "legacy.json", kLegacyList)});
  CHECK(imported.report["capture"]["source"]["format"] == "autograd_legacy");
  CHECK(imported.report["capture"]["source"]["unused_events"] ==
        json({{"(no category)", 1}, {"cpu_to_cuda", 1}}));
  REQUIRE(imported.report["processes"].size() == 1);
  const json& process = imported.report["processes"][0];
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  CHECK(process["refusals"][0]["code"] == "legacy_profiler_trace");
  CHECK(process["totals"]["kernel_ns"] == nullptr);
  CHECK(process["devices"] == nullptr);
  // Every "CPU functions" event is a range (the list cannot tell annotations from ops).
  const json& passes = process["passes"];
  REQUIRE(passes.size() == 2);
  CHECK(passes[0]["name"] == "## forward ##");
  CHECK(passes[0]["host_ns"]["total"] == 1094000);
  CHECK(passes[0]["children"][0]["name"] == "aten::linear");
  CHECK(passes[1]["name"] == "## backward ##");
  CHECK(imported.activities.empty());
}

TEST_CASE("Kineto import: an op is never auto-detected as the step, in the legacy list or with ops",
          "[import][kineto]") {
  TempDir dir;
  // Three top-level aten::zeros and two ProfilerStep instances: the steps are the two.
  const std::string legacy = Write(dir, "legacy_steps.json", R"([
  {"name": "aten::zeros", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "ProfilerStep#1", "ph": "X", "ts": 10, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "aten::zeros", "ph": "X", "ts": 61, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "ProfilerStep#2", "ph": "X", "ts": 70, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}},
  {"name": "aten::zeros", "ph": "X", "ts": 121, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}}
])");
  const Imported legacy_import = ImportPaths({legacy});
  const json& steps = legacy_import.report["processes"][0]["steps"];
  REQUIRE(steps.is_object());
  CHECK(steps["range"] == "ProfilerStep#*");
  CHECK(steps["rows"].size() == 2);
  // Ops alone repeat: no step, rather than aten::zeros (with --ranges ops as well).
  const std::string ops_only = Write(dir, "ops_only.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": 3, "tid": 3, "ts": 0, "dur": 2},
    {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 3, "tid": 3, "ts": 5,
     "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": 3, "tid": 3, "ts": 20, "dur": 2}]})");
  const Imported ops_import = ImportPaths({ops_only}, "ops");
  const json& process = ops_import.report["processes"][0];
  CHECK(process["steps"].is_null());
  CHECK(process["steps_reason"] == "no top-level range has two or more instances");
}

TEST_CASE("Kineto import: a trace without device activity has null device time and a refusal",
          "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "cpu.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 3, "tid": 3, "ts": 0,
     "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 3, "tid": 3, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "python_function", "name": "train.py(3): step", "pid": 3, "tid": 3,
     "ts": 0, "dur": 10},
    {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "python"}}]})")});
  CHECK(imported.report["capture"]["source"]["format"] == "kineto");
  CHECK(imported.report["capture"]["source"]["unused_events"] ==
        json({{"(no category)", 1}, {"cpu_op", 1}, {"python_function", 1}}));
  const json& process = imported.report["processes"][0];
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  CHECK(process["refusals"][0]["code"] == "no_device_activity_in_trace");
  CHECK(process["totals"]["kernel_ns"] == nullptr);
  CHECK(process["coverage"]["attributed_fraction"] == nullptr);
}

TEST_CASE("Kineto import: device names come from deviceProperties", "[import][kineto]") {
  TempDir dir;
  const Imported imported = ImportPaths({Write(dir, "named.json", R"({
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132},
                         {"id": 1, "name": ""}, {"name": "no id"}],
    "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 5, "dur": 1,
     "args": {"device": 1, "stream": 7}}]})")});
  const json& devices = imported.report["processes"][0]["devices"];
  REQUIRE(devices.size() == 2);
  CHECK(devices[0]["id"] == 0);
  CHECK(devices[0]["name"] == "NVIDIA H100 80GB HBM3");
  CHECK(devices[1]["id"] == 1);
  CHECK(devices[1]["name"] == nullptr);
}

TEST_CASE("Kineto import: a name longer than the wire's limit says it was cut",
          "[import][kineto]") {
  TempDir dir;
  const std::string long_name = "kernel_" + std::string(5123 - 7, 'x');
  const Imported imported = ImportPaths({Write(dir, "long.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": ")" + long_name + R"(", "pid": 0, "tid": 7, "ts": 5,
     "dur": 1, "args": {"device": 0, "stream": 7}}]})")});
  REQUIRE(imported.activities.size() == 1);
  const std::string name = imported.activities[0]["name"];
  const std::string mark = "…[cut at 4096 bytes]";
  CHECK(name == long_name.substr(0, 4096) + mark);
  const std::string family = imported.report["processes"][0]["families"][0]["family"];
  CHECK(family.ends_with(mark));
}

TEST_CASE("Kineto import: a file with no usable event is a data error", "[import][kineto]") {
  TempDir dir;
  ImportOptions options;
  options.files = {Write(dir, "useless.json", R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "python"}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 4, "dur": 2}
  ]})")};
  StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kDataLoss);
  CHECK(result.status().message() ==
        options.files[0] +
            ": no event gpuattr can use (no device work, runtime call or range; unused events: "
            "(no category) 1, cuda_sync 2)");
}

TEST_CASE("Kineto import: the same file given twice is refused, through any path",
          "[import][kineto]") {
  TempDir dir;
  const std::string path = Write(dir, "rank.json", k2021);
  const std::string link = dir.File("link.json");
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  for (const std::string& again : {path, link}) {
    ImportOptions options;
    options.files = {path, again};
    StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
    CHECK(result.status().message().find("is the same file as " + path) != std::string::npos);
  }
}

TEST_CASE("Kineto import: kernels launched before the trace's CPU side are not held against it",
          "[import][kineto]") {
  TempDir dir;
  // Two kernels (correlation 3 and 4) ran before the profiler saw any runtime call (the first
  // is 10); a third (correlation 12) lost its launch inside the capture.
  const Imported imported = ImportPaths({Write(dir, "early.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": 1, "dur": 30,
     "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": 40, "dur": 10,
     "args": {"device": 0, "stream": 7, "correlation": 4}},
    {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 5, "tid": 5, "ts": 100,
     "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 110,
     "dur": 2, "args": {"correlation": 10}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120, "dur": 200,
     "args": {"device": 0, "stream": 7, "correlation": 10}},
    {"ph": "X", "cat": "kernel", "name": "lost", "pid": 0, "tid": 7, "ts": 330, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 12}}]})")});
  const json& coverage = imported.report["processes"][0]["coverage"];
  std::map<std::string, json> reasons;
  for (const json& entry : coverage["unattributed"]) reasons[entry["reason"]] = entry;
  REQUIRE(reasons.count("launched_before_capture") == 1);
  CHECK(reasons["launched_before_capture"]["ns"] == 40000);
  CHECK(reasons["launched_before_capture"]["activities"] == 2);
  CHECK(reasons["launch_not_seen"]["ns"] == 5000);
  // The gate's fraction is over what the trace could attribute: 200 of 205 µs, not of 245.
  CHECK(coverage["attributable_kernel_ns"] == 205000);
  CHECK(coverage["attributed_fraction"].get<double>() == Approx(200.0 / 205.0));
  // The early kernels are busy time all the same.
  CHECK(imported.report["processes"][0]["devices"][0]["busy_ns"] == 245000);
}

TEST_CASE("Kineto import: ranges that do not nest are clipped into their parent",
          "[import][kineto]") {
  TempDir dir;
  const std::string path = Write(dir, "overlap.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "outer", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "crossing", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12,
     "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 14, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  ImportOptions options;
  options.files = {path};
  StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
  REQUIRE(result.ok());
  CHECK(result->clipped_ranges == 1);
  // The launch at 12 µs is after the clipped range's end (10 µs): no range is open.
  const nlohmann::json& process = result->report.without_step_rows["processes"][0];
  CHECK(process["coverage"]["unattributed"][0]["reason"] == "no_open_range");
}

TEST_CASE("Kineto import: one file per rank makes one report, ordered by rank",
          "[import][kineto]") {
  TempDir dir;
  auto rank_file = [&](int rank, int pid) {
    return Write(dir, "rank" + std::to_string(rank) + ".json",
                 R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                      "ts": 5, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 1}},
                     {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )" +
                     std::to_string(pid) + R"(, "tid": 3, "ts": 1, "dur": 1,
                      "args": {"correlation": 1}}],
                    "distributedInfo": {"rank": )" +
                     std::to_string(rank) + "}}");
  };
  const Imported imported = ImportPaths({rank_file(1, 500), rank_file(0, 600)});
  const json& processes = imported.report["processes"];
  REQUIRE(processes.size() == 2);
  CHECK(processes[0]["rank"] == 0);
  CHECK(processes[0]["pid"] == 600);
  CHECK(processes[1]["rank"] == 1);
  CHECK(processes[1]["pid"] == 500);
  CHECK(imported.report["capture"]["source"]["files"].size() == 2);
}

TEST_CASE("Kineto import: events with fields of the wrong type are skipped and counted",
          "[import][kineto]") {
  TempDir dir;
  const std::string path = Write(dir, "odd.json",
                                 R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "5", "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": -5, "dur": 1},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": true, "tid": 1, "ts": 1},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": ")" +
                                     std::string(300, 't') + R"(", "ts": 1},
    {"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 9, "dur": 1}]})");
  ImportOptions options;
  options.files = {path};
  StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
  REQUIRE(result.ok());
  CHECK(result->skipped_events == 4);  // the last: a tid name too long to be given an id
  CHECK(result->report.without_step_rows["processes"][0]["totals"]["kernels"] == 1);
}

TEST_CASE("Kineto import: malformed and missing inputs are data errors", "[import][kineto]") {
  TempDir dir;
  for (const std::string& text :
       {std::string("not json"), std::string(R"({"traceEvents": [{"ph": "X", "cat": )"),
        std::string(R"({"traceEvents": [{"ph" "X"}]})"), std::string(R"({"nothing": 1})")}) {
    INFO(text);
    ImportOptions options;
    options.files = {Write(dir, "bad.json", text)};
    StatusOr<ImportResult> result = BuildImportReport(options, nullptr);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kDataLoss);
    CHECK(result.status().message().find("bad.json") != std::string::npos);
  }
  ImportOptions missing;
  missing.files = {dir.File("absent.json")};
  StatusOr<ImportResult> result = BuildImportReport(missing, nullptr);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gpuattr::collector::testing
