// Activation checkpointing under the Python annotator (issue 40), on every torch the tier runs:
//  - a model of checkpointed blocks (tests/e2e/pytorch/simulated_models.py, `blocks`) trained
//    on the simulated GPU with each block under checkpoint(use_reentrant=True) and, once more,
//    use_reentrant=False: the report equals the truth the script keeps by its own bookkeeping,
//    and the module table has one row per module whose forward, backward and recompute equal the
//    truth's, computed here from the truth alone; every module of every block has all three, and
//    a block's recompute equals its forward (the block ends in tanh, which saves its output, so
//    torch 2's early stop of a non-reentrant recompute still reruns every op);
//  - non-reentrant checkpointing recomputes under the backward of the node that needed it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "pytorch_e2e_util.h"
#include "pytorch_module_truth.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::TempDir;

TEST_CASE(
    "checkpointed blocks, reentrant or not: one module row each, with forward, backward and "
    "recompute equal to the truth",
    "[e2e]") {
  RequireTorch();
  const std::string checkpoint = GENERATE("reentrant", "non_reentrant");
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  const ProcessResult run =
      RunUnderGpuattr({},
                      {kPython, PYTORCH_SIMULATED_SCRIPT, "--steps", "2", "--model", "blocks",
                       "--checkpoint", checkpoint, "--truth", truth_path},
                      report_path, SimulatedTorchEnvironment());
  INFO("checkpoint " << checkpoint << ", stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  const json truth = ReadJson(truth_path);
  CheckAgainstTruth(report, truth);

  const std::map<std::string, ModuleTerms> expected = ModuleTermsOfTruth(truth);
  const std::map<std::string, ModuleTerms> rows = ModuleRowsOf(report);  // one row per module
  for (const json& row : report["processes"][0]["modules"]) CHECK(row["calls"] == 2);
  for (const auto& [module, terms] : expected) {
    INFO("module " << module);
    REQUIRE(rows.count(module) == 1);
    CHECK(rows.at(module) == terms);
  }
  for (const std::string block : {"blocks.0", "blocks.1"}) {
    for (const std::string part : {"", ".norm", ".fc1", ".act", ".fc2"}) {
      const std::string module = "nn.Module: " + block + part;
      INFO("module " << module);
      REQUIRE(rows.count(module) == 1);
      const ModuleTerms& terms = rows.at(module);
      CHECK(terms.forward_ns > 0);
      CHECK(terms.backward_ns > 0);
      CHECK(terms.recompute_ns == terms.forward_ns);  // the same ops ran again
    }
  }
}

TEST_CASE("non-reentrant checkpointing recomputes under the backward of the node that needed it",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  // use_reentrant=False: the block's forward reruns when a node of its own needs what it saved
  // (tanh's output), inside that node's backward.
  const std::vector<std::string> command = {
      kPython, "-c",
      "import torch, torch.nn as nn, torch.utils.checkpoint as checkpoint\n"
      "torch.manual_seed(0)\n"
      "class Block(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.lin = nn.Linear(4, 4)\n"
      "    def forward(self, x):\n"
      "        return torch.tanh(self.lin(x))\n"
      "class Net(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.a = nn.Linear(4, 4)\n"
      "        self.b = Block()\n"
      "    def forward(self, x):\n"
      "        return checkpoint.checkpoint(self.b, self.a(x), use_reentrant=False).sum()\n"
      "net = Net()\n"
      "optimizer = torch.optim.SGD(net.parameters(), lr=0.1)\n"
      "for _ in range(3):\n"
      "    optimizer.zero_grad()\n"
      "    net(torch.randn(2, 4)).backward()\n"
      "    optimizer.step()\n"};
  const std::string report_path = dir.File("report.json");
  const ProcessResult run = RunUnderGpuattr({}, command, report_path);
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const auto passes = FlattenPasses(ReadJson(report_path)["processes"][0]);
  const std::vector<std::string> block = {"ProfilerStep#*", "nn.Module: Net_0", "nn.Module: b"};
  std::vector<std::string> recompute = block;
  recompute.insert(recompute.end(), {"backward", "nn.Module: b", "nn.Module: b.lin"});
  REQUIRE(passes.count(recompute) == 1);
  CHECK(passes.at(recompute)["instances"] == 3);
  CHECK(passes.at(recompute)["phase"] == "recompute");
  REQUIRE(passes.count(block) == 1);
  CHECK(passes.at(block)["instances"] == 3);
  CHECK(passes.at(block)["phase"] == "forward");
}

}  // namespace
}  // namespace gpuattr::e2e
