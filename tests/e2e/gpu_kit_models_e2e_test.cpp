// The real-GPU kit's comparison (tests/gpu/compare.py) for whole PyTorch models, on outputs
// made up as a GPU run would leave them: the annotator's module rows against torch.profiler's
// key_averages, the lesson model with its own torch.profiler session under gpuattr run (issue 43),
// and the demo's GPT compiled and replayed from CUDA graphs. Each check must pass, fail or stay
// `not run` exactly when its inputs say so.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_kit_compare.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::TempDir;
using test_support::WriteFile;

TEST_CASE("compare.py holds the annotator's module rows to torch.profiler's key_averages",
          "[e2e][gpu-kit]") {
  // torch_modules.py's two runs of the lesson model, as a GPU would leave them: gpuattr's
  // modules rows, and the profiled run's reference per module path.
  TempDir dir;
  const auto module_row = [](std::vector<std::string> path, uint64_t forward, uint64_t backward,
                             uint64_t recompute) {
    return json{{"path", path},
                {"forward_ns", forward},
                {"backward_ns", backward},
                {"recompute_ns", recompute}};
  };
  const json report = {
      {"processes",
       {{{"modules",
          {module_row({"nn.Module: Lesson_0"}, 1'000'000, 2'000'000, 0),
           module_row({"nn.Module: Lesson_0", "nn.Module: linear"}, 4'000'000, 7'000'000, 0),
           module_row({"nn.Module: Blocks_0", "nn.Module: blocks.2"}, 500'000, 0, 520'000)}}}}}};
  WriteFile(dir.File("torch_modules_lesson.report.json"), report.dump());
  const json reference = {
      {"Lesson_0", {{"forward_ns", 1'050'000}, {"backward_ns", 2'500'000}}},  // 5 %, 20 % off
      {"Lesson_0/linear", {{"forward_ns", 4'000'000}, {"backward_ns", nullptr}}},
      {"Blocks_0/blocks.2", {{"forward_ns", 1'000'000}, {"backward_ns", nullptr}}},
      {"Lesson_0/missing", {{"forward_ns", 10}, {"backward_ns", nullptr}}}};
  WriteFile(dir.File("torch_modules_lesson.profiler.truth.json"),
            json{{"reference", reference}}.dump());

  const Summary summary = Compare(dir.path());
  CHECK(summary.exit_status == 1);
  CHECK(Result(summary, "torch_modules_lesson: Lesson_0 forward (1050000 ns)") == "pass");
  CHECK(Result(summary, "torch_modules_lesson: Lesson_0 backward (2500000 ns)") == "FAIL");
  CHECK(Result(summary, "torch_modules_lesson: Lesson_0/linear forward (4000000 ns)") == "pass");
  // A recomputed module's reference holds its forward and its recompute.
  CHECK(Result(summary, "torch_modules_lesson: Blocks_0/blocks.2 forward (1000000 ns)") == "pass");
  CHECK(Result(summary, "torch_modules_lesson: Lesson_0/missing forward (10 ns)") == "not run");
  CHECK(Result(summary, "torch_modules_checkpointed: module device time vs key_averages") ==
        "not run");
}

