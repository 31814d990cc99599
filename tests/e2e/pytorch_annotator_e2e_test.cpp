// The Python annotator on real PyTorch (issue 19; Debian's CPU-only torch, installed by
// scripts/setup.sh), under `gpuattr run` with no flag:
//  - the unannotated training loop tests/e2e/pytorch/train_cnn.py gives the pass tree of the
//    PyTorch model (docs/pytorch.md): steps, forward modules by qualified name, backward by
//    module (a leaf per autograd node under the module that made it), the checkpointed block's
//    recompute, optimizer, loss and dataloader, each with the instances the script's loop makes
//    and host times that agree with the script's own perf_counter_ns around the same calls;
//  - tests/e2e/pytorch/train_simulated.py launches one simulated kernel per aten op: the
//    report equals the truth the script keeps by its own bookkeeping, exactly, and the Kineto
//    trace the script writes of the same run (torch.profiler's format) imports to the same pass
//    tree: paths, phases, instances and device time (docs/attribution.md §PyTorch);
//  - the demo's example (examples/pytorch/train.py under tests/simgpu/python/simgpu_torch.py)
//    gives its module tree with device time;
//  - --pytorch ops puts each aten op in a range around its kernels;
//  - the program cannot tell: its stdout and exit status are a bare run's, a program that never
//    imports torch never gets it imported, `--pytorch off` leaves no module range, and a
//    sitecustomize the environment already had still runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
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
using test_support::WriteFile;

constexpr int kSteps = 4;

void CollectNames(const json& nodes, std::vector<std::string>* names) {
  ForEachPass(nodes, [&](const json& node) { names->push_back(node["name"].get<std::string>()); });
}

std::vector<std::string> TrainCommand(const std::string& timings_path) {
  std::vector<std::string> command = {kPython, PYTORCH_TRAIN_SCRIPT, "--steps",
                                      std::to_string(kSteps)};
  if (!timings_path.empty()) {
    command.push_back("--timings");
    command.push_back(timings_path);
  }
  return command;
}

// Total perf_counter_ns per call kind, from the script's --timings lines.
std::map<std::string, int64_t> TimedTotals(const std::string& path) {
  std::map<std::string, int64_t> totals;
  std::istringstream lines(test_support::ReadFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    const json timing = json::parse(line);
    totals[timing["call"].get<std::string>()] += timing["ns"].get<int64_t>();
  }
  return totals;
}

