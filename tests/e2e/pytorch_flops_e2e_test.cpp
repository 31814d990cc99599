// FLOPs, achieved FLOP/s and MFU (issue 22, docs/attribution.md §FLOPs) on Debian's real torch,
// under `gpuattr run --flops`:
//  - the FLOPs of an MLP, a convolution and a transformer block (tests/e2e/pytorch/
//    flops_models.py) equal hand-computed values exactly, per module, forward and backward, and
//    each step row's FLOPs are its tree's: modules, loss, autograd's own sums and optimizer;
//  - the built-in rules of ops the models do not reach (attention, transposed convolutions, ...)
//    give torch's formulas on made-up arguments (tests/e2e/pytorch/flop_rule_cases.py);
//  - an op without a rule is in the unknown ledger with its calls, and its pass is marked as a
//    lower bound, never given zero;
//  - the profiling lesson's block: each op's FLOPs and bytes are the lesson's arithmetic, and the
//    eager chain moves 11 floats per element against the fused 3;
//  - achieved FLOP/s is filled where the device join passed its gate (the simulated GPU, with
//    backward on the main thread or on one of its own), and null with
//    kernel_utilization_requires_device_join where device time was not measured;
//  - MFU refuses without an uninstrumented step time (mfu_denominator_invalid), and with
//    --clean-steps its denominator is the bare run's step, as the bare run's own timer has it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

constexpr uint64_t kSteps = 2;
const std::string kStep = "ProfilerStep#*";