// A compiled GPT's report (its Linears' rows, coverage, marks), its activities and a torch.profiler
// trace of its own run, for compare.py's compiled rows.
void WriteCompiledRun(const TempDir& dir, bool every_backward, const std::string& extra_kernel) {
  json modules = json::array();
  for (const char* block : {"0", "1"}) {
    for (const char* linear : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}) {
      const bool backward = every_backward || std::string(linear) != "mlp.c_fc";
      modules.push_back({{"module", std::string("nn.Module: h.") + block + "." + linear},
                         {"forward_ns", 10},
                         {"backward_ns", backward ? 20 : 0}});
    }
  }
  json process = {{"totals", {{"kernel_ns", 1000}}},
                  {"coverage", {{"attributed_fraction", 0.99}}},
                  {"modules", modules},
                  {"marks", json::array()}};
  WriteFile(dir.File("torch_gpt_compiled.report.json"), json({{"processes", {process}}}).dump());
  // The profiled run's trace, imported with the kernel maps: the same rows.
  WriteFile(dir.File("torch_gpt_compiled.import.json"), json({{"processes", {process}}}).dump());
  WriteFile(dir.File("torch_gpt_compiled.activities.jsonl"),
            json({{"name", "triton_poi_fused_add_0"}}).dump() + "\n" +
                json({{"name", "sm90_xmma_gemm"}}).dump() + "\n");
  json events = json::array({{{"cat", "kernel"}, {"name", "triton_poi_fused_add_0"}},
                             {{"cat", "kernel"}, {"name", "sm90_xmma_gemm"}},
                             {{"cat", "cpu_op"}, {"name", "triton_not_a_kernel"}}});
  if (!extra_kernel.empty()) events.push_back({{"cat", "kernel"}, {"name", extra_kernel}});
  WriteFile(dir.File("torch_gpt_compiled.torch_trace.json"),
            json({{"traceEvents", events}}).dump());
}

TEST_CASE("compare.py holds a compiled model's module rows and Triton kernels to their targets",
          "[e2e][gpu-kit]") {
  {
    TempDir dir;
    WriteCompiledRun(dir, /*every_backward=*/true, "");
    const Summary summary = Compare(dir.path());
    CHECK(Result(summary, "torch_gpt_compiled: Linears with forward and backward time") == "pass");
    CHECK(Result(summary, "torch_gpt_compiled: coverage") == "pass");
    CHECK(Result(summary, "torch_gpt_compiled: graphs without a kernel map") == "pass");
    CHECK(Result(summary, "torch_gpt_compiled: Triton kernels vs torch.profiler's") == "pass");
    CHECK(Result(summary,
                 "torch_gpt_compiled (torch.profiler, imported with kernel maps): Linears with "
                 "forward and backward time") == "pass");
  }
  TempDir dir;
  WriteCompiledRun(dir, /*every_backward=*/false, "triton_per_fused_sum_1");
  const Summary summary = Compare(dir.path());
  CHECK(summary.exit_status == 1);
  CHECK(Result(summary, "torch_gpt_compiled: Linears with forward and backward time") == "FAIL");
  CHECK(Result(summary, "torch_gpt_compiled: Triton kernels vs torch.profiler's") == "FAIL");
}

// A reduce-overhead run: the compiled run's module rows, and kernels replayed from CUDA graphs
// (graph_node set), all placed below their graph's range or one left on it.
void WriteCudaGraphRun(const TempDir& dir, bool all_placed) {
  WriteCompiledRun(dir, /*every_backward=*/true, "");
  std::filesystem::copy_file(dir.File("torch_gpt_compiled.report.json"),
                             dir.File("torch_gpt_cudagraphs.report.json"));
  const json graph_range = "torch.compile: abc123 forward";
  const json placed = {"Gpt_0", graph_range, "nn.Module: h.0.attn.c_attn"};
  json lines = json::array({{{"kind", "kernel"}, {"graph_node", 7}, {"path", placed}},
                            {{"kind", "kernel"},
                             {"graph_node", 8},
                             {"path", all_placed ? placed : json{"Gpt_0", graph_range}}},
                            {{"kind", "kernel"}, {"graph_node", nullptr}, {"path", {"Gpt_0"}}}});
  std::string text;
  for (const json& line : lines) text += line.dump() + "\n";
  WriteFile(dir.File("torch_gpt_cudagraphs.activities.jsonl"), text);
}

