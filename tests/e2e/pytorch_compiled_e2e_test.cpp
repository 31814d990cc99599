// A torch.compile'd model on the simulated GPU (issue 42, its device side): tests/e2e/pytorch/
// train_compiled.py compiles a GPT-style model's forward and loss; every kernel Inductor generated
// and every extern GEMM its wrappers call launches on the simulated GPU
// (tests/simgpu/python/simgpu_compiled.py), and the script keeps the truth of each launch.
// Registered for the torch 2 interpreters only, beside pytorch2_e2e_test.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "pytorch_e2e_util.h"
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
  // The bare run compiles (or finds the compile cache warm); the traced runs then load the same
  // wrappers from the cache, which the simulated GPU hooks as it hooks a fresh compile.
  const ProcessResult bare =
      test_support::RunProcess(command("bare_truth.json"), SimulatedTorchEnvironment(), 280);
  INFO("bare stderr: " << bare.err);
  REQUIRE(ExitStatus(bare) == 0);
  CHECK(bare.out.find("\"graph_break\": {}, \"recompiles\": {}, \"unimplemented\": {}") !=
        std::string::npos);
  CHECK(bare.out.find("wrappers on the simulated GPU: 2") != std::string::npos);  // fwd, bwd

  {
    INFO("without the annotator, every launch is where the truth has it");
    const ProcessResult traced =
        RunUnderGpuattr({"--pytorch", "off"}, command("truth.json"), dir.File("report.json"),
                        SimulatedTorchEnvironment());
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
    INFO("with the annotator, the program runs as it runs bare");
    const ProcessResult traced =
        RunUnderGpuattr({}, command("annotated_truth.json"), dir.File("annotated.json"),
                        SimulatedTorchEnvironment());
    INFO("traced stderr: " << traced.err);
    REQUIRE(ExitStatus(traced) == 0);
    CHECK(traced.out == bare.out);  // the losses, dynamo's counters, both wrappers hooked
    CHECK(traced.err == bare.err);
    REQUIRE(SchemaValid(dir.File("annotated.json")));
  }
}

}  // namespace
}  // namespace gpuattr::e2e