TEST_CASE("an unannotated torch training loop gets the PyTorch model's pass tree", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const std::string timings_path = dir.File("timings.jsonl");
  const ProcessResult run = RunUnderGpuattr({}, TrainCommand(timings_path), report_path);
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  // The DataLoader's two workers run no torch module and push no range: one traced process.
  REQUIRE(report["processes"].size() == 1);
  const json& passes = report["processes"][0]["passes"];

  struct Expected {
    std::vector<std::string> path;
    const char* phase;  // nullptr: no phase
    int instances;
  };
  const std::string step = "ProfilerStep#*";
  const std::string net = "nn.Module: Net_0";
  const std::string loss = "nn.Module: CrossEntropyLoss_0";
  // Backward: one `backward` leaf per autograd node a module call made, under that call's
  // module path. torch 1.13's graph of this model per step: Conv2d one node
  // (ConvolutionBackward0), Linear two (AddmmBackward0, TBackward0), Flatten one, the loss two
  // (NllLossBackward0, LogSoftmaxBackward0), the checkpoint one (CheckpointFunctionBackward,
  // made in Net's own forward), and AccumulateGrad for the four parameters outside the
  // checkpoint, which no module call made (`backward_unlinked`); the checkpointed block's inner
  // backward runs inside CheckpointFunctionBackward and is its leaf's.
  const std::vector<Expected> expected = {
      {{step}, nullptr, kSteps},
      {{step, net}, "forward", kSteps},
      {{step, net, "nn.Module: stem"}, "forward", kSteps},
      {{step, net, "nn.Module: block"}, "forward", kSteps},
      {{step, net, "nn.Module: block", "nn.Module: block.conv"}, "forward", kSteps},
      {{step, net, "nn.Module: head", "nn.Module: head.1"}, "forward", kSteps},
      {{step, loss}, "loss", kSteps},
      {{step, net, "nn.Module: stem", "backward"}, "backward", kSteps},
      {{step, net, "nn.Module: head", "nn.Module: head.0", "backward"}, "backward", kSteps},
      {{step, net, "nn.Module: head", "nn.Module: head.1", "backward"}, "backward", 2 * kSteps},
      {{step, loss, "backward"}, "backward", 2 * kSteps},
      {{step, net, "backward"}, "backward", kSteps},
      {{step, "backward_unlinked"}, "backward", 4 * kSteps},
      // The checkpoint's recompute nests under the leaf that ran it.
      {{step, net, "backward", "nn.Module: block"}, "recompute", kSteps},
      {{step, net, "backward", "nn.Module: block", "nn.Module: block.conv"}, "recompute", kSteps},
      {{step, "Optimizer.step#Adam.step"}, "optimizer", kSteps},
      {{step, "Optimizer.zero_grad#Adam.zero_grad"}, "optimizer", kSteps},
      // kSteps batches and the fetch that ends the loop (StopIteration), between the steps.
      {{"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"}, nullptr, kSteps + 1},
  };
  for (const Expected& node : expected) {
    INFO("pass " << json(node.path).dump());
    const json* found = FindPass(passes, node.path);
    REQUIRE(found != nullptr);
    CHECK((*found)["instances"] == node.instances);
    if (node.phase == nullptr) {
      CHECK((*found)["phase"].is_null());
    } else {
      CHECK((*found)["phase"] == node.phase);
    }
    CHECK((*found)["device"].is_null());  // CPU-only torch: no device time was measured
  }

  // Each range lies inside the script's timed call of the same thing: at most the call's time,
  // and short of it by no more than the hooks around it (a generous 2 ms per call). Backward's
  // leaves, one per node, lie inside the backward call, short of it by autograd's own work.
  const std::map<std::string, int64_t> timed = TimedTotals(timings_path);
  const std::map<std::string, std::vector<std::string>> range_of_call = {
      {"forward", {step, net}},
      {"loss", {step, loss}},
      {"optimizer", {step, "Optimizer.step#Adam.step"}},
  };
  for (const auto& [call, path] : range_of_call) {
    INFO("call " << call);
    const json* node = FindPass(passes, path);
    REQUIRE(node != nullptr);
    const int64_t range_ns = (*node)["host_ns"]["total"].get<int64_t>();
    REQUIRE(timed.count(call) == 1);
    CHECK(range_ns > 0);
    CHECK(range_ns <= timed.at(call));
    CHECK(timed.at(call) - range_ns <= int64_t{kSteps} * 2'000'000);
  }
  // The outermost leaves: a leaf inside another (the checkpoint's inner backward) is inside its
  // host time already.
  const auto is_leaf = [](const std::string& name) {
    return name == "backward" || name == "backward_unlinked";
  };
  int64_t leaves_ns = 0;
  ForEachPass(passes, [&](const json& node) {
    const auto path = node["path"].get<std::vector<std::string>>();
    if (is_leaf(path.back()) && std::count_if(path.begin(), path.end(), is_leaf) == 1) {
      leaves_ns += node["host_ns"]["total"].get<int64_t>();
    }
  });
  REQUIRE(timed.count("backward") == 1);
  CHECK(leaves_ns > 0);
  CHECK(leaves_ns <= timed.at("backward"));
}

