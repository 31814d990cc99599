// Distributed PyTorch under the Python annotator (issues 19, 40), on every torch the tier runs:
// torchrun with gloo (tests/e2e/pytorch/train_ddp.py, DistributedDataParallel) gives two
// processes with their ranks and the same module tree.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pytorch_e2e_util.h"
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

constexpr int kSteps = 4;

TEST_CASE("torchrun with gloo gives each rank its process, its rank and the same module tree",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  // Debian's torchrun (torch 1.13 on Python 3.11) cannot parse its own default --redirects 0
  // (Std.from_str finds no flag for 0), so the output goes through an explicit tee of stdout.
  const ProcessResult run = RunUnderGpuattr(
      {},
      {kPython, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
       "--redirects", "0:1,1:1", "--tee", "0:1,1:1", "--log_dir", dir.File("torchrun_logs"),
       PYTORCH_DDP_SCRIPT, "--steps", std::to_string(kSteps)},
      report_path);
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  CHECK(run.out.find("rank 0 final loss") != std::string::npos);
  CHECK(run.out.find("rank 1 final loss") != std::string::npos);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);

  std::map<int, const json*> by_rank;
  for (const json& process : report["processes"]) {
    if (process["rank"].is_number()) by_rank[process["rank"].get<int>()] = &process;
  }
  REQUIRE(by_rank.size() == 2);
  REQUIRE(by_rank.count(0) == 1);
  REQUIRE(by_rank.count(1) == 1);
  const std::string step = "ProfilerStep#*";
  const std::string ddp = "nn.Module: DistributedDataParallel_0";
  for (const auto& [rank, process] : by_rank) {
    INFO("rank " << rank);
    const auto passes = FlattenPasses(*process);
    for (const std::vector<std::string>& path : std::vector<std::vector<std::string>>{
             {step},
             {step, ddp, "nn.Module: module", "nn.Module: module.encoder"},
             {step, ddp, "nn.Module: module", "nn.Module: module.head", "backward"},
             {step, "nn.Module: MSELoss_0"},
             {step, "Optimizer.step#SGD.step"}}) {
      INFO("pass " << json(path).dump());
      REQUIRE(passes.count(path) == 1);
      CHECK(passes.at(path)["instances"].get<int>() >= kSteps);
    }
    CHECK(passes.at({step})["instances"] == kSteps);
  }
  // The ranks ran the same program: the same tree, instance for instance.
  const auto rank_passes = [&](int rank) {
    std::map<std::vector<std::string>, std::pair<json, json>> out;
    for (const auto& [path, pass] : FlattenPasses(*by_rank.at(rank))) {
      out[path] = {pass["instances"], pass["phase"]};
    }
    return out;
  };
  CHECK(rank_passes(0) == rank_passes(1));
}

}  // namespace
}  // namespace gpuattr::e2e