TEST_CASE("compare.py holds kernels replayed from CUDA graphs to being placed by module",
          "[e2e][gpu-kit]") {
  const std::string check =
      "torch_gpt_cudagraphs: replayed kernels placed below their graph's range";
  {
    TempDir dir;
    WriteCudaGraphRun(dir, /*all_placed=*/true);
    const Summary summary = Compare(dir.path());
    CHECK(Result(summary, check) == "pass");
    CHECK(Result(summary, "torch_gpt_cudagraphs: Linears with forward and backward time") ==
          "pass");
  }
  TempDir dir;
  WriteCudaGraphRun(dir, /*all_placed=*/false);
  const Summary summary = Compare(dir.path());
  CHECK(summary.exit_status == 1);
  CHECK(Result(summary, check) == "FAIL");
}

// torch_modules.py's lesson model run with --torch-profiler under gpuattr run
// (torch_profiler_inside) beside its profiled run without gpuattr (torch_modules_lesson):
// gpuattr's report and module rows, and each run's key_averages reference and trace kernels.
void WriteProfilerInsideRun(const TempDir& dir, uint64_t inside_linear_ns, int inside_kernels) {
  const json module = {{"path", {"nn.Module: Lesson_0", "nn.Module: linear"}},
                       {"forward_ns", 4'000'000},
                       {"backward_ns", 0},
                       {"recompute_ns", 0}};
  const json process = {
      {"status", "complete"}, {"loss", {{"dropped_records", 0}}}, {"modules", {module}}};
  WriteFile(dir.File("torch_profiler_inside.report.json"), json{{"processes", {process}}}.dump());
  const auto reference = [](uint64_t linear_ns) {
    return json{{"reference",
                 {{"Lesson_0/linear", {{"forward_ns", linear_ns}, {"backward_ns", nullptr}}}}}};
  };
  WriteFile(dir.File("torch_profiler_inside.truth.json"), reference(inside_linear_ns).dump());
  WriteFile(dir.File("torch_modules_lesson.profiler.truth.json"), reference(4'000'000).dump());
  const auto trace = [](int kernels) {
    json events = json::array({{{"cat", "cpu_op"}, {"name", "aten::linear"}}});
    for (int i = 0; i < kernels; ++i) events.push_back({{"cat", "kernel"}, {"name", "gemm"}});
    return json{{"traceEvents", events}}.dump();
  };
  WriteFile(dir.File("torch_profiler_inside.torch_trace.json"), trace(inside_kernels));
  WriteFile(dir.File("torch_modules_lesson.torch_trace.json"), trace(5));
}

TEST_CASE("compare.py holds a torch.profiler session inside gpuattr run to being complete",
          "[e2e][gpu-kit]") {
  const std::string prefix = "torch_profiler_inside: ";
  {
    TempDir dir;
    WriteProfilerInsideRun(dir, 4'100'000, 5);
    const Summary summary = Compare(dir.path());
    CHECK(Result(summary, prefix + "gpuattr's report complete, nothing dropped") == "pass");
    CHECK(Result(summary, prefix + "Lesson_0/linear forward (4100000 ns)") == "pass");
    CHECK(Result(summary, prefix + "kernels in torch.profiler's trace vs a run without gpuattr") ==
          "pass");
    CHECK(Result(summary, prefix + "key_averages Lesson_0/linear forward vs without gpuattr "
                                   "(4000000 ns)") == "pass");
  }
  // The profiler lost kernels beside gpuattr (what CUDA 13.0 alone does to it): its trace is
  // short and its module time far off.
  TempDir dir;
  WriteProfilerInsideRun(dir, 1'000'000, 2);
  const Summary summary = Compare(dir.path());
  CHECK(summary.exit_status == 1);
  CHECK(Result(summary, prefix + "kernels in torch.profiler's trace vs a run without gpuattr") ==
        "FAIL");
  CHECK(Result(summary, prefix + "key_averages Lesson_0/linear forward vs without gpuattr "
                                 "(4000000 ns)") == "FAIL");
  CHECK(Result(summary, prefix + "Lesson_0/linear forward (1000000 ns)") == "FAIL");
}

}  // namespace
}  // namespace gpuattr::e2e
