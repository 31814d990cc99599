// The report's JSON for the analysis's values (schemas/report.schema.json, gpuattr.report/1):
// one function per field the report builder and the summary write. docs/attribution.md defines
// every number; these only spell them.
//
// `measured`: the process's device time was measured (ProcessAnalysis::device_measured). Where
// it was not, device numbers are null, never 0: totals, devices, pass device objects, families,
// coverage, phase times and the device terms of step rows. Pure functions; any thread.
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_JSON_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_analysis.h"

namespace gpuattr::collector {

inline constexpr char kReportSchemaVersion[] = "gpuattr.report/1";

// The terms of a step row (docs/attribution.md §Steps), in the order steps.summary and every
// reader of the rows take them.
inline constexpr const char* kStepTerms[] = {"host_ns",
                                             "forward_ns",
                                             "backward_ns",
                                             "recompute_ns",
                                             "optimizer_ns",
                                             "loss_ns",
                                             "communication_ns",
                                             "other_ns",
                                             "unattributed_ns",
                                             "busy_ns",
                                             "gaps_ns",
                                             "compute_busy_ns",
                                             "communication_busy_ns",
                                             "memory_busy_ns",
                                             "communication_hidden_ns",
                                             "communication_exposed_ns"};

// A step row's counts of the FLOP counter (docs/attribution.md §FLOPs): null when the process
// counted nothing.
inline constexpr const char* kStepWorkTerms[] = {"flops", "bytes_estimate", "unknown_ops"};

// The UTC second of a wall-clock time through strftime (a result under 64 bytes).
std::string UtcSeconds(uint64_t realtime_ns, const char* strftime_format);
// "2025-01-02T03:04:05.123456789Z".
std::string IsoUtc(uint64_t realtime_ns);
// IsoUtc's text read back (1 to 9 fraction digits); empty for anything else.
std::optional<uint64_t> ParseIsoUtc(const std::string& text);
// part / whole, or null when whole is 0.
nlohmann::json Fraction(uint64_t part, uint64_t whole);
// The value, or null when empty.
template <typename T>
nlohmann::json OptionalJson(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// How the nodes of `passes` spell their `work` (docs/attribution.md §FLOPs): null when the
// process counted nothing; achieved_flops_per_s only where its device join passed its gate.
struct PassWorkSettings {
  bool counted = false;
  bool achieved = false;
};
// One node of `passes`, with its children.
nlohmann::json PassJson(const PassNode& node, bool measured, PassWorkSettings work);
// One element of `families`; `kernel_ns` is the whole's kernel time, for `share`.
nlohmann::json FamilyJson(const FamilyStats& family, uint64_t kernel_ns);
nlohmann::json DeviceJson(const DeviceStats& device);
nlohmann::json TotalsJson(const Totals& totals);
nlohmann::json NullTotals();
nlohmann::json PhasesJson(bool measured, const PhaseTotals& phases);
// r = recompute_ns / forward_ns; null when not measured or forward_ns is 0.
nlohmann::json RecomputeFraction(bool measured, const PhaseTotals& phases);
// `modules` (§Modules): one PhasesJson per module path, with its `path`; null when not measured.
nlohmann::json ModulesJson(bool measured, const std::vector<ModuleRow>& modules);
// `coverage` without its fallbacks; coverage.passed compares the fraction with `threshold`.
nlohmann::json CoverageJson(bool measured, uint64_t attributed_kernel_ns, uint64_t kernel_ns,
                            const std::vector<Unattributed>& unattributed, double threshold,
                            const PhaseCoverage& phase_coverage);
// coverage.fallbacks (docs/attribution.md §Coverage).
nlohmann::json FallbacksJson(bool measured, const std::vector<Fallback>& fallbacks);
nlohmann::json LossJson(const Loss& loss, bool measured);
// `steps` with its rows left [] (report_builder.h): they are rendered by StepRowJson when the
// report is written.
nlohmann::json StepsJson(bool measured, bool work_counted, const Steps& steps);
// One element of steps.rows (docs/attribution.md §Steps); `work_counted`: the process's FLOP
// counter ran, else the kStepWorkTerms are null.
nlohmann::json StepRowJson(const StepRow& row, bool measured, bool work_counted);
// A process's capture window (docs/attach.md §What a window's report covers); null unless its
// stream was a window's. Wire enum values this collector does not know read as null.
nlohmann::json WindowJson(const ProcessAnalysis& analysis, uint64_t attach_index);
// One element of `refusals`: the catalogue entry's cause followed by what was seen.
nlohmann::json RefusalJson(const RefusalEntry& entry, const std::string& seen,
                           int32_t cupti_result);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_JSON_H_
