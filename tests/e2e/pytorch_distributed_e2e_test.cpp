// Distributed PyTorch under the Python annotator (issues 19, 40), on every torch the tier runs:
// torchrun with gloo (tests/e2e/pytorch/train_ddp.py, DistributedDataParallel) on the simulated
// GPU gives two processes with their ranks, the same module tree, and communication (the
// simulated GPU's NCCL kernel for each c10d collective) on each.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "pytorch_distributed_check.h"
#include "pytorch_e2e_util.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::TempDir;

TEST_CASE(
    "torchrun with gloo and DDP on the simulated GPU gives each rank its process, its rank, the "
    "same module tree and communication",
    "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::map<int, json> ranks = RunTorchrunOnSimulatedGpu(dir, PYTORCH_DDP_SCRIPT);
  CheckRanks(
      ranks, "nn.Module: DistributedDataParallel_0",
      {{"nn.Module: DistributedDataParallel_0", "nn.Module: module", "nn.Module: module.encoder"},
       {"nn.Module: DistributedDataParallel_0", "nn.Module: module", "nn.Module: module.head",
        "backward"}});
}

}  // namespace
}  // namespace gpuattr::e2e