// Runs flops_models.py MODEL for `steps` under `gpuattr run --flops` and returns its one process.
json RunModel(const TempDir& dir, const std::string& model,
              const std::vector<std::string>& flags = {},
              const std::vector<std::string>& script_args = {}, uint64_t steps = kSteps) {
  const std::string report_path = dir.File(model + ".json");
  std::vector<std::string> gpuattr_flags = {"--flops"};
  gpuattr_flags.insert(gpuattr_flags.end(), flags.begin(), flags.end());
  std::vector<std::string> command = {kPython, PYTORCH_FLOPS_SCRIPT, model, "--steps",
                                      std::to_string(steps)};
  command.insert(command.end(), script_args.begin(), script_args.end());
  const ProcessResult run = RunUnderGpuattr(gpuattr_flags, command, report_path);
  INFO("model " << model << ", stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  return report["processes"][0];
}

const json& Node(const json& process, const std::vector<std::string>& path) {
  const json* node = FindPass(process["passes"], path);
  INFO("pass " << json(path).dump());
  REQUIRE(node != nullptr);
  return *node;
}

// FLOPs of the ops that ran under exactly `path`, over the run's steps.
uint64_t Flops(const json& process, const std::vector<std::string>& path) {
  return Node(process, path)["work"]["flops"].get<uint64_t>();
}

// The step rows' FLOPs add up to the step node's subtree, and nothing was left unknown.
void CheckStepRowsAreTheTree(const json& process) {
  uint64_t rows = 0;
  for (const json& row : process["steps"]["rows"]) rows += row["flops"].get<uint64_t>();
  CHECK(process["steps"]["rows"].size() == kSteps);
  CHECK(rows == Node(process, {kStep})["work"]["flops_total"].get<uint64_t>());
  CHECK(process["work"]["flops"].get<uint64_t>() ==
        rows + process["work"]["unattributed_flops"].get<uint64_t>());
  CHECK(process["work"]["ops"]["unknown"].empty());
  CHECK(process["work"]["counter"].get<std::string>().find("counting") == 0);
}

TEST_CASE("an MLP's FLOPs per module equal hand-computed values, forward and backward", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json process = RunModel(dir, "mlp");
  // Linear(64, 32) -> ReLU -> Linear(32, 4) over a batch of 8. A matrix product is 2 M N K
  // (addmm's bias is not counted, as torch's FlopCounterMode counts it); elementwise ops and
  // reductions one per element. fc1's input needs no gradient: its backward makes only the weight
  // gradient (mm) and the bias gradient (a sum over the batch).
  const uint64_t batch = 8;
  const std::string mlp = "nn.Module: Mlp_0";
  const std::vector<std::string> fc1 = {kStep, mlp, "nn.Module: fc1"};
  const std::vector<std::string> relu = {kStep, mlp, "nn.Module: relu"};
  const std::vector<std::string> fc2 = {kStep, mlp, "nn.Module: fc2"};
  auto backward = [](std::vector<std::string> path) {
    path.push_back("backward");
    return path;
  };
  CHECK(Flops(process, fc1) == kSteps * 2 * batch * 64 * 32);
  CHECK(Flops(process, backward(fc1)) == kSteps * (2 * 32 * batch * 64 + batch * 32));
  CHECK(Flops(process, relu) == kSteps * batch * 32);
  CHECK(Flops(process, backward(relu)) == kSteps * batch * 32);  // threshold_backward
  CHECK(Flops(process, fc2) == kSteps * 2 * batch * 32 * 4);
  CHECK(Flops(process, backward(fc2)) ==
        kSteps * (2 * batch * 4 * 32 + 2 * 4 * batch * 32 + batch * 4));
  CHECK(Flops(process, {kStep}) == kSteps * batch * 4);  // the loss, out.sum()
  // The module's subtree is its modules' forward and backward, nothing else.
  CHECK(Node(process, {kStep, mlp})["work"]["flops_total"] ==
        Flops(process, fc1) + Flops(process, backward(fc1)) + Flops(process, relu) +
            Flops(process, backward(relu)) + Flops(process, fc2) + Flops(process, backward(fc2)));
  // Bytes: fc1's addmm reads its bias, input and weight once and writes its output once.
  CHECK(Node(process, fc1)["work"]["bytes_estimate"] ==
        kSteps * 4 * (32 + batch * 64 + 64 * 32 + batch * 32));
  CheckStepRowsAreTheTree(process);
}

TEST_CASE("a convolution's FLOPs equal torch's conv formula, forward and backward", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json process = RunModel(dir, "conv");
  // Conv2d(3, 8, 3, padding=1) over (2, 3, 16, 16): 2 FLOPs per multiply-add over the batch,
  // the output positions, the output and input channels and the filter. Its input needs no
  // gradient: backward makes the weight gradient, the same count (and the bias's, uncounted).
  const uint64_t conv = 2 * 2 * (16 * 16) * 8 * 3 * (3 * 3);
  CHECK(Flops(process, {kStep, "nn.Module: Conv2d_0"}) == kSteps * conv);
  CHECK(Flops(process, {kStep, "nn.Module: Conv2d_0", "backward"}) == kSteps * conv);
  CHECK(Flops(process, {kStep}) == kSteps * 2 * 8 * 16 * 16);  // the loss, out.sum()
  CheckStepRowsAreTheTree(process);
}

TEST_CASE("a transformer block's FLOPs equal hand-computed values, forward and backward", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json process = RunModel(dir, "block");
  // (batch 2, sequence 5, width 16), 2 heads of 8: T = 10 tokens.
  const uint64_t batch = 2, seq = 5, width = 16, heads = 2, head = 8, tokens = batch * seq;
  const std::string block = "nn.Module: Block_0";
  auto module = [&](const std::string& name) {
    return std::vector<std::string>{kStep, block, "nn.Module: " + name};
  };
  auto backward = [](std::vector<std::string> path) {
    path.push_back("backward");
    return path;
  };
  // A Linear(in, out) on T tokens whose input needs a gradient: forward 2 T in out; backward
  // the input's and the weight's gradients, 2 T in out each, and the bias's, T out.
  auto linear = [&](const std::string& name, uint64_t in, uint64_t out) {
    CHECK(Flops(process, module(name)) == kSteps * 2 * tokens * in * out);
    CHECK(Flops(process, backward(module(name))) ==
          kSteps * (4 * tokens * in * out + tokens * out));
  };
  linear("qkv", width, 3 * width);
  linear("out", width, width);
  linear("fc1", width, 4 * width);
  linear("fc2", 4 * width, width);
  // LayerNorm with its affine scale and shift: 5 per element, backward twice that.
  for (const std::string name : {"ln1", "ln2"}) {
    CHECK(Flops(process, module(name)) == kSteps * 5 * tokens * width);
    CHECK(Flops(process, backward(module(name))) == kSteps * 10 * tokens * width);
  }
  CHECK(Flops(process, module("gelu")) == kSteps * tokens * 4 * width);
  CHECK(Flops(process, backward(module("gelu"))) == kSteps * tokens * 4 * width);
  // The block's own ops: Q K^T and the product with V (batched matrix products over batch x
  // heads), the softmax, the two residual adds; backward, two products for each product and the
  // softmax's backward.
  const uint64_t scores = 2 * batch * heads * seq * head * seq;
  const uint64_t attend = 2 * batch * heads * seq * seq * head;
  const uint64_t softmax = batch * heads * seq * seq;
  CHECK(Flops(process, {kStep, block}) ==
        kSteps * (scores + attend + softmax + 2 * tokens * width));
  CHECK(Flops(process, {kStep, block, "backward"}) == kSteps * (2 * scores + 2 * attend + softmax));
  // At the step itself: the loss (out.sum()) and autograd's own sum of the two gradients of the
  // first residual's output, which two ops used.
  CHECK(Flops(process, {kStep}) == kSteps * 2 * tokens * width);
  CheckStepRowsAreTheTree(process);
}

TEST_CASE("an op without a rule is in the unknown ledger with its calls, never a zero", "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json process = RunModel(dir, "unknown");
  const json& ops = process["work"]["ops"];
  REQUIRE(ops["unknown"].size() == 1);
  CHECK(ops["unknown"][0]["op"] == "aten::erfinv");
  CHECK(ops["unknown"][0]["calls"] == kSteps * 2);  // forward, and again in its backward
  CHECK(ops["unknown_remedy"].get<std::string>().find("--flop-rules") != std::string::npos);
  for (const json& counted : ops["counted"]) CHECK(counted["op"] != "aten::erfinv");
  // Its module is a lower bound, and says so.
  const json& erfinv = Node(process, {kStep, "nn.Module: Sequential_0", "nn.Module: 1"});
  CHECK(erfinv["work"]["unknown_ops"] == kSteps);
  CHECK(Node(process, {kStep})["work"]["unknown_ops_total"] == kSteps * 2);
  for (const json& row : process["steps"]["rows"]) CHECK(row["unknown_ops"] == 2);
}

// OpCount of `op` in the process's ledger `kind` (counted, free, unknown), or null.
json Ledger(const json& process, const std::string& kind, const std::string& op) {
  for (const json& entry : process["work"]["ops"][kind]) {
    if (entry["op"] == op) return entry;
  }
  return nullptr;
}

TEST_CASE("a rule file comes first, then torch's FlopCounterMode registry, then the built-in rules",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::string rules = dir.File("rules.json");
  test_support::WriteFile(rules, R"json({"format": "gpuattr.flop_rules/1",
    "free": ["aten::sum"],
    "rules": [{"ops": ["aten::erfinv"], "flops": "3 * numel(a0)"},
              {"ops": ["aten::addmm"], "flops": "5", "bytes": "a1.numel * a1.itemsize"}]})json");
  // The unknown model: Linear(64, 32) over 8 rows, then tanh and erfinv.
  const json process = RunModel(dir, "unknown", {"--flop-rules", rules}, {"--fake-flop-registry"});
  CHECK(process["work"]["counter"].get<std::string>().find(
            "rules.json, flop_rules.json, torch FlopCounterMode") != std::string::npos);
  CHECK(process["work"]["ops"]["unknown"].empty());
  const json erfinv = Ledger(process, "counted", "aten::erfinv");  // the file's rule
  REQUIRE(erfinv.is_object());
  CHECK(erfinv["flops"] == erfinv["calls"].get<uint64_t>() * 3 * 8 * 32);
  const json addmm = Ledger(process, "counted", "aten::addmm");  // the file's, over ours
  REQUIRE(addmm.is_object());
  CHECK(addmm["flops"] == 5 * kSteps);
  CHECK(addmm["bytes_estimate"] == kSteps * 8 * 64 * 4);
  const json mm = Ledger(process, "counted", "aten::mm");  // torch's registry, over ours
  REQUIRE(mm.is_object());
  CHECK(mm["flops"] == 7 * mm["calls"].get<uint64_t>());
  CHECK(Ledger(process, "free", "aten::sum").is_object());  // the file's free list, over ours
  CHECK(Ledger(process, "counted", "aten::sum").is_null());

  const std::string broken = dir.File("broken.json");
  test_support::WriteFile(broken, R"json({"format": "gpuattr.flop_rules/1",
    "rules": [{"ops": ["aten::mm"], "flops": "__import__('os').system('true')"}]})json");
  TempDir refused_dir;
  const json refused = RunModel(refused_dir, "mlp", {"--flop-rules", broken});
  CHECK(refused["work"]["refusal"]["code"] == "flops_not_counted");
  CHECK(refused["work"]["refusal"]["cause"].get<std::string>().find(
            "only abs, conv, len, max, min, numel, prod, sum, tr may be called") !=
        std::string::npos);
}

