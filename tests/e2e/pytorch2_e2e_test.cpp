// What only torch >= 2 has, under the Python annotator (issue 40); registered for the torch 2
// interpreters of the PyTorch tier only (tests/e2e/CMakeLists.txt: GPUATTR_TORCH2_VARIANTS):
//  - selective activation checkpointing (torch >= 2.4's create_selective_checkpoint_contexts,
//    tests/e2e/pytorch/simulated_models.py): the policy saves the matrix products, so the
//    blocks' linear layers have no recompute and the rest of each block recomputes what it ran
//    forward, every term equal to the truth the script keeps;
//  - real torch.profiler traces (with_modules, with_stack, record_shapes; CPU Kineto, so no
//    device activity) of three unmodified programs, recorded by tests/e2e/pytorch/
//    record_kineto.py, import to the pass tree their live runs under `gpuattr run` have:
//    the same paths, phases and instances, up to torch's `Class_k` naming of submodules, which
//    the recorder maps to qualified names from its own module hook;
//  - torch.compile of the demo's GPT under `gpuattr run`: dynamo's graph breaks, recompiles and
//    unimplemented counters, the losses and all of stdout equal a bare run's;
//  - FSDP2 (fully_shard) with 2 gloo ranks under torchrun on the simulated GPU: a process per
//    rank, the same module tree, and the all-gathers and reduce-scatters as communication.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "pytorch_distributed_check.h"
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

// A pass tree as the comparison of a live and an imported report sees it: path -> (instances,
// phase), with module names mapped by `renames`, and without what only one side can have:
// ProfilerStep#* (the recorded program calls no prof.step()), the live annotator's functional
// loss and gradient clipping ranges (torch.profiler has no range for them), and with_stack's
// checkpoint recompute_fn frames (the live annotator has no Python frames).
std::map<std::vector<std::string>, std::tuple<uint64_t, json>> ComparableTree(
    const json& process, const std::map<std::string, std::string>& renames) {
  std::map<std::vector<std::string>, std::tuple<uint64_t, json>> out;
  for (const auto& [path, pass] : FlattenPasses(process)) {
    const auto dropped = [](const std::string& name) {
      return name == "ProfilerStep#*" || name.starts_with("nn.functional.") ||
             name.starts_with("torch.nn.utils.clip_grad_") ||
             name.find("checkpoint.py(") != std::string::npos;
    };
    if (dropped(path.back())) continue;
    std::vector<std::string> kept;
    for (const std::string& name : path) {
      if (dropped(name)) continue;
      auto rename = renames.find(name);
      kept.push_back(rename != renames.end() ? rename->second : name);
    }
    auto [entry, added] = out.try_emplace(kept, pass["instances"].get<uint64_t>(), pass["phase"]);
    if (!added) std::get<0>(entry->second) += pass["instances"].get<uint64_t>();
  }
  return out;
}

