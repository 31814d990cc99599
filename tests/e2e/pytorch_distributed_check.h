// torchrun with gloo on the simulated GPU, for the PyTorch e2e tests of data-parallel training
// (pytorch_distributed_e2e_test.cpp: DDP; pytorch2_e2e_test.cpp: FSDP2): two ranks, each under
// tests/simgpu/python/simgpu_torch.py (an NCCL kernel for each c10d collective), and the checks
// every such run must pass: a process per rank with its rank, the same module tree on both, the
// paths a model must have, and communication on each.
#ifndef GPUATTR_TESTS_E2E_PYTORCH_DISTRIBUTED_CHECK_H_
#define GPUATTR_TESTS_E2E_PYTORCH_DISTRIBUTED_CHECK_H_

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

inline constexpr int kTorchrunSteps = 4;

// Runs `script --steps kTorchrunSteps FLAGS` on two gloo ranks under `gpuattr run`; the
// report's processes by rank (the launcher, which has no rank, is left out).
inline std::map<int, nlohmann::json> RunTorchrunOnSimulatedGpu(
    test_support::TempDir& dir, const std::string& script,
    const std::vector<std::string>& flags = {}) {
  const std::string report_path = dir.File("report.json");
  // Debian's torchrun (torch 1.13 on Python 3.11) cannot parse its own default --redirects 0
  // (Std.from_str finds no flag for 0), so the output goes through an explicit tee of stdout.
  std::vector<std::string> command = {kPython,
                                      "-m",
                                      "torch.distributed.run",
                                      "--standalone",
                                      "--nproc_per_node",
                                      "2",
                                      "--redirects",
                                      "0:1,1:1",
                                      "--tee",
                                      "0:1,1:1",
                                      "--log_dir",
                                      dir.File("torchrun_logs"),
                                      "-m",
                                      "simgpu_torch",
                                      script,
                                      "--steps",
                                      std::to_string(kTorchrunSteps)};
  command.insert(command.end(), flags.begin(), flags.end());
  const test_support::ProcessResult run =
      RunUnderGpuattr({}, command, report_path, SimulatedTorchEnvironment());
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  CHECK(run.out.find("rank 0 final loss") != std::string::npos);
  CHECK(run.out.find("rank 1 final loss") != std::string::npos);
  REQUIRE(SchemaValid(report_path));
  const nlohmann::json report = test_support::ReadJson(report_path);
  std::map<int, nlohmann::json> ranks;
  for (const nlohmann::json& process : report["processes"]) {
    if (process["rank"].is_number()) ranks[process["rank"].get<int>()] = process;
  }
  return ranks;
}

// Ranks 0 and 1, each with `root` (the model's root module range) and the `paths` below the
// step, MSELoss and the optimizer, device time and communication; the same tree on both.
inline void CheckRanks(const std::map<int, nlohmann::json>& ranks, const std::string& root,
                       const std::vector<std::vector<std::string>>& paths) {
  REQUIRE(ranks.size() == 2);
  REQUIRE(ranks.count(0) == 1);
  REQUIRE(ranks.count(1) == 1);
  const std::string step = "ProfilerStep#*";
  for (const auto& [rank, process] : ranks) {
    INFO("rank " << rank);
    CHECK(process["status"] == "complete");
    CHECK(process["phases"]["communication_ns"] > 0);
    CHECK(process["phases"]["forward_ns"] > 0);
    CHECK(process["phases"]["backward_ns"] > 0);
    const auto passes = FlattenPasses(process);
    std::vector<std::vector<std::string>> expected = {
        {step}, {step, root}, {step, "nn.Module: MSELoss_0"}, {step, "Optimizer.step#SGD.step"}};
    for (std::vector<std::string> path : paths) {
      path.insert(path.begin(), step);
      expected.push_back(std::move(path));
    }
    for (const std::vector<std::string>& path : expected) {
      INFO("pass " << nlohmann::json(path).dump());
      REQUIRE(passes.count(path) == 1);
      CHECK(passes.at(path)["instances"].get<int>() >= kTorchrunSteps);
    }
    CHECK(passes.at({step})["instances"] == kTorchrunSteps);
  }
  // The ranks ran the same program: the same tree, instance for instance.
  const auto rank_passes = [&](int rank) {
    std::map<std::vector<std::string>, std::pair<nlohmann::json, nlohmann::json>> out;
    for (const auto& [path, pass] : FlattenPasses(ranks.at(rank))) {
      out[path] = {pass["instances"], pass["phase"]};
    }
    return out;
  };
  CHECK(rank_passes(0) == rank_passes(1));
}

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_PYTORCH_DISTRIBUTED_CHECK_H_
