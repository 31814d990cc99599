// Kineto import of a torch.compile'd program: Inductor's `## Call CompiledFxGraph KEY ##` around
// each graph call is a range, and with the kernel maps a live run kept (gpuattr run
// --kernel-maps), whose lines name each graph as torch.profiler does, its launches are placed by
// module and phase as in the live run; a call under a key they do not name is matched to a map by
// its kernels; without maps, or matching none, the launches stay on the graph's call.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "import_test_util.h"
#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

using nlohmann::json;
using test_support::TempDir;
using Path = std::vector<std::string>;

const std::string kForwardCall = "## Call CompiledFxGraph fxf ##";
const std::string kBackwardCall = "## Call CompiledFxGraph fxb ##";
const std::string kOtherKeyCall = "## Call CompiledFxGraph fxo ##";
const std::string kUnmatchedCall = "## Call CompiledFxGraph fxu ##";

// A root module call around the forward graph, its backward graph's call on the autograd thread,
// the forward graph under a key the maps do not name (another process's), and a call whose
// kernels are no map's; each launch one kernel.
std::string Trace() {
  json events = json::array();
  const auto range = [&](const char* cat, const std::string& name, int tid, double ts, double dur) {
    events.push_back({{"ph", "X"},
                      {"cat", cat},
                      {"name", name},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", ts},
                      {"dur", dur}});
  };
  int correlation = 0;
  const auto launch = [&](int tid, double ts, const std::string& kernel) {
    ++correlation;
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", ts},
                      {"dur", 1},
                      {"args", {{"correlation", correlation}}}});
    events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", kernel},
                      {"pid", 0},
                      {"tid", 7},
                      {"ts", ts + 50},
                      {"dur", 2},
                      {"args", {{"device", 0}, {"stream", 7}, {"correlation", correlation}}}});
  };
  range("python_function", "nn.Module: Gpt_0", 1, 100, 100);
  range("cpu_op", kForwardCall, 1, 110, 80);
  launch(1, 120, "triton_poi_fused_gelu_0");
  launch(1, 130, "sm90_xmma_gemm_f32f32");
  range("cpu_op", kBackwardCall, 2, 300, 50);
  launch(2, 310, "triton_poi_fused_gelu_backward_1");
  range("cpu_op", kOtherKeyCall, 1, 400, 50);
  launch(1, 410, "triton_poi_fused_gelu_0");
  launch(1, 420, "sm90_xmma_gemm_f32f32");
  range("cpu_op", kUnmatchedCall, 1, 500, 50);
  launch(1, 510, "triton_poi_fused_gelu_0");
  launch(1, 520, "triton_poi_fused_gelu_0");
  return json{{"traceEvents", events}}.dump();
}

std::string Maps() {
  const std::string head = R"({"format":"gpuattr.kernel_map/1","graph":"g","root_class":"Gpt",)"
                           R"("root":"nn.Module: Gpt_0",)";
  return head +
         R"("range":"torch.compile: g forward","calls":[)"
         R"({"kernel":"triton_poi_fused_gelu_0","generated":true,"phase":"forward",)"
         R"("modules":["","h.0","h.0.mlp"]},)"
         R"({"kernel":"extern_kernels.mm","generated":false,"phase":"forward",)"
         R"("modules":["","h.0","h.0.mlp","h.0.mlp.c_proj"]}]})"
         "\n" +
         head +
         R"("range":"torch.compile: h backward","calls":[)"
         R"({"kernel":"triton_poi_fused_gelu_backward_1","generated":true,)"
         R"("phase":"backward","modules":["","h.0","h.0.mlp"]}]})"
         "\n" +
         R"({"format":"gpuattr.kernel_map/1","graph":"g","range":"torch.compile: g forward",)"
         R"("profiler_range":")" +
         kForwardCall + "\"}\n" +
         R"({"format":"gpuattr.kernel_map/1","graph":"h","range":"torch.compile: h backward",)"
         R"("profiler_range":")" +
         kBackwardCall + "\"}\n";
}

std::vector<Path> PathsOf(const Imported& imported) {
  std::vector<Path> paths;
  for (const json& activity : imported.activities) paths.push_back(activity["path"]);
  return paths;
}

TEST_CASE("Kineto import with kernel maps: a compiled graph's launches by module and phase",
          "[import][kineto]") {
  TempDir dir;
  test_support::WriteFile(dir.File("trace.json"), Trace());
  test_support::WriteFile(dir.File("maps.jsonl"), Maps());
  const Imported imported =
      ImportPaths({dir.File("trace.json")}, "annotations", dir.File("maps.jsonl"));
  const std::vector<Path> paths = PathsOf(imported);
  REQUIRE(paths.size() == 7);
  CHECK(paths[0] == Path{"nn.Module: Gpt_0", kForwardCall, "nn.Module: h.0", "nn.Module: h.0.mlp"});
  CHECK(paths[1] == Path{"nn.Module: Gpt_0", kForwardCall, "nn.Module: h.0", "nn.Module: h.0.mlp",
                         "nn.Module: h.0.mlp.c_proj"});
  // No module range around the backward graph's call here: its root is named by class.
  CHECK(paths[2] == Path{kBackwardCall, "nn.Module: Gpt_0", "nn.Module: h.0", "nn.Module: h.0.mlp",
                         "backward"});
  CHECK(imported.activities[2]["phase"] == "backward");
  // Another key, the forward graph's kernels: its map's, its root named by class.
  CHECK(paths[3] ==
        Path{kOtherKeyCall, "nn.Module: Gpt_0", "nn.Module: h.0", "nn.Module: h.0.mlp"});
  CHECK(paths[4] == Path{kOtherKeyCall, "nn.Module: Gpt_0", "nn.Module: h.0", "nn.Module: h.0.mlp",
                         "nn.Module: h.0.mlp.c_proj"});
  // Twice the forward graph's one generated kernel: no map's calls.
  CHECK(paths[5] == Path{kUnmatchedCall});
  CHECK(paths[6] == Path{kUnmatchedCall});
}

TEST_CASE("Kineto import without kernel maps: a compiled graph's launches stay on its call",
          "[import][kineto]") {
  TempDir dir;
  test_support::WriteFile(dir.File("trace.json"), Trace());
  const std::vector<Path> paths = PathsOf(ImportPaths({dir.File("trace.json")}));
  REQUIRE(paths.size() == 7);
  CHECK(paths[0] == Path{"nn.Module: Gpt_0", kForwardCall});
  CHECK(paths[2] == Path{kBackwardCall});
}

TEST_CASE("Kineto import refuses kernel maps it cannot open", "[import][kineto]") {
  TempDir dir;
  test_support::WriteFile(dir.File("trace.json"), Trace());
  ImportOptions options;
  options.files = {dir.File("trace.json")};
  options.analysis.kernel_maps = dir.File("missing.jsonl");
  const StatusOr<ImportResult> result = BuildImportReport(options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().message().find("missing.jsonl") != std::string::npos);
}

}  // namespace
}  // namespace gpuattr::collector::testing
