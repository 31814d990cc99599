// The report's `work` (report/work_report.h, docs/attribution.md §FLOPs): the clean run's step
// time per rank, the device peak table, and the honesty rules: FLOPs not counted, achieved FLOP/s
// only behind a device join that passed its gate (forward and backward separately), MFU with
// exactly one denominator.
#include "report/work_report.h"

#include <catch2/catch.hpp>
#include <string>

#include "report/report_json.h"
#include "test_files.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

CleanRun ThreeProcesses() {
  CleanRun run;
  run.steps = 3;
  run.skip_steps = 1;
  // Steps of 10, 20, 30, 40, 50 ms after the first end.
  run.processes.push_back({11, 0, {0, 10'000'000, 30'000'000, 60'000'000, 100'000'000}});
  run.processes.push_back({12, 1, {0, 5'000'000}});
  run.processes.push_back({13, -1, {}});  // a DataLoader worker: no optimizer step
  return run;
}

TEST_CASE("the clean step time is the median of N steps of the process of the same rank",
          "[unit][work_report]") {
  const CleanRun run = ThreeProcesses();
  const CleanStepTime rank0 = CleanStepTimeOf(run, 0);
  REQUIRE(rank0.step_ns);
  CHECK(*rank0.step_ns == 20'000'000);  // steps 1..3: 10, 20, 30 ms
  CHECK(rank0.steps_timed == 3);

  const CleanStepTime rank1 = CleanStepTimeOf(run, 1);
  CHECK_FALSE(rank1.step_ns);
  CHECK(rank1.steps_timed == 1);
  CHECK(rank1.why_not.find("timed 1 of the 3 steps") != std::string::npos);

  CHECK(CleanStepTimeOf(run, 7).why_not == "no process of rank 7 of the clean run timed a step");
  CleanRun unranked;
  unranked.steps = 1;
  unranked.processes.push_back({21, -1, {0, 4}});
  unranked.processes.push_back({22, -1, {0, 6}});
  CHECK(CleanStepTimeOf(unranked, -1).why_not.find("ambiguous") != std::string::npos);
  unranked.processes.pop_back();
  unranked.exit_status = 3;
  CHECK(*CleanStepTimeOf(unranked, -1).step_ns == 4);
  CleanRun failed;
  failed.failure = "could not start: No such file or directory";
  CHECK(CleanStepTimeOf(failed, -1).why_not ==
        "the clean run could not start: No such file or directory");
}

TEST_CASE("device peaks come from the table by the device's name, per dtype",
          "[unit][work_report]") {
  const auto h100_sxm = DevicePeakOf("NVIDIA H100 80GB HBM3", "bfloat16");
  REQUIRE(h100_sxm);
  CHECK(h100_sxm->flops_per_s == 989.4e12);
  CHECK(h100_sxm->source.find("NVIDIA H100 SXM, bfloat16: NVIDIA H100") == 0);
  const auto h100_pcie = DevicePeakOf("NVIDIA H100 PCIe", "bfloat16");
  REQUIRE(h100_pcie);
  CHECK(h100_pcie->flops_per_s == 756e12);
  REQUIRE(DevicePeakOf("NVIDIA H200", "float32"));
  CHECK(DevicePeakOf("NVIDIA A100-SXM4-80GB", "float16")->flops_per_s == 312e12);
  CHECK(DevicePeakOf("AMD Instinct MI300X", "bfloat16")->flops_per_s == 1307.4e12);
  CHECK_FALSE(DevicePeakOf("NVIDIA B200", "float64"));  // not in its datasheet's table
  CHECK_FALSE(DevicePeakOf("Simulated GPU", "float32"));
}

TEST_CASE("every device and dtype of the peak table is found by its device's names",
          "[unit][work_report]") {
  const Json table = test_support::ReadJson(GPUATTR_DEVICE_PEAKS);
  REQUIRE(table["format"] == "gpuattr.device_peaks/1");
  REQUIRE(table["devices"].size() >= 6);
  for (const Json& device : table["devices"]) {
    REQUIRE_FALSE(device["source"].get<std::string>().empty());
    // An entry's first name is its own (an earlier entry takes none of it): every dtype of it.
    const std::string name = device["match"][0];
    for (const auto& [dtype, peak] : device["peak_flops_per_s"].items()) {
      INFO(name << " " << dtype);
      const auto found = DevicePeakOf("NVIDIA " + name, dtype);
      REQUIRE(found);
      CHECK(found->flops_per_s == peak.get<double>());
      CHECK(found->source.find(device["name"].get<std::string>() + ", " + dtype + ": ") == 0);
    }
  }
}

// A process with one forward node and three step rows of 1000 FLOPs each, its device measured.
ProcessAnalysis CountedProcess() {
  ProcessAnalysis analysis;
  analysis.process = ProcessIdentity{};
  analysis.device_measured = true;
  WorkAnalysis work;
  work.counter = "counting (rules: flop_rules.json)";
  work.total = {3000, 600, 0};
  work.counted.push_back({"aten::mm", 3, 3000, 600});
  work.flops_by_dtype = {{"bfloat16", 3000}};
  analysis.work = work;
  Steps steps;
  auto rows = std::make_shared<std::vector<StepRow>>();
  for (uint64_t i = 0; i < 3; ++i) {
    StepRow row;
    row.index = i;
    row.start_ns = i * 1'000'000;
    row.end_ns = i * 1'000'000 + 400'000;
    row.work.flops = 1000;
    rows->push_back(row);
  }
  steps.rows = rows;
  analysis.steps = steps;
  DeviceStats device;
  device.name = "NVIDIA H200";
  analysis.devices.push_back(device);
  return analysis;
}