TEST_CASE(
    "real torch.profiler traces of three programs import to the pass trees of their live runs",
    "[e2e]") {
  RequireTorch();
  struct Program {
    std::string name;
    std::vector<std::string> argv;
  };
  const std::vector<Program> programs = {
      {"cnn (reentrant checkpoint, DataLoader workers, Adam)",
       {PYTORCH_TRAIN_SCRIPT, "--steps", "2"}},
      {"gpt (non-reentrant checkpoints, F.cross_entropy, AdamW, clipping)",
       {PYTORCH_EXAMPLE_SCRIPT, "--steps", "2"}},
      {"transformer block (a loss of no module, SGD)", {PYTORCH_FLOPS_SCRIPT, "block"}},
  };
  for (const Program& program : programs) {
    INFO("program " << program.name);
    TempDir dir;
    std::vector<std::string> live_command = {kPython};
    live_command.insert(live_command.end(), program.argv.begin(), program.argv.end());
    const ProcessResult live_run = RunUnderGpuattr({}, live_command, dir.File("live.json"));
    INFO("live stderr: " << live_run.err);
    REQUIRE(ExitStatus(live_run) == 0);
    std::vector<std::string> record = {kPython, PYTORCH_RECORD_KINETO, dir.File("trace.json"),
                                       dir.File("names.json")};
    record.insert(record.end(), program.argv.begin(), program.argv.end());
    const ProcessResult recorded = test_support::RunProcess(record, {}, /*timeout_s=*/120);
    INFO("record stderr: " << recorded.err);
    REQUIRE(ExitStatus(recorded) == 0);
    const ProcessResult imported =
        test_support::RunProcess({GPUATTR_BIN, "import", "--quiet", dir.File("trace.json"), "-o",
                                  dir.File("imported.json")});
    INFO("import stderr: " << imported.err);
    REQUIRE(ExitStatus(imported) == 0);
    REQUIRE(SchemaValid(dir.File("live.json")));
    REQUIRE(SchemaValid(dir.File("imported.json")));

    const json live = ReadJson(dir.File("live.json"));
    const json trace_report = ReadJson(dir.File("imported.json"));
    const auto renames = ReadJson(dir.File("names.json")).get<std::map<std::string, std::string>>();
    // The main process: the one with module ranges (DataLoader workers have none).
    const json* live_process = nullptr;
    for (const json& process : live["processes"]) {
      if (!process["passes"].empty()) live_process = &process;
    }
    REQUIRE(live_process != nullptr);
    REQUIRE(trace_report["processes"].size() == 1);
    const auto live_tree = ComparableTree(*live_process, {});
    const auto imported_tree = ComparableTree(trace_report["processes"][0], renames);
    REQUIRE(live_tree.size() > 10);
    for (const auto& [path, summary] : live_tree) {
      INFO("live pass " << json(path).dump());
      REQUIRE(imported_tree.count(path) == 1);
      CHECK(imported_tree.at(path) == summary);
    }
    for (const auto& [path, summary] : imported_tree) {
      INFO("imported pass " << json(path).dump());
      CHECK(live_tree.count(path) == 1);
    }
  }
}

TEST_CASE(
    "torch.compile of the demo's GPT: no graph break or recompile of gpuattr's, the same "
    "losses and stdout as a bare run",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  const std::vector<std::string> command = {kPython, PYTORCH_COMPILED_DEMO, PYTORCH_EXAMPLE_SCRIPT,
                                            "--steps", "3"};
  const ProcessResult bare = test_support::RunProcess(command, {}, /*timeout_s=*/280);
  INFO("bare stderr: " << bare.err);
  REQUIRE(ExitStatus(bare) == 0);
  const ProcessResult traced = RunUnderGpuattr({}, command, dir.File("report.json"),
                                               {{"GPUATTR_KERNEL_MAP_CACHE", dir.File("maps")}});
  INFO("traced stderr: " << traced.err);
  REQUIRE(ExitStatus(traced) == 0);
  CHECK(traced.out == bare.out);
  CHECK(bare.out.find("\"graph_break\": {}") != std::string::npos);
  CHECK(traced.err == bare.err);  // no warning of gpuattr's global hooks
  REQUIRE(SchemaValid(dir.File("report.json")));
}

TEST_CASE(
    "torchrun with gloo and FSDP2 on the simulated GPU: a process per rank, the same module tree, "
    "all-gathers and reduce-scatters as communication",
    "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::map<int, json> ranks = RunTorchrunOnSimulatedGpu(dir, PYTORCH_DDP_SCRIPT, {"--fsdp2"});
  // fully_shard gives the module a class of its own, FSDP<Class>.
  CheckRanks(ranks, "nn.Module: FSDPNet_0",
             {{"nn.Module: FSDPNet_0", "nn.Module: encoder", "nn.Module: encoder.0"},
              {"nn.Module: FSDPNet_0", "nn.Module: head", "backward"}});
  for (const auto& [rank, process] : ranks) {
    std::map<std::string, uint64_t> collectives;
    for (const json& family : process["families"]) {
      collectives[family["family"].get<std::string>()] = family["kernels"].get<uint64_t>();
    }
    INFO("rank " << rank);
    CHECK(collectives["nccl_AllGather"] > 0);
    CHECK(collectives["nccl_ReduceScatter"] > 0);
  }
}

}  // namespace
}  // namespace gpuattr::e2e