TEST_CASE(
    "the demo's GPT on the simulated GPU: a module row per module with its recompute, loss from "
    "F.cross_entropy, a clipping range, and a text view that fits and elides no name",
    "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const ProcessResult run =
      RunUnderGpuattr({}, {kPython, "-m", "simgpu_torch", PYTORCH_EXAMPLE_SCRIPT, "--steps", "2"},
                      report_path, SimulatedTorchEnvironment());
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  CHECK(process["status"] == "complete");
  // All but the setup before the first step and the loss printed after the last is attributed.
  CHECK(process["coverage"]["attributed_fraction"].get<double>() > 0.9);
  for (const json& unattributed : process["coverage"]["unattributed"]) {
    CHECK(unattributed["reason"] == "no_open_range");
  }

  // One row per module; every checkpointed block's modules have forward, backward and recompute
  // (but the MLP's output projection: torch 2 stops a non-reentrant recompute once it has every
  // saved tensor, which is before that matrix product runs).
  std::map<std::string, json> rows;
  for (const json& row : process["modules"]) {
    INFO("module " << row["module"]);
    CHECK(rows.count(row["module"].get<std::string>()) == 0);
    rows[row["module"].get<std::string>()] = row;
  }
  for (const std::string block : {"h.0", "h.1"}) {
    for (const std::string part : {".ln_1", ".attn.c_attn", ".attn.c_proj", ".ln_2", ".mlp.c_fc",
                                   ".mlp.gelu", ".mlp.c_proj"}) {
      const std::string module = "nn.Module: " + block + part;
      INFO("module " << module);
      REQUIRE(rows.count(module) == 1);
      const json& row = rows.at(module);
      CHECK(row["calls"] == 2);
      CHECK(row["forward_ns"] > 0);
      CHECK(row["backward_ns"] > 0);
      if (part != ".mlp.c_proj") {
        CHECK(row["recompute_ns"] > 0);
        CHECK(row["recompute_fraction"].is_number());
      }
    }
  }
  // F.cross_entropy inside GPT.forward: loss, on the module that called it.
  CHECK(process["phases"]["loss_ns"] > 0);
  REQUIRE(rows.count("nn.Module: GPT_0") == 1);
  CHECK(rows.at("nn.Module: GPT_0")["loss_ns"] == process["phases"]["loss_ns"]);
  const auto passes = FlattenPasses(process);
  const std::vector<std::string> clip = {"ProfilerStep#*", "torch.nn.utils.clip_grad_norm_"};
  REQUIRE(passes.count(clip) == 1);
  CHECK(passes.at(clip)["phase"] == "optimizer");
  CHECK(passes.at(clip)["instances"] == 2);
  CHECK(passes.at(clip)["device"]["total_ns"] > 0);

  // gpuattr report: no line wider than 120 columns, and no name elided in the middle: the only
  // ellipses are the "… N more" notes (and the command line's, which names no range).
  const ProcessResult view = RunProcess({GPUATTR_BIN, "report", report_path});
  REQUIRE(ExitStatus(view) == 0);
  std::istringstream lines(view.out);
  for (std::string line; std::getline(lines, line);) {
    INFO("line: " << line);
    CHECK(std::count_if(line.begin(), line.end(), [](char c) {  // UTF-8: lead bytes
            return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
          }) <= 120);
    if (line.find("…") != std::string::npos && !line.starts_with("capture ")) {
      CHECK_THAT(line, Catch::Matches(R"(\s*… \d+ (more|deeper).*)"));
    }
  }
  CHECK(view.out.find("\n      h.0 ") != std::string::npos);  // relative to GPT_0, indented
  CHECK(view.out.find("nn.Module: ") == std::string::npos);
}

TEST_CASE("with --pytorch ops each aten op is a range around its kernels, below its module",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const std::string activities_path = dir.File("activities.jsonl");
  const ProcessResult run =
      RunUnderGpuattr({"--pytorch", "ops", "--activities", activities_path},
                      {kPython, "-m", "simgpu_torch", PYTORCH_EXAMPLE_SCRIPT, "--steps", "2"},
                      report_path, SimulatedTorchEnvironment());
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  // The simulated GPU names each op's kernel as CUDA names such kernels, with the op's name in
  // it (`...add_functor<float>...`, `..._cublas_addmm`): a kernel's innermost range is
  // `aten::<that op>`, unless the op ran before the thread's first module call (the setup).
  std::istringstream lines(test_support::ReadFile(activities_path));
  int in_op_range = 0;
  int outside = 0;
  for (std::string line; std::getline(lines, line);) {
    const json activity = json::parse(line);
    if (activity["kind"] != "kernel") continue;  // `.item()`'s copy
    const auto path = activity["path"].get<std::vector<std::string>>();
    const std::string kernel = activity["name"].get<std::string>();
    if (!path.empty() && path.back().rfind("aten::", 0) == 0) {
      INFO("kernel " << kernel << " under " << json(path).dump());
      CHECK(kernel.find(path.back().substr(6)) != std::string::npos);
      ++in_op_range;
    } else {
      ++outside;
    }
  }
  CHECK(in_op_range > 4 * outside);
  const auto passes = FlattenPasses(ReadJson(report_path)["processes"][0]);
  const std::vector<std::string> matmul = {
      "ProfilerStep#*",      "nn.Module: GPT_0",           "nn.Module: h.0",
      "nn.Module: h.0.attn", "nn.Module: h.0.attn.c_attn", "aten::addmm"};
  REQUIRE(passes.count(matmul) == 1);
  CHECK(passes.at(matmul)["instances"] == 2);
  CHECK(passes.at(matmul)["device"]["kernels"] == 2);
}

TEST_CASE("the annotated program's stdout and exit status are a bare run's", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const ProcessResult bare = RunProcess(TrainCommand(""), {}, /*timeout_s=*/120);
  const ProcessResult traced = RunUnderGpuattr({}, TrainCommand(""), dir.File("report.json"));
  REQUIRE(ExitStatus(bare) == 0);
  CHECK(ExitStatus(traced) == ExitStatus(bare));
  CHECK(traced.out == bare.out);
  CHECK_FALSE(bare.out.empty());

  const std::vector<std::string> failing = {kPython, "-c",
                                            "import torch, sys; print('x'); sys.exit(3)"};
  const ProcessResult bare_failing = RunProcess(failing, {}, /*timeout_s=*/120);
  const ProcessResult traced_failing = RunUnderGpuattr({}, failing, dir.File("failing.json"));
  CHECK(ExitStatus(bare_failing) == 3);
  CHECK(ExitStatus(traced_failing) == 3);
  CHECK(traced_failing.out == bare_failing.out);
}