Json Coverage(double overall, double forward, double backward) {
  return {{"attributed_fraction", overall},
          {"threshold", 0.95},
          {"passed", overall >= 0.95},
          {"by_phase", {{"forward", forward}, {"backward", backward}, {"optimizer", nullptr}}}};
}

TEST_CASE("achieved FLOP/s needs the device join's gate, forward and backward separately",
          "[unit][work_report]") {
  const ProcessAnalysis analysis = CountedProcess();
  PassWorkSettings settings;
  Json work = ProcessWorkJson(analysis, Coverage(0.99, 1.0, 0.97), {}, &settings);
  CHECK(settings.counted);
  CHECK(settings.achieved);
  CHECK(work["achieved"]["gate_passed"] == true);
  CHECK(work["achieved"]["refusal"].is_null());
  CHECK(work["flops"] == 3000);
  CHECK(work["arithmetic_intensity_hypothesis"] == 5.0);

  work = ProcessWorkJson(analysis, Coverage(0.99, 1.0, 0.90), {}, &settings);
  CHECK(settings.counted);
  CHECK_FALSE(settings.achieved);
  CHECK(work["achieved"]["refusal"]["code"] == "kernel_utilization_requires_device_join");
  CHECK(work["achieved"]["refusal"]["cause"].get<std::string>().find(
            "backward coverage 90.0 % is below 95.0 %") != std::string::npos);

  ProcessAnalysis host_only = analysis;
  host_only.device_measured = false;
  work = ProcessWorkJson(host_only, Coverage(0.99, 1.0, 1.0), {}, &settings);
  CHECK_FALSE(settings.achieved);
  CHECK(work["achieved"]["refusal"]["cause"].get<std::string>().find(
            "device time was not measured") != std::string::npos);

  // A pass node's achieved FLOP/s is its FLOPs over its busy time, with the gate passed only.
  PassNode node;
  node.busy_ns = 2'000;
  node.work_self = {4'000, 1'000, 0};
  node.work_total = node.work_self;
  CHECK(PassJson(node, true, {true, true})["work"]["achieved_flops_per_s"] == 2e9);
  CHECK(PassJson(node, true, {true, false})["work"]["achieved_flops_per_s"].is_null());
  CHECK(PassJson(node, true, {true, false})["work"]["arithmetic_intensity_hypothesis"] == 4.0);
  CHECK(PassJson(node, true, {false, false})["work"].is_null());
}

TEST_CASE("MFU takes one denominator, the uninstrumented step time, and the dtype's peak",
          "[unit][work_report]") {
  const ProcessAnalysis analysis = CountedProcess();
  PassWorkSettings settings;
  WorkInputs inputs;
  Json mfu = ProcessWorkJson(analysis, Coverage(1, 1, 1), inputs, &settings)["mfu"];
  CHECK(mfu["value"].is_null());
  CHECK(mfu["refusal"]["code"] == "mfu_denominator_invalid");
  CHECK(mfu["step_flops"] == 1000);
  CHECK(mfu["instrumented_step_ns"] == 1'000'000);  // one step's end to the next

  inputs.stated_step_ns = 2'000'000;
  mfu = ProcessWorkJson(analysis, Coverage(1, 1, 1), inputs, &settings)["mfu"];
  CHECK(mfu["refusal"].is_null());
  CHECK(mfu["clean_step_source"] == "stated");
  CHECK(mfu["dtype"] == "bfloat16");
  CHECK(mfu["peak_flops_per_s"] == 989.4e12);
  CHECK(mfu["value"].get<double>() == Approx(1000 / (2e-3 * 989.4e12)));

  inputs.stated_step_ns.reset();
  inputs.clean_run = ThreeProcesses();
  inputs.peak_flops_per_s = 1e6;
  ProcessAnalysis rank0 = analysis;
  rank0.process->rank = 0;
  mfu = ProcessWorkJson(rank0, Coverage(1, 1, 1), inputs, &settings)["mfu"];
  CHECK(mfu["clean_step_source"] == "clean_run");
  CHECK(mfu["clean_step_ns"] == 20'000'000);
  CHECK(mfu["clean_steps_timed"] == 3);
  CHECK(mfu["peak_source"] == "--peak-flops");
  CHECK(mfu["value"].get<double>() == Approx(1000 / (20e-3 * 1e6)));

  inputs.peak_flops_per_s.reset();
  ProcessAnalysis unknown_device = rank0;
  unknown_device.devices[0].name = "Simulated GPU";
  mfu = ProcessWorkJson(unknown_device, Coverage(1, 1, 1), inputs, &settings)["mfu"];
  CHECK(mfu["value"].is_null());
  CHECK(mfu["refusal"]["code"] == "peak_flops_unknown");
}

TEST_CASE("FLOPs asked for and not counted are a refusal, never zero", "[unit][work_report]") {
  ProcessAnalysis analysis;
  analysis.process = ProcessIdentity{};
  PassWorkSettings settings;
  WorkInputs inputs;
  CHECK(ProcessWorkJson(analysis, Coverage(1, 1, 1), inputs, &settings).is_null());
  inputs.requested = true;
  Json work = ProcessWorkJson(analysis, Coverage(1, 1, 1), inputs, &settings);
  CHECK_FALSE(settings.counted);
  CHECK(work["refusal"]["code"] == "flops_not_counted");
  CHECK_FALSE(work.contains("flops"));
  analysis.work = WorkAnalysis{};
  analysis.work->off = "torch 1.12 has no dispatch modes";
  work = ProcessWorkJson(analysis, Coverage(1, 1, 1), inputs, &settings);
  CHECK(work["refusal"]["cause"].get<std::string>().find("off: torch 1.12 has no dispatch modes") !=
        std::string::npos);
}

}  // namespace
}  // namespace gpuattr::collector
