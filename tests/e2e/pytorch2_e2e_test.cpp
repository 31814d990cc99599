// What only torch >= 2 has, under the Python annotator (issue 40); registered for the torch 2
// interpreters of the PyTorch tier only (tests/e2e/CMakeLists.txt: GPUATTR_TORCH2_VARIANTS):
//  - selective activation checkpointing (torch >= 2.4's create_selective_checkpoint_contexts,
//    tests/e2e/pytorch/simulated_models.py): the policy saves the matrix products, so the
//    blocks' linear layers have no recompute and the rest of each block recomputes what it ran
//    forward, every term equal to the truth the script keeps.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

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

TEST_CASE("selective checkpointing: only the ops the policy recomputes are recompute", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  const ProcessResult run =
      RunUnderGpuattr({},
                      {kPython, PYTORCH_SIMULATED_SCRIPT, "--steps", "2", "--model", "blocks",
                       "--checkpoint", "selective", "--truth", truth_path},
                      report_path, SimulatedTorchEnvironment());
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  const json truth = ReadJson(truth_path);
  CheckAgainstTruth(report, truth);

  const std::map<std::string, ModuleTerms> rows = ModuleRowsOf(report);
  for (const auto& [module, terms] : ModuleTermsOfTruth(truth)) {
    INFO("module " << module);
    REQUIRE(rows.count(module) == 1);
    CHECK(rows.at(module) == terms);
  }
  for (const std::string block : {"blocks.0", "blocks.1"}) {
    for (const std::string part : {".fc1", ".fc2"}) {  // addmm saved: nothing recomputed
      const ModuleTerms& terms = rows.at("nn.Module: " + block + part);
      INFO(block + part);
      CHECK(terms.forward_ns > 0);
      CHECK(terms.recompute_ns == 0);
    }
    for (const std::string part : {"", ".norm", ".act"}) {
      const ModuleTerms& terms = rows.at("nn.Module: " + block + part);
      INFO(block + part);
      CHECK(terms.recompute_ns > 0);
      CHECK(terms.recompute_ns == terms.forward_ns);
    }
  }
}

}  // namespace
}  // namespace gpuattr::e2e
