// A process's `work` in the report (docs/attribution.md §FLOPs): what the PyTorch annotator's
// FLOP counter counted, the unknown-op ledger, whether achieved FLOP/s may be stated, and MFU.
//
// The honesty rules are decided here, once:
//  - FLOPs asked for (--flops) but not counted is the typed refusal flops_not_counted, never 0;
//  - achieved FLOP/s needs the device join to have passed its gate: coverage at least the
//    threshold overall, and for forward and backward separately where they had kernels; else
//    null everywhere with kernel_utilization_requires_device_join;
//  - MFU takes exactly one denominator, the uninstrumented step wall time (the clean run of
//    --clean-steps, or --clean-step-ms), times the peak FLOP/s of the dtype that carried most
//    FLOPs (the device table, collector/data/device_peaks.json, or --peak-flops); without it,
//    mfu_denominator_invalid; without a peak, peak_flops_unknown. The step time under
//    instrumentation, from one step's end to the next as the clean run times it, is written
//    beside it, named instrumented.
// Pure functions; any thread.
#ifndef GPUATTR_COLLECTOR_REPORT_WORK_REPORT_H_
#define GPUATTR_COLLECTOR_REPORT_WORK_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_analysis.h"
#include "report/report_json.h"

namespace gpuattr::collector {

// What `gpuattr run --clean-steps N` measured: the command run again with only a step timer.
struct CleanRun {
  uint64_t steps = 0;       // N: the steps to time
  uint64_t skip_steps = 0;  // --skip-steps: the first steps, left out as in the report's rows
  // The step end times (CLOCK_MONOTONIC ns) each process of the clean run recorded, with its
  // RANK (-1: none).
  struct Process {
    uint32_t pid = 0;
    int32_t rank = -1;
    std::vector<uint64_t> step_ends_ns;
  };
  std::vector<Process> processes;
  std::string failure;             // why it did not run at all; empty: it ran
  std::optional<int> exit_status;  // the shell's, once it ran
};

// The run's FLOP settings.
struct WorkInputs {
  bool requested = false;                  // --flops
  std::optional<double> peak_flops_per_s;  // --peak-flops
  std::optional<uint64_t> stated_step_ns;  // --clean-step-ms
  std::optional<CleanRun> clean_run;       // --clean-steps
};

// One clean step time for a traced process of rank `rank` (-1: none): the median of N steps of
// the matching clean-run process (the same rank; without ranks, the only one that timed steps),
// or why there is none.
struct CleanStepTime {
  std::optional<uint64_t> step_ns;
  uint64_t steps_timed = 0;
  std::string why_not;
};
CleanStepTime CleanStepTimeOf(const CleanRun& run, int32_t rank);

// The peak FLOP/s of `dtype` on the device named `device_name`, from the embedded table, with
// where it comes from; empty when the table has no such device or dtype.
struct DevicePeak {
  double flops_per_s = 0;
  std::string source;  // "<table entry>, <dtype>: <datasheet>"
};
std::optional<DevicePeak> DevicePeakOf(const std::string& device_name, const std::string& dtype);

// Whether the process's FLOP counter counted (it ran, rather than saying why it could not).
bool WorkCounted(const ProcessAnalysis& analysis);

// The process's `work` (null when FLOPs were neither asked for nor counted) and how its pass
// nodes spell theirs. `coverage` is the process's coverage JSON (CoverageJson).
nlohmann::json ProcessWorkJson(const ProcessAnalysis& analysis, const nlohmann::json& coverage,
                               const WorkInputs& inputs, PassWorkSettings* pass_settings);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_WORK_REPORT_H_
