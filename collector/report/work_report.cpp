#include "report/work_report.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "analysis/refusal_catalogue.h"
#include "analysis/samples.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kDevicePeaksText =
#include "device_peaks.inc"
    ;

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %%", fraction * 100.0);
  return text;
}

// Why the device join did not pass its gate (docs/attribution.md §FLOPs), empty when it did.
std::string DeviceJoinShortfall(bool measured, const Json& coverage) {
  if (!measured) return "device time was not measured in this process";
  const double threshold = coverage.value("threshold", 0.0);
  const Json& overall = coverage["attributed_fraction"];
  if (!overall.is_number() || coverage["passed"] != true) {
    return overall.is_number()
               ? "coverage " + Percent(overall.get<double>()) + " is below " + Percent(threshold)
               : "no kernel time was measured";
  }
  for (const char* phase : {"forward", "backward"}) {
    const Json& fraction = coverage["by_phase"][phase];
    if (fraction.is_number() && fraction.get<double>() < threshold) {
      return std::string(phase) + " coverage " + Percent(fraction.get<double>()) + " is below " +
             Percent(threshold);
    }
  }
  return "";
}

Json OpsJson(const std::vector<OpCount>& ops, bool counted) {
  Json out = Json::array();
  for (const OpCount& op : ops) {
    Json entry = {{"op", op.op}, {"calls", op.calls}};
    if (counted) {
      entry["flops"] = op.flops;
      entry["bytes_estimate"] = op.bytes_estimate;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// The lower median of the instrumented run's end-to-end steps, defined as the clean run's are:
// from one kept row's end to the next's; empty with fewer than two rows.
std::optional<uint64_t> InstrumentedStepNs(const ProcessAnalysis& analysis) {
  if (!analysis.steps || analysis.steps->rows->size() < 2) return std::nullopt;
  const std::vector<StepRow>& rows = *analysis.steps->rows;
  std::vector<uint64_t> durations;
  for (size_t i = 1; i < rows.size(); ++i) {
    durations.push_back(rows[i].end_ns >= rows[i - 1].end_ns ? rows[i].end_ns - rows[i - 1].end_ns
                                                             : 0);
  }
  return Summarize(durations).median;
}

// The lower median of the kept step rows' FLOPs; empty without rows.
std::optional<uint64_t> MedianStepFlops(const ProcessAnalysis& analysis) {
  if (!analysis.steps || analysis.steps->rows->empty()) return std::nullopt;
  std::vector<uint64_t> flops;
  for (const StepRow& row : *analysis.steps->rows) flops.push_back(row.work.flops);
  return Summarize(flops).median;
}

Json MfuJson(const ProcessAnalysis& analysis, const WorkAnalysis& work, const WorkInputs& inputs) {
  Json out = {{"value", nullptr},
              {"step_flops", nullptr},
              {"clean_step_ns", nullptr},
              {"clean_step_source", nullptr},
              {"clean_steps_timed", nullptr},
              {"instrumented_step_ns", OptionalJson(InstrumentedStepNs(analysis))},
              {"dtype", nullptr},
              {"peak_flops_per_s", nullptr},
              {"peak_source", nullptr},
              {"refusal", nullptr}};
  const std::optional<uint64_t> step_flops = MedianStepFlops(analysis);
  if (step_flops) out["step_flops"] = *step_flops;
  // The denominator: one, the uninstrumented step wall time.
  std::string why_no_denominator;
  if (inputs.stated_step_ns) {
    out["clean_step_ns"] = *inputs.stated_step_ns;
    out["clean_step_source"] = "stated";
  } else if (inputs.clean_run) {
    const int32_t rank = analysis.process ? analysis.process->rank : -1;
    const CleanStepTime clean = CleanStepTimeOf(*inputs.clean_run, rank);
    if (clean.step_ns) {
      out["clean_step_ns"] = *clean.step_ns;
      out["clean_step_source"] = "clean_run";
      out["clean_steps_timed"] = clean.steps_timed;
    } else {
      why_no_denominator = clean.why_not;
    }
  } else {
    why_no_denominator = "neither --clean-steps nor --clean-step-ms was given";
  }
  // The peak: of the dtype that carried most FLOPs.
  std::string why_no_peak;
  if (!work.flops_by_dtype.empty()) out["dtype"] = work.flops_by_dtype.front().first;
  if (inputs.peak_flops_per_s) {
    out["peak_flops_per_s"] = *inputs.peak_flops_per_s;
    out["peak_source"] = "--peak-flops";
  } else if (work.flops_by_dtype.empty()) {
    why_no_peak = "no op was counted, so no dtype names a peak";
  } else {
    const std::string& dtype = work.flops_by_dtype.front().first;
    const std::optional<std::string> device =
        analysis.devices.empty() ? std::nullopt : analysis.devices.front().name;
    const std::optional<DevicePeak> peak =
        device ? DevicePeakOf(*device, dtype) : std::optional<DevicePeak>();
    if (peak) {
      out["peak_flops_per_s"] = peak->flops_per_s;
      out["peak_source"] = peak->source;
    } else {
      why_no_peak = "device " + (device ? "\"" + *device + "\"" : std::string("without a name")) +
                    ", dtype " + dtype;
    }
  }
  if (!why_no_denominator.empty()) {
    out["refusal"] = RefusalJson(MfuDenominatorInvalidRefusal(), why_no_denominator, 0);
  } else if (!why_no_peak.empty()) {
    out["refusal"] = RefusalJson(PeakFlopsUnknownRefusal(), why_no_peak, 0);
  } else if (!step_flops) {
    out["refusal"] = RefusalJson(MfuDenominatorInvalidRefusal(),
                                 "the process has no step rows, so no step FLOPs", 0);
  } else if (out["clean_step_ns"].get<uint64_t>() == 0 ||
             !(out["peak_flops_per_s"].get<double>() > 0)) {
    out["refusal"] = RefusalJson(MfuDenominatorInvalidRefusal(),
                                 "the step time or the peak FLOP/s is not positive", 0);
  } else {
    const double seconds = static_cast<double>(out["clean_step_ns"].get<uint64_t>()) * 1e-9;
    out["value"] =
        static_cast<double>(*step_flops) / (seconds * out["peak_flops_per_s"].get<double>());
  }
  return out;
}

}  // namespace

CleanStepTime CleanStepTimeOf(const CleanRun& run, int32_t rank) {
  CleanStepTime result;
  if (!run.failure.empty()) {
    result.why_not = "the clean run " + run.failure;
    return result;
  }
  const CleanRun::Process* match = nullptr;
  size_t candidates = 0;
  for (const CleanRun::Process& process : run.processes) {
    if (process.rank != rank || process.step_ends_ns.empty()) continue;
    ++candidates;
    match = &process;
  }
  if (candidates != 1) {
    const std::string who = rank >= 0 ? "of rank " + std::to_string(rank) : "without a RANK";
    result.why_not = candidates == 0 ? "no process " + who + " of the clean run timed a step"
                                     : std::to_string(candidates) + " processes " + who +
                                           " of the clean run timed steps: which one is ambiguous";
    if (candidates == 0 && run.exit_status && *run.exit_status != 0) {
      result.why_not += " (it exited with status " + std::to_string(*run.exit_status) + ")";
    }
    return result;
  }
  // Step i lasts from the end of step i - 1 to its own end: step 0 has no start, so the first
  // timed step is max(skip, 1).
  const std::vector<uint64_t>& ends = match->step_ends_ns;
  const uint64_t first = std::max<uint64_t>(run.skip_steps, 1);
  std::vector<uint64_t> durations;
  for (uint64_t i = first; i < ends.size() && durations.size() < run.steps; ++i) {
    durations.push_back(ends[i] >= ends[i - 1] ? ends[i] - ends[i - 1] : 0);
  }
  result.steps_timed = durations.size();
  if (durations.size() < run.steps || durations.empty()) {
    result.why_not = "the clean run timed " + std::to_string(durations.size()) + " of the " +
                     std::to_string(run.steps) + " steps asked (it ended " +
                     std::to_string(ends.size()) + " steps, the first " + std::to_string(first) +
                     " not timed";
    if (run.exit_status && *run.exit_status != 0) {
      result.why_not += ", and exited with status " + std::to_string(*run.exit_status);
    }
    result.why_not += ")";
    return result;
  }
  result.step_ns = Summarize(durations).median;
  return result;
}

std::optional<DevicePeak> DevicePeakOf(const std::string& device_name, const std::string& dtype) {
  // Our own table, embedded: a unit test reads every entry of it.
  static const Json kDevicePeaks = Json::parse(kDevicePeaksText, nullptr, false);
  if (!kDevicePeaks.is_object() || !kDevicePeaks.contains("devices")) return std::nullopt;
  for (const Json& device : kDevicePeaks["devices"]) {
    const bool matches =
        std::any_of(device["match"].begin(), device["match"].end(), [&](const Json& text) {
          return device_name.find(text.get<std::string>()) != std::string::npos;
        });
    if (!matches) continue;
    const Json& peaks = device["peak_flops_per_s"];
    if (!peaks.contains(dtype)) return std::nullopt;
    return DevicePeak{peaks[dtype].get<double>(), device["name"].get<std::string>() + ", " + dtype +
                                                      ": " + device["source"].get<std::string>()};
  }
  return std::nullopt;
}

bool WorkCounted(const ProcessAnalysis& analysis) { return analysis.work && !analysis.work->off; }

Json ProcessWorkJson(const ProcessAnalysis& analysis, const Json& coverage,
                     const WorkInputs& inputs, PassWorkSettings* pass_settings) {
  *pass_settings = {};
  if (!WorkCounted(analysis)) {
    if (!inputs.requested && !analysis.work) return nullptr;
    const std::string seen = analysis.work && analysis.work->off
                                 ? "the counter said: off: " + *analysis.work->off
                                 : "no FLOP count came from this process (it did not import "
                                   "torch, or ran with --pytorch off)";
    return {{"counter", nullptr}, {"refusal", RefusalJson(FlopsNotCountedRefusal(), seen, 0)}};
  }
  const WorkAnalysis& work = *analysis.work;
  const std::string shortfall = DeviceJoinShortfall(analysis.device_measured, coverage);
  pass_settings->counted = true;
  pass_settings->achieved = shortfall.empty();
  Json by_dtype = Json::object();
  for (const auto& [dtype, flops] : work.flops_by_dtype) by_dtype[dtype] = flops;
  return {
      {"counter", OptionalJson(work.counter)},
      {"refusal", nullptr},
      {"flops", work.total.flops},
      {"bytes_estimate", work.total.bytes_estimate},
      {"arithmetic_intensity_hypothesis", Fraction(work.total.flops, work.total.bytes_estimate)},
      {"unattributed_flops", work.unattributed.flops},
      {"flops_by_dtype", std::move(by_dtype)},
      {"ops",
       {{"counted", OpsJson(work.counted, true)},
        {"free", OpsJson(work.free, false)},
        {"unknown", OpsJson(work.unknown, false)},
        {"unknown_remedy", work.unknown.empty() ? Json(nullptr) : Json(UnknownOpsRemedy())}}},
      {"achieved",
       {{"gate_passed", shortfall.empty()},
        {"refusal", shortfall.empty() ? Json(nullptr)
                                      : RefusalJson(KernelUtilizationRequiresDeviceJoinRefusal(),
                                                    shortfall, 0)}}},
      {"mfu", MfuJson(analysis, work, inputs)}};
}

}  // namespace gpuattr::collector