TEST_CASE("the built-in rules of ops the models do not reach give torch's formulas", "[e2e]") {
  RequireTorch();
  const ProcessResult run =
      test_support::RunProcess({kPython, PYTORCH_FLOP_RULE_CASES, GPUATTR_PYTHON_SITE});
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  const json cases = json::parse(run.out);
  auto flops = [&](const char* name) {
    INFO(name << ": " << cases[name].dump());
    REQUIRE(cases[name][0] == "counted");
    return cases[name][1].get<uint64_t>();
  };
  // Attention over (batch 2, heads 4), 16 queries, 32 keys, head width 8: Q K^T and the product
  // with V, 2 b h s_q s_k d each; backward recomputes the scores and makes four more products.
  const uint64_t bh = 2 * 4, sq = 16, sk = 32, d = 8;
  CHECK(flops("sdpa") == 2 * bh * sq * sk * d + 2 * bh * sq * sk * d);
  CHECK(flops("sdpa_backward") == bh * sq * sk * (6 * d + 4 * d));
  // A transposed convolution 8 -> 4 channels, 3x3, over (2, 8, 5, 5): its positions are the
  // input's; backward the input's gradient (a plain convolution) and the weight's.
  const uint64_t transposed = 2 * 2 * (5 * 5) * 8 * 4 * (3 * 3);
  CHECK(flops("conv_transposed") == transposed);
  CHECK(flops("conv_transposed_backward") == 2 * transposed);
  CHECK(flops("layer_norm_no_affine") == 4 * 4 * 10);
  // An embedding gathers: no FLOPs; it reads its indices and the rows, and writes the rows.
  CHECK(flops("embedding") == 0);
  CHECK(cases["embedding"][2] == 4 * 5 * 8 + 2 * 4 * 5 * 16 * 4);
  CHECK(flops("foreach_add") == 3 + 4);
  CHECK(flops("baddbmm") == 2 * 3 * 5 * 6 * 7);
  // 0-dim tensors are scalars: an op on them moves no counted bytes.
  CHECK(cases["scalar_only"][2] == 0);
  CHECK(cases["no_rule"] == json::array({"unknown"}));
  CHECK(cases["view"] == json::array({"free"}));
}

