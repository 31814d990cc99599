// The PyTorch annotator with autograd's backward on the main thread or on a thread of its own
// (train_simulated.py --backward-thread, as autograd runs CUDA backward on its device threads),
// on the simulated GPU: every kernel lands where the program's own bookkeeping says; the same
// program recorded as torch.profiler records it imports to the same tree and the same phases; and
// the work a thread of its own launches outside any autograd node once backward began (DDP's
// reducer finishing the gradients) is backward (docs/attribution.md §Phases).
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
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
using test_support::RunProcess;
using test_support::TempDir;

// The phase terms of a report of train_simulated.py: each pass's phase, and for the work the
// program's backward thread launched with no range of its own after a node ran there, backward.
// That work, from the truth alone: the activities its bookkeeping calls inherited, off the main
// thread, after its own node (the gradient callback's; the gradient seed, made before any node,
// stays the step's). `backward_thread`: the run used one.
void CheckPhasesOfPassesAndBackwardThread(const json& process, const json& truth,
                                          bool backward_thread) {
  uint64_t rangeless_ns = 0;
  uint64_t rangeless = 0;
  for (const json& a : truth["processes"][0]["activities"]) {
    if (a["attribution"] != "inherited" || a["thread"] == "MainThread" || !a["after_own_node"]) {
      continue;
    }
    rangeless_ns += a["end_ns"].get<uint64_t>() - a["start_ns"].get<uint64_t>();
    ++rangeless;
  }
  CHECK((rangeless > 0) == backward_thread);
  std::map<std::string, uint64_t> self_ns_by_phase;
  for (const auto& [path, pass] : FlattenPasses(process)) {
    const std::string phase = pass["phase"].is_null() ? "other" : pass["phase"].get<std::string>();
    self_ns_by_phase[phase] += pass["device"]["self_ns"].get<uint64_t>();
  }
  INFO("work off the main thread with no range: " << rangeless << " activities, " << rangeless_ns
                                                  << " ns");
  CHECK(process["phases"]["backward_ns"] == self_ns_by_phase["backward"] + rangeless_ns);
  CHECK(process["phases"]["other_ns"].get<uint64_t>() + rangeless_ns == self_ns_by_phase["other"]);
  CHECK(process["phases"]["forward_ns"] == self_ns_by_phase["forward"]);
}

