// A torch.compile'd model on the simulated GPU (issue 42): tests/e2e/pytorch/train_compiled.py
// compiles a GPT-style model's forward and loss; every kernel Inductor generated and every extern
// GEMM its wrappers call launches on the simulated GPU (tests/simgpu/python/simgpu_compiled.py),
// and the script keeps the truth of each launch, with where in the module tree a compiled one
// belongs by Inductor's provenance tracking (compiled_truth.py). Each run gets Inductor's cache
// and gpuattr's kernel map cache of its own, so what it compiles is known.
// Registered for the torch 2 interpreters only, beside pytorch2_e2e_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pytorch_e2e_util.h"
#include "pytorch_module_truth.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::TempDir;

bool GeneratedByInductor(const std::string& kernel) {
  return kernel.rfind("cpp_fused_", 0) == 0 || kernel.rfind("triton_", 0) == 0;
}

// The simulated-torch environment with Inductor's cache and gpuattr's map cache in `dir`.
std::map<std::string, std::string> CompiledEnvironment(const TempDir& dir,
                                                       const std::string& caches) {
  std::map<std::string, std::string> env = SimulatedTorchEnvironment();
  env["TORCHINDUCTOR_CACHE_DIR"] = dir.File(caches + "-inductor");
  env["GPUATTR_KERNEL_MAP_CACHE"] = dir.File(caches + "-maps");
  return env;
}

// The path of each activity of an --activities file, by correlation id.
std::map<uint64_t, std::vector<std::string>> PathsByCorrelation(const std::string& path) {
  std::map<uint64_t, std::vector<std::string>> paths;
  std::ifstream lines(path);
  for (std::string line; std::getline(lines, line);) {
    const json activity = json::parse(line);
    paths[activity["correlation_id"].get<uint64_t>()] =
        activity["path"].is_null() ? std::vector<std::string>{}
                                   : activity["path"].get<std::vector<std::string>>();
  }
  return paths;
}

// From the compiled graph's range down: where a compiled launch was placed.
std::vector<std::string> FromGraphRange(const std::vector<std::string>& path) {
  auto graph = std::find_if(path.begin(), path.end(), [](const std::string& name) {
    return name.rfind("torch.compile: ", 0) == 0;
  });
  return {graph, path.end()};
}

TEST_CASE(
    "a compiled model on the simulated GPU: Inductor's kernels and the extern GEMMs as the truth "
    "has them, and no graph break or recompile of gpuattr's",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  auto command = [&](const std::string& truth) {
    return std::vector<std::string>{kPython, PYTORCH_COMPILED_SCRIPT, "--truth", dir.File(truth)};
  };
  const ProcessResult bare =
      test_support::RunProcess(command("bare_truth.json"), CompiledEnvironment(dir, "bare"), 280);
  INFO("bare stderr: " << bare.err);
  REQUIRE(ExitStatus(bare) == 0);
  CHECK(bare.out.find("\"graph_break\": {}, \"recompiles\": {}, \"unimplemented\": {}") !=
        std::string::npos);
  CHECK(bare.out.find("wrappers on the simulated GPU: 2") != std::string::npos);  // fwd, bwd

  {
    INFO("without the annotator, every launch is where the truth has it");
    const ProcessResult traced =
        RunUnderGpuattr({"--pytorch", "off"}, command("truth.json"), dir.File("report.json"),
                        CompiledEnvironment(dir, "off"));
    INFO("traced stderr: " << traced.err);
    REQUIRE(ExitStatus(traced) == 0);
    CHECK(traced.out == bare.out);
    REQUIRE(SchemaValid(dir.File("report.json")));
    const json truth = ReadJson(dir.File("truth.json"));
    size_t generated = 0;
    for (const json& activity : truth["processes"][0]["activities"]) {
      generated += GeneratedByInductor(activity["name"].get<std::string>()) ? 1 : 0;
    }
    CHECK(generated > 0);
    CheckAgainstTruth(ReadJson(dir.File("report.json")), truth);
  }
  {
    INFO(
        "with the annotator: the program runs as it runs bare, and every compiled launch is "
        "where Inductor's provenance puts it");
    const ProcessResult traced = RunUnderGpuattr(
        {"--activities", dir.File("activities.jsonl")}, command("annotated_truth.json"),
        dir.File("annotated.json"), CompiledEnvironment(dir, "annotated"));
    INFO("traced stderr: " << traced.err);
    REQUIRE(ExitStatus(traced) == 0);
    CHECK(traced.out == bare.out);  // the losses, dynamo's counters, both wrappers hooked
    CHECK(traced.err == bare.err);
    REQUIRE(SchemaValid(dir.File("annotated.json")));
    const auto paths = PathsByCorrelation(dir.File("activities.jsonl"));
    size_t compiled = 0;
    const json truth = ReadJson(dir.File("annotated_truth.json"));
    for (const json& activity : truth["processes"][0]["activities"]) {
      if (activity["compiled_path"].is_null()) continue;
      ++compiled;
      INFO(activity["name"].get<std::string>()
           << " (correlation " << activity["correlation_id"] << ")");
      const uint64_t correlation = activity["correlation_id"].get<uint64_t>();
      REQUIRE(paths.count(correlation) == 1);
      CHECK(FromGraphRange(paths.at(correlation)) ==
            activity["compiled_path"].get<std::vector<std::string>>());
    }
    CHECK(compiled == 110);  // 2 steps of 19 forward and 36 backward calls, one launch each

    const json report = ReadJson(dir.File("annotated.json"));
    CHECK(report["processes"][0]["coverage"]["attributed_fraction"].get<double>() >= 0.95);
    const std::map<std::string, ModuleTerms> rows = ModuleRowsOf(report);
    for (const char* block : {"blocks.0", "blocks.1"}) {
      for (const char* linear : {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"}) {
        const std::string module = std::string("nn.Module: ") + block + "." + linear;
        INFO(module);
        REQUIRE(rows.count(module) == 1);
        CHECK(rows.at(module).forward_ns > 0);
        CHECK(rows.at(module).backward_ns > 0);
      }
    }

    INFO("a second run loads both graphs from Inductor's cache: gpuattr's maps place them alike");
    const ProcessResult cached =
        RunUnderGpuattr({}, command("cached_truth.json"), dir.File("cached.json"),
                        CompiledEnvironment(dir, "annotated"));
    REQUIRE(ExitStatus(cached) == 0);
    CHECK(cached.out == bare.out);
    CHECK(ModuleRowsOf(ReadJson(dir.File("cached.json"))) == rows);
  }
}

}  // namespace
}  // namespace gpuattr::e2e