TEST_CASE("the lesson block's FLOPs and bytes per op are the lesson's arithmetic", "[e2e]") {
  RequireTorch();
  TempDir dir;
  // One step: 17 GFLOP of matrix product on the CPU.
  constexpr uint64_t kLessonSteps = 1;
  const json process = RunModel(dir, "lesson", {"--pytorch", "ops"}, {}, kLessonSteps);
  const uint64_t batch = 8192, features = 1024, elements = batch * features, bytes = 4;
  const std::vector<std::string> lesson = {kStep, "nn.Module: Lesson_0"};
  auto op = [&](const std::string& module, const std::string& name) {
    std::vector<std::string> path = lesson;
    path.push_back("nn.Module: " + module);
    path.push_back(name);
    return Node(process, path)["work"];
  };
  // Linear 1024x1024 over 8192: 2 M N K; it reads its input, weight and bias and writes its
  // output once.
  const json addmm = op("linear", "aten::addmm");
  CHECK(addmm["flops"] == kLessonSteps * 2 * batch * features * features);
  CHECK(addmm["bytes_estimate"] ==
        kLessonSteps * bytes * (elements + features * features + features + elements));
  // The chain, one FLOP per element each: mul 0.5 (2 passes over memory), add 0.1 (2),
  // gelu (2), add the residual (3), clamp (2): 11 passes eager.
  for (const char* unary : {"aten::mul", "aten::gelu", "aten::clamp"}) {
    INFO(unary);
    CHECK(op("chain", unary)["flops"] == kLessonSteps * elements);
    CHECK(op("chain", unary)["bytes_estimate"] == kLessonSteps * 2 * elements * bytes);
  }
  const json adds = op("chain", "aten::add");  // 0.1, then the residual
  CHECK(adds["flops"] == kLessonSteps * 2 * elements);
  CHECK(adds["bytes_estimate"] == kLessonSteps * (2 + 3) * elements * bytes);
  const json chain = Node(process, {kStep, "nn.Module: Lesson_0", "nn.Module: chain"})["work"];
  CHECK(chain["flops_total"] == kLessonSteps * 5 * elements);
  const uint64_t eager = chain["bytes_estimate_total"].get<uint64_t>();
  CHECK(eager == kLessonSteps * 11 * elements * bytes);
  // Fused, the chain reads h and the residual and writes its output: 3 passes.
  const uint64_t fused = kLessonSteps * 3 * elements * bytes;
  CHECK(static_cast<double>(eager) / static_cast<double>(fused) == Approx(11.0 / 3.0));
}