TEST_CASE("a Python program that never imports torch does not get it imported", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::vector<std::string> command = {
      kPython, "-c",
      "import sys, json; print(json.dumps(['torch' in sys.modules, "
      "sorted(m for m in sys.modules if 'gpuattr' in m)]))"};
  const ProcessResult bare = RunProcess(command, {}, /*timeout_s=*/60);
  const ProcessResult traced = RunUnderGpuattr({}, command, dir.File("report.json"));
  REQUIRE(ExitStatus(traced) == 0);
  CHECK(traced.out == bare.out);
  CHECK(json::parse(traced.out) == json::parse("[false, []]"));
}

TEST_CASE("with --pytorch off there is no annotator range", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  const ProcessResult run = RunUnderGpuattr({"--pytorch", "off"}, TrainCommand(""), report_path);
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  std::vector<std::string> names;
  for (const json& process : report["processes"]) CollectNames(process["passes"], &names);
  CHECK(names.empty());
  // The report says how to get ranges.
  REQUIRE(report["advice"].size() == 1);
  CHECK(report["advice"][0]["code"] == "no_ranges");

  const ProcessResult rejected =
      RunUnderGpuattr({}, TrainCommand(""), dir.File("x.json"), {{"GPUATTR_PYTORCH", "maybe"}});
  CHECK(ExitStatus(rejected) == 2);
  CHECK(rejected.err.find("modules, ops or off") != std::string::npos);
}

TEST_CASE(
    "an error inside the annotator disables it, is named in the report, and the program "
    "runs on as bare",
    "[e2e]") {
  RequireTorch();
  TempDir dir;
  // A submodule whose named_modules() raises: the annotator's forward pre-hook names submodules
  // with it, the program itself never calls it.
  const std::vector<std::string> command = {kPython, "-c",
                                            "import torch\n"
                                            "torch.manual_seed(0)\n"
                                            "class Odd(torch.nn.Linear):\n"
                                            "    def named_modules(self, *args, **kwargs):\n"
                                            "        raise RuntimeError('no names here')\n"
                                            "model = Odd(4, 4)\n"
                                            "outer = torch.nn.Sequential(model)\n"
                                            "outer.named_modules = model.named_modules\n"
                                            "x = torch.ones(2, 4)\n"
                                            "for _ in range(3):\n"
                                            "    y = outer(x).sum()\n"
                                            "    y.backward()\n"
                                            "print('sum %.4f' % float(y))\n"};
  const ProcessResult bare = RunProcess(command, {}, /*timeout_s=*/120);
  const std::string report_path = dir.File("report.json");
  const ProcessResult traced = RunUnderGpuattr({}, command, report_path);
  INFO("bare stderr: " << bare.err << "\ntraced stderr: " << traced.err);
  REQUIRE(ExitStatus(bare) == 0);
  CHECK(ExitStatus(traced) == 0);
  CHECK(traced.out == bare.out);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  // Beside the mark that names the annotator's path (pytorch_core_e2e_test.cpp), only this one.
  std::vector<json> disabled;
  for (const json& mark : report["processes"][0]["marks"]) {
    if (mark["name"].get<std::string>().rfind(kCoreMarkPrefix, 0) != 0) {
      disabled.push_back(mark);
    }
  }
  REQUIRE(disabled.size() == 1);
  CHECK(disabled[0]["name"] == "gpuattr.pytorch: disabled: RuntimeError: no names here");
  CHECK(disabled[0]["count"] == 1);
}

TEST_CASE("a sitecustomize the environment already had still runs", "[e2e]") {
  RequireTorch();
  TempDir dir;
  WriteFile(dir.File("sitecustomize.py"),
            "import os\nopen(os.environ['MARKER'], 'w').write('ran')\n");
  const std::string marker = dir.File("marker");
  const ProcessResult run =
      RunUnderGpuattr({}, {kPython, "-c", "print('ok')"}, dir.File("report.json"),
                      {{"PYTHONPATH", dir.path()}, {"MARKER", marker}});
  REQUIRE(ExitStatus(run) == 0);
  CHECK(run.out == "ok\n");
  CHECK(test_support::ReadFile(marker) == "ran");
}

}  // namespace
}  // namespace gpuattr::e2e