TEST_CASE(
    "every aten op's simulated kernel lands where the program's own bookkeeping says, with "
    "backward on the main thread or on a thread of its own",
    "[e2e]") {
  RequireTorch();
  // A thread of its own is what autograd's device threads are to CUDA backward: the step is
  // open on the main thread only, and each node's leaf must carry it there.
  const bool backward_thread = GENERATE(false, true);
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  std::vector<std::string> command = {
      kPython, PYTORCH_SIMULATED_SCRIPT, "--steps", "3", "--truth", truth_path};
  if (backward_thread) command.push_back("--backward-thread");
  const ProcessResult run = RunUnderGpuattr({}, command, report_path, SimulatedTorchEnvironment());
  INFO("backward thread " << backward_thread << ", stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  const json truth = ReadJson(truth_path);
  REQUIRE_FALSE(truth.is_discarded());

  // The truth has every kind of place a kernel can be: forward by module, backward by module
  // (a module's, the root's own op, the loss's, and the checkpointed block's inside its
  // recompute), recompute by module, the optimizer's, the batch fetch's and the step's own.
  const std::vector<ExpectedProcess> expected = ExpectFromTruth(truth);
  REQUIRE(expected.size() == 1);
  const std::string step = "ProfilerStep#*";
  const std::string net = "nn.Module: Net_0";
  const std::vector<std::vector<std::string>> places = {
      {step, net, "nn.Module: embed"},
      {step, net, "nn.Module: block", "nn.Module: block.linear"},
      {step, net, "nn.Module: embed", "backward"},
      {step, net, "nn.Module: head", "nn.Module: head.1", "backward"},
      {step, net, "backward"},
      {step, "nn.Module: CrossEntropyLoss_0", "backward"},
      // (Gradient accumulation, `backward_unlinked`, launches nothing when the gradient was
      // None, as torch 2's zero_grad leaves it: AccumulateGrad takes the tensor as it is.)
      {step, net, "backward", "nn.Module: block", "nn.Module: block.linear"},
      // The checkpoint's inner backward: the block's own backward, under its recompute.
      {step, net, "backward", "nn.Module: block", "nn.Module: block.linear", "backward"},
      {step, "Optimizer.step#SGD.step"},
      // (zero_grad launches nothing on torch 2, which sets gradients to None.)
      {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"},
      {step},
  };
  for (const auto& place : places) {
    INFO("truth pass " << json(place).dump());
    REQUIRE(expected[0].passes.count(place) == 1);
    CHECK(expected[0].passes.at(place).self_ns > 0);
  }
  CheckAgainstTruth(report, truth);
  CheckPhasesOfPassesAndBackwardThread(report["processes"][0], truth, backward_thread);
}

// What a comparison of two pass trees looks at: each path's instances, phase and device time.
using PassSummary = std::tuple<uint64_t, json, uint64_t, uint64_t>;

std::map<std::vector<std::string>, PassSummary> SummarisePasses(
    const json& process, const std::map<std::string, std::string>& renames) {
  std::map<std::vector<std::string>, PassSummary> out;
  for (const auto& [path, pass] : FlattenPasses(process)) {
    std::vector<std::string> renamed;
    for (const std::string& name : path) {
      auto rename = renames.find(name);
      renamed.push_back(rename != renames.end() ? rename->second : name);
    }
    out[renamed] = {pass["instances"].get<uint64_t>(), pass["phase"],
                    pass["device"]["total_ns"].get<uint64_t>(),
                    pass["device"]["self_ns"].get<uint64_t>()};
  }
  return out;
}

TEST_CASE(
    "the same program recorded as torch.profiler records it imports to the same tree, with "
    "backward on the main thread or on a thread of its own",
    "[e2e]") {
  RequireTorch();
  // Off the main thread, the import model copies the step from the main thread to each backward
  // op, as the annotator copies it to each node's leaf.
  const bool backward_thread = GENERATE(false, true);
  TempDir dir;
  const std::string live_path = dir.File("live.json");
  const std::string kineto_path = dir.File("kineto.json");
  const std::string names_path = dir.File("module_names.json");
  std::vector<std::string> command = {kPython,          PYTORCH_SIMULATED_SCRIPT,
                                      "--steps",        "3",
                                      "--truth",        dir.File("truth.json"),
                                      "--kineto",       kineto_path,
                                      "--module-names", names_path};
  if (backward_thread) command.push_back("--backward-thread");
  const ProcessResult run = RunUnderGpuattr({}, command, live_path, SimulatedTorchEnvironment());
  INFO("backward thread " << backward_thread << ", stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  const std::string imported_path = dir.File("imported.json");
  const ProcessResult imported_run =
      RunProcess({GPUATTR_BIN, "import", "--quiet", kineto_path, "-o", imported_path});
  INFO("import stderr: " << imported_run.err);
  REQUIRE(ExitStatus(imported_run) == 0);
  REQUIRE(SchemaValid(live_path));
  REQUIRE(SchemaValid(imported_path));
  const json live = ReadJson(live_path);
  const json imported = ReadJson(imported_path);
  REQUIRE(live["processes"].size() == 1);
  REQUIRE(imported["processes"].size() == 1);

  // torch names every module `Class_k`; the annotator names a submodule by its qualified name.
  // That renaming, which the program writes from its own modules, is the only difference.
  const auto renames = ReadJson(names_path).get<std::map<std::string, std::string>>();
  std::set<std::string> qualified;
  for (const auto& [torch_name, name] : renames) qualified.insert(name);
  REQUIRE(qualified.size() == renames.size());
  REQUIRE(renames.at("nn.Module: Linear_1") == "nn.Module: block.linear");

  const auto live_passes = SummarisePasses(live["processes"][0], {});
  const auto imported_passes = SummarisePasses(imported["processes"][0], renames);
  REQUIRE(live_passes.size() > 15);
  for (const auto& [path, summary] : live_passes) {
    INFO("pass " << json(path).dump());
    REQUIRE(imported_passes.count(path) == 1);
    CHECK(imported_passes.at(path) == summary);
  }
  CHECK(imported_passes.size() == live_passes.size());
  // One rule live and imported: the same phase terms, the backward thread's range-less work in
  // backward in both.
  CHECK(imported["processes"][0]["phases"] == live["processes"][0]["phases"]);
  CheckPhasesOfPassesAndBackwardThread(live["processes"][0], ReadJson(dir.File("truth.json")),
                                       backward_thread);
}

}  // namespace
}  // namespace gpuattr::e2e