TEST_CASE(
    "achieved FLOP/s is filled where the device join passed its gate, with backward on the main "
    "thread or on one of its own",
    "[e2e]") {
  RequireTorch();
  const bool backward_thread = GENERATE(false, true);
  TempDir dir;
  const std::string report_path = dir.File("report.json");
  std::vector<std::string> command = {kPython,   PYTORCH_SIMULATED_SCRIPT, "--steps", "3",
                                      "--truth", dir.File("truth.json")};
  if (backward_thread) command.push_back("--backward-thread");
  const ProcessResult run =
      RunUnderGpuattr({"--flops"}, command, report_path, SimulatedTorchEnvironment());
  INFO("backward thread " << backward_thread << ", stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json process = ReadJson(report_path)["processes"][0];
  REQUIRE(process["work"]["achieved"]["gate_passed"] == true);
  CHECK(process["work"]["achieved"]["refusal"].is_null());
  uint64_t filled = 0;
  uint64_t backward_flops = 0;
  ForEachPass(process["passes"], [&](const json& node) {
    const uint64_t flops = node["work"]["flops"].get<uint64_t>();
    const uint64_t busy = node["device"]["busy_ns"].get<uint64_t>();
    if (node["name"] == "backward") backward_flops += flops;
    INFO("pass " << node["path"].dump());
    if (flops == 0 || busy == 0) {
      CHECK(node["work"]["achieved_flops_per_s"].is_null());
      return;
    }
    ++filled;
    CHECK(node["work"]["achieved_flops_per_s"].get<double>() ==
          Approx(static_cast<double>(flops) * 1e9 / static_cast<double>(busy)));
  });
  CHECK(filled >= 10);
  // Backward's ops are counted on whichever thread autograd runs them.
  CHECK(backward_flops > 0);
}

TEST_CASE("without device time achieved FLOP/s is null with the typed refusal", "[e2e]") {
  RequireTorch();
  TempDir dir;
  // --clean-step-ms asks for FLOPs as --flops does (RunModel's flag is left out here).
  const std::string report_path = dir.File("stated.json");
  const ProcessResult run = RunUnderGpuattr(
      {"--clean-step-ms", "5"},
      {kPython, PYTORCH_FLOPS_SCRIPT, "mlp", "--steps", std::to_string(kSteps)}, report_path);
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json process = ReadJson(report_path)["processes"][0];
  CHECK(process["work"]["mfu"]["clean_step_source"] == "stated");
  CHECK(process["work"]["mfu"]["clean_step_ns"] == 5'000'000);
  CHECK(process["status"] == "host_only");
  const json& achieved = process["work"]["achieved"];
  CHECK(achieved["gate_passed"] == false);
  CHECK(achieved["refusal"]["code"] == "kernel_utilization_requires_device_join");
  ForEachPass(process["passes"],
              [](const json& node) { CHECK(node["work"]["achieved_flops_per_s"].is_null()); });
  // The FLOPs themselves do not need device time.
  CHECK(process["work"]["flops"].get<uint64_t>() > 0);
}

// The lower median of the bare run's own steps, as its timer has them: from one step's end to
// the next, `skip` steps left out (step 0 has no start).
uint64_t BareRunStepNs(const std::string& timings_path, uint64_t skip, uint64_t steps) {
  std::vector<uint64_t> ends;
  std::ifstream lines(timings_path);
  for (std::string line; std::getline(lines, line);) {
    const json timing = json::parse(line);
    if (timing["under_gpuattr"] == false) ends.push_back(timing["end_ns"].get<uint64_t>());
  }
  std::vector<uint64_t> durations;
  for (uint64_t i = std::max<uint64_t>(skip, 1); i < ends.size() && durations.size() < steps; ++i) {
    durations.push_back(ends[i] - ends[i - 1]);
  }
  REQUIRE(durations.size() == steps);
  std::sort(durations.begin(), durations.end());
  return durations[(durations.size() - 1) / 2];
}

TEST_CASE("MFU refuses without an uninstrumented step time, and --clean-steps takes the bare run's",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json refused = RunModel(dir, "mlp", {"--peak-flops", "1e9"});
  const json& no_denominator = refused["work"]["mfu"];
  CHECK(no_denominator["value"].is_null());
  CHECK(no_denominator["refusal"]["code"] == "mfu_denominator_invalid");
  CHECK(no_denominator["instrumented_step_ns"].get<uint64_t>() > 0);

  // Steps of 30 ms of sleep; the bare run writes its own step ends beside ours.
  TempDir clean_dir;
  const std::string timings = clean_dir.File("timings.jsonl");
  const json clean =
      RunModel(clean_dir, "mlp", {"--clean-steps", "3", "--skip-steps", "1", "--peak-flops", "1e9"},
               {"--steps", "6", "--step-ms", "30", "--timings", timings});
  const json& mfu = clean["work"]["mfu"];
  REQUIRE(mfu["refusal"].is_null());
  CHECK(mfu["clean_step_source"] == "clean_run");
  CHECK(mfu["clean_steps_timed"] == 3);
  const uint64_t ours = mfu["clean_step_ns"].get<uint64_t>();
  const uint64_t theirs = BareRunStepNs(timings, 1, 3);
  INFO("clean step " << ours << " ns, the bare run's own timer " << theirs << " ns");
  CHECK(ours >= 30'000'000);
  // Two clocks read a few microseconds apart at each step's end.
  CHECK(std::llabs(static_cast<long long>(ours) - static_cast<long long>(theirs)) < 500'000);
  const double step_flops = mfu["step_flops"].get<double>();
  CHECK(step_flops > 0);
  CHECK(mfu["value"].get<double>() == Approx(step_flops / (ours * 1e-9 * 1e9)));
  CHECK(mfu["instrumented_step_ns"].get<uint64_t>() >= 30'000'000);
}

}  // namespace
}  // namespace gpuattr::e2e
