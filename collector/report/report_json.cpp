// The report's JSON for the analysis's values (report_json.h). Null-versus-measured rules:
// device numbers (totals, devices, pass device objects, families, coverage) are null when the
// process's device time was not measured (no successful CuptiState and no device records), and
// so are the phase times and the device terms of step rows; loss counters from the shim are null
// when no Diagnostics record arrived. docs/attribution.md defines every number.
#include "report/report_json.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <utility>

#include "analysis/attributed_activity.h"
#include "analysis/copy_fold.h"

namespace gpuattr::collector {

using Json = nlohmann::json;

Json Fraction(uint64_t part, uint64_t whole) {
  if (whole == 0) return nullptr;
  return static_cast<double>(part) / static_cast<double>(whole);
}

namespace {

Json PathOrNull(const std::optional<std::vector<std::string>>& path) {
  return path ? Json(*path) : Json(nullptr);
}

const char* GapKindName(GapKind kind) {
  switch (kind) {
    case GapKind::kHostBound:
      return "host_bound";
    case GapKind::kDependency:
      return "dependency";
    case GapKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// {count, total, mean (rounded toward zero), min, lower median, max, median_exact}; null without
// samples. The median and median_exact are null for a union of several summaries (samples.h).
template <typename T>
Json SampleStats(const SampleSummary<T>& samples) {
  if (samples.count == 0) return nullptr;
  return {{"count", samples.count},
          {"total", samples.total},
          {"mean", samples.total / static_cast<T>(samples.count)},
          {"min", samples.min},
          {"median", OptionalJson(samples.median)},
          {"max", samples.max},
          {"median_exact", OptionalJson(samples.median_exact)}};
}

Json UnattributedJson(const std::vector<Unattributed>& entries) {
  Json out = Json::array();
  for (const Unattributed& entry : entries) {
    out.push_back({{"reason", entry.reason},
                   {"ns", entry.ns},
                   {"kernel_ns", entry.kernel_ns},
                   {"activities", entry.activities}});
  }
  return out;
}

// coverage.by_phase's terms in nanoseconds, which merging reports reads back (the fractions do
// not give them): {P: {attributed_kernel_ns, unattributed_kernel_ns}}.
Json ByPhaseKernelNsJson(bool measured, const PhaseCoverage& coverage) {
  if (!measured) return nullptr;
  Json out = Json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) {
    out[PhaseName(static_cast<Phase>(i))] = {
        {"attributed_kernel_ns", coverage.attributed_kernel_ns[i]},
        {"unattributed_kernel_ns", coverage.unattributed_kernel_ns[i]}};
  }
  return out;
}

Json ByPhaseJson(bool measured, const PhaseCoverage& coverage) {
  Json out = Json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) {
    out[PhaseName(static_cast<Phase>(i))] =
        measured ? Fraction(coverage.attributed_kernel_ns[i],
                            coverage.attributed_kernel_ns[i] + coverage.unattributed_kernel_ns[i])
                 : Json(nullptr);
  }
  return out;
}

// kStepTerms of `row`, in order.
std::array<uint64_t, std::size(kStepTerms)> StepTerms(const StepRow& row) {
  const auto& ns = row.phases.ns;
  return {row.host_ns(),
          ns[static_cast<size_t>(Phase::kForward)],
          ns[static_cast<size_t>(Phase::kBackward)],
          ns[static_cast<size_t>(Phase::kRecompute)],
          ns[static_cast<size_t>(Phase::kOptimizer)],
          ns[static_cast<size_t>(Phase::kLoss)],
          ns[static_cast<size_t>(Phase::kCommunication)],
          row.phases.other_ns,
          row.unattributed_ns,
          row.busy_ns,
          row.gaps_ns(),
          row.categories.compute_ns,
          row.categories.communication_ns,
          row.categories.memory_ns,
          row.categories.communication_hidden_ns,
          row.categories.communication_exposed_ns};
}

// kStepWorkTerms of `row`, in order.
std::array<uint64_t, std::size(kStepWorkTerms)> StepWorkTerms(const StepRow& row) {
  return {row.work.flops, row.work.bytes_estimate, row.work.unknown_ops};
}

Json PassWorkJson(const PassNode& node, PassWorkSettings settings) {
  if (!settings.counted) return nullptr;
  const WorkCounts& self = node.work_self;
  // FLOP/s over the node's own busy time; nothing counted there, nothing achieved.
  Json achieved = nullptr;
  if (settings.achieved && self.flops != 0 && node.busy_ns != 0) {
    achieved = static_cast<double>(self.flops) * 1e9 / static_cast<double>(node.busy_ns);
  }
  return {{"flops", self.flops},
          {"flops_total", node.work_total.flops},
          {"bytes_estimate", self.bytes_estimate},
          {"bytes_estimate_total", node.work_total.bytes_estimate},
          {"unknown_ops", self.unknown_ops},
          {"unknown_ops_total", node.work_total.unknown_ops},
          {"achieved_flops_per_s", std::move(achieved)},
          {"arithmetic_intensity_hypothesis", Fraction(self.flops, self.bytes_estimate)}};
}

}  // namespace

std::string UtcSeconds(uint64_t realtime_ns, const char* strftime_format) {
  const auto seconds = static_cast<time_t>(realtime_ns / 1000000000u);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char out[64];
  std::strftime(out, sizeof(out), strftime_format, &utc);
  return out;
}

std::string IsoUtc(uint64_t realtime_ns) {
  char fraction[16];
  std::snprintf(fraction, sizeof(fraction), ".%09" PRIu64 "Z", realtime_ns % 1000000000u);
  return UtcSeconds(realtime_ns, "%Y-%m-%dT%H:%M:%S") + fraction;
}

std::optional<uint64_t> ParseIsoUtc(const std::string& text) {
  struct tm parts {};
  char fraction[10] = {};
  char zone = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%9[0-9]%c%n", &parts.tm_year,
                  &parts.tm_mon, &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec,
                  fraction, &zone, &consumed) != 8 ||
      zone != 'Z' || static_cast<size_t>(consumed) != text.size() || parts.tm_year < 1970) {
    return std::nullopt;
  }
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  const time_t seconds = timegm(&parts);
  if (seconds < 0) return std::nullopt;
  const size_t digits = std::strlen(fraction);
  uint64_t nanoseconds = 0;
  for (size_t i = 0; i < 9; ++i) {
    nanoseconds = nanoseconds * 10 + (i < digits ? static_cast<uint64_t>(fraction[i] - '0') : 0);
  }
  return static_cast<uint64_t>(seconds) * 1000000000u + nanoseconds;
}

Json PassJson(const PassNode& node, bool device_measured, PassWorkSettings work) {
  Json out;
  out["name"] = node.name;
  out["path"] = node.path;
  out["instances"] = node.instances;
  if (node.host) {
    out["host_ns"] = {{"total", node.host->total},
                      {"min", node.host->min},
                      {"median", node.host->median},
                      {"max", node.host->max},
                      {"median_exact", node.host->median_exact}};
  } else {
    out["host_ns"] = nullptr;
  }
  if (device_measured) {
    out["device"] = {{"self_ns", node.self_ns},
                     {"total_ns", node.total_ns},
                     {"busy_ns", node.busy_ns},
                     {"kernels", node.kernels},
                     {"activities", node.activities}};
    out["attribution"] = {{"direct_ns", node.direct_ns},
                          {"inherited_ns", node.inherited_ns},
                          {"captured_ns", node.captured_ns}};
    Json contexts = Json::array();
    for (const LaunchContext& context : node.launch_contexts) {
      contexts.push_back({{"path", PathOrNull(context.path)},
                          {"ns", context.ns},
                          {"activities", context.activities}});
    }
    out["launch_contexts"] = std::move(contexts);
  } else {
    out["device"] = nullptr;
    out["attribution"] = nullptr;
    out["launch_contexts"] = nullptr;
  }
  out["phase"] = node.phase ? Json(PhaseName(*node.phase)) : Json(nullptr);
  out["work"] = PassWorkJson(node, work);
  Json children = Json::array();
  for (const PassNode& child : node.children) {
    children.push_back(PassJson(child, device_measured, work));
  }
  out["children"] = std::move(children);
  return out;
}

Json FamilyJson(const FamilyStats& family, uint64_t kernel_ns) {
  Json shapes = Json::array();
  for (const ShapeStats& shape : family.shapes) {
    shapes.push_back({{"grid", shape.shape.grid},
                      {"block", shape.shape.block},
                      {"shared_memory_bytes", shape.shape.shared_memory_bytes},
                      {"kernels", shape.kernels},
                      {"total_ns", shape.total_ns}});
  }
  return {{"family", family.family},
          {"kernels", family.kernels},
          {"total_ns", family.total_ns},
          {"mean_ns", family.kernels ? family.total_ns / family.kernels : 0},
          {"min_ns", family.min_ns},
          {"max_ns", family.max_ns},
          {"share", Fraction(family.total_ns, kernel_ns)},
          {"names", family.names},
          {"shapes", std::move(shapes)},
          {"launch",
           {{"api_ns", SampleStats(family.launch_api)},
            {"latency_ns", SampleStats(family.launch_latency)}}}};
}

Json DeviceJson(const DeviceStats& device) {
  Json streams = Json::array();
  for (const StreamStats& stream : device.streams) {
    streams.push_back({{"id", stream.id},
                       {"busy_ns", stream.busy_ns},
                       {"span_ns", stream.span_ns},
                       {"idle_ns", stream.idle_ns},
                       {"kernel_ns", stream.kernel_ns},
                       {"memcpy_ns", stream.memcpy_ns},
                       {"memset_ns", stream.memset_ns},
                       {"activities", stream.activities}});
  }
  Json copies = Json::array();
  for (const CopyStats& copy : device.copies) {
    copies.push_back(
        {{"direction", CopyDirectionName(copy.copy_kind)},
         {"src_kind", MemoryKindName(copy.src_kind)},
         {"dst_kind", MemoryKindName(copy.dst_kind)},
         {"copies", copy.copies},
         {"bytes", copy.copies_without_bytes == copy.copies ? Json(nullptr) : Json(copy.bytes)},
         {"copies_without_bytes", copy.copies_without_bytes},
         {"ns", copy.ns}});
  }
  Json largest = Json::array();
  for (const Gap& gap : device.largest) {
    largest.push_back({{"start_ns", gap.start_ns},
                       {"end_ns", gap.end_ns},
                       {"ns", gap.end_ns - gap.start_ns},
                       {"class", GapKindName(gap.kind)},
                       {"launch_tid", gap.launch_tid ? Json(*gap.launch_tid) : Json(nullptr)},
                       {"host_range", PathOrNull(gap.host_range)}});
  }
  return {{"id", device.id},
          {"name", OptionalJson(device.name)},
          {"first_start_ns", device.first_start_ns},
          {"last_end_ns", device.last_end_ns},
          {"span_ns", device.span_ns},
          {"busy_ns", device.busy_ns},
          {"idle_ns", device.idle_ns},
          {"idle_fraction", Fraction(device.idle_ns, device.span_ns)},
          {"streams", std::move(streams)},
          {"categories",
           {{"compute_ns", device.categories.compute_ns},
            {"communication_ns", device.categories.communication_ns},
            {"memory_ns", device.categories.memory_ns},
            {"communication_hidden_ns", device.categories.communication_hidden_ns},
            {"communication_exposed_ns", device.categories.communication_exposed_ns}}},
          {"copies", std::move(copies)},
          {"gaps",
           {{"count", device.gaps},
            {"host_bound_ns", device.host_bound_ns},
            {"dependency_ns", device.dependency_ns},
            {"unclassified_ns", device.unclassified_ns},
            {"tail_ns", device.tail_ns},
            {"largest", std::move(largest)}}}};
}

Json TotalsJson(const Totals& totals) {
  return {{"kernel_ns", totals.kernel_ns}, {"memcpy_ns", totals.memcpy_ns},
          {"memset_ns", totals.memset_ns}, {"kernels", totals.kernels},
          {"launches", totals.launches},   {"memcpys", totals.memcpys},
          {"memsets", totals.memsets}};
}

Json NullTotals() {
  return {{"kernel_ns", nullptr}, {"memcpy_ns", nullptr}, {"memset_ns", nullptr},
          {"kernels", nullptr},   {"launches", nullptr},  {"memcpys", nullptr},
          {"memsets", nullptr}};
}

Json PhasesJson(bool measured, const PhaseTotals& phases) {
  Json out = Json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) {
    out[std::string(PhaseName(static_cast<Phase>(i))) + "_ns"] =
        measured ? Json(phases.ns[i]) : Json(nullptr);
  }
  out["other_ns"] = measured ? Json(phases.other_ns) : Json(nullptr);
  out["recompute_fraction"] = RecomputeFraction(measured, phases);
  return out;
}

Json ModulesJson(bool measured, const std::vector<ModuleRow>& modules) {
  if (!measured) return nullptr;
  Json out = Json::array();
  for (const ModuleRow& row : modules) {
    Json entry = PhasesJson(measured, row.phases);
    entry["module"] = row.module;
    entry["path"] = row.path;
    entry["calls"] = row.calls;
    entry["recompute_calls"] = row.recompute_calls;
    entry["fused"] = {{"forward_ns", row.fused.ns[static_cast<size_t>(Phase::kForward)]},
                      {"backward_ns", row.fused.ns[static_cast<size_t>(Phase::kBackward)]},
                      {"recompute_ns", row.fused.ns[static_cast<size_t>(Phase::kRecompute)]}};
    out.push_back(std::move(entry));
  }
  return out;
}

Json StepsJson(bool measured, bool work_counted, const Steps& steps) {
  Json summary = Json::object();
  std::vector<uint64_t> column;  // one term at a time: a run can have millions of rows
  auto median_of = [&](auto terms_of, size_t i) {
    column.clear();
    for (const StepRow& row : *steps.rows) column.push_back(terms_of(row)[i]);
    return Json(Summarize(column).median);
  };
  for (size_t i = 0; i < std::size(kStepTerms); ++i) {
    summary[kStepTerms[i]] =
        !steps.rows->empty() && (measured || i == 0) ? median_of(StepTerms, i) : Json(nullptr);
  }
  for (size_t i = 0; i < std::size(kStepWorkTerms); ++i) {
    summary[kStepWorkTerms[i]] =
        !steps.rows->empty() && work_counted ? median_of(StepWorkTerms, i) : Json(nullptr);
  }
  return {{"range", steps.range},         {"detected", steps.detected},
          {"instances", steps.instances}, {"unfinished", steps.unfinished},
          {"skipped", steps.skipped},     {"rows", Json::array()},
          {"summary", std::move(summary)}};
}

Json CoverageJson(bool measured, uint64_t attributed_kernel_ns, uint64_t kernel_ns,
                  const std::vector<Unattributed>& unattributed, double threshold,
                  const PhaseCoverage& phase_coverage) {
  // Kernels launched before the capture began could not be attributed by any rule: the fraction
  // is over what the trace could attribute (docs/attribution.md §Coverage).
  uint64_t attributable_kernel_ns = kernel_ns;
  for (const Unattributed& entry : unattributed) {
    if (entry.reason == kReasonLaunchedBeforeCapture) attributable_kernel_ns -= entry.kernel_ns;
  }
  Json fraction = measured ? Fraction(attributed_kernel_ns, attributable_kernel_ns) : Json(nullptr);
  Json passed = nullptr;
  if (fraction.is_number()) passed = fraction.get<double>() >= threshold;
  return {{"attributed_fraction", fraction},
          {"attributed_kernel_ns", measured ? Json(attributed_kernel_ns) : Json(nullptr)},
          {"attributable_kernel_ns", measured ? Json(attributable_kernel_ns) : Json(nullptr)},
          {"threshold", threshold},
          {"passed", passed},
          {"by_phase", ByPhaseJson(measured, phase_coverage)},
          {"by_phase_kernel_ns", ByPhaseKernelNsJson(measured, phase_coverage)},
          {"unattributed", measured ? UnattributedJson(unattributed) : Json(nullptr)}};
}

Json FallbacksJson(bool measured, const std::vector<Fallback>& fallbacks) {
  if (!measured) return nullptr;
  Json out = Json::array();
  for (const Fallback& entry : fallbacks) {
    out.push_back({{"reason", entry.reason}, {"ns", entry.ns}, {"activities", entry.activities}});
  }
  return out;
}

Json WindowJson(const ProcessAnalysis& analysis, uint64_t attach_index) {
  if (!analysis.window) return nullptr;
  const auto& begin = analysis.window->begin;
  const auto& end = analysis.window->end;
  Json end_reason = nullptr;
  Json detach = nullptr;
  if (end) {
    switch (static_cast<wire::WindowEndReason>(end->reason)) {
      case wire::WindowEndReason::kClosed:
        end_reason = "closed";
        break;
      case wire::WindowEndReason::kStepsDone:
        end_reason = "steps_done";
        break;
      case wire::WindowEndReason::kProcessExit:
        end_reason = "process_exit";
        break;
    }
    switch (static_cast<wire::DetachOutcome>(end->detach)) {
      case wire::DetachOutcome::kFinalized:
        detach = "finalized";
        break;
      case wire::DetachOutcome::kPending:
        detach = "pending";
        break;
      case wire::DetachOutcome::kNotAttached:
        detach = "not_attached";
        break;
      case wire::DetachOutcome::kProcessExit:
        detach = "process_exit";
        break;
    }
  }
  Json id = nullptr;
  if (begin) {
    id = begin->window_id;
  } else if (end) {
    id = end->window_id;
  }
  return {{"id", std::move(id)},
          {"begin_ns", begin ? Json(begin->timestamp_ns) : Json(nullptr)},
          {"end_ns", end ? Json(end->timestamp_ns) : Json(nullptr)},
          {"end_reason", std::move(end_reason)},
          {"detach", detach},
          {"attach_ns", begin ? Json(begin->attach_ns) : Json(nullptr)},
          {"detach_ns", detach == "finalized" ? Json(end->detach_ns) : Json(nullptr)},
          {"steps", end ? Json(end->steps_seen) : Json(nullptr)},
          {"excluded_activities", analysis.excluded_activities},
          {"launch_correlation_ids", analysis.first_launch_correlation == 0
                                         ? Json(nullptr)
                                         : Json{{"first", analysis.first_launch_correlation},
                                                {"last", analysis.last_launch_correlation}}},
          {"attach_index", attach_index},
          {"late_attach", begin ? Json(analysis.window->late_attach) : Json(nullptr)}};
}

Json RefusalJson(const RefusalEntry& entry, const std::string& detail, int32_t cupti_result) {
  std::string cause = entry.cause;
  if (!detail.empty()) cause += " Seen: " + detail + ".";
  return {{"code", entry.code},
          {"cause", cause},
          {"remedy", entry.remedy},
          {"cupti_result", cupti_result != 0 ? Json(cupti_result) : Json(nullptr)}};
}

Json LossJson(const Loss& loss, bool measured) {
  auto shim_field = [&](uint64_t wire::Diagnostics::*field) {
    return loss.shim ? Json((*loss.shim).*field) : Json(nullptr);
  };
  auto measured_field = [&](uint64_t value) { return measured ? Json(value) : Json(nullptr); };
  Json lost_span = nullptr;
  if (loss.lost_span) {
    const LostSpan& lost = *loss.lost_span;
    lost_span = {{"from_ns", lost.from_ns},
                 {"to_ns", lost.to_ns ? Json(*lost.to_ns) : Json(nullptr)},
                 {"ns", lost.to_ns ? Json(*lost.to_ns - lost.from_ns) : Json(nullptr)}};
  }
  return {{"lost_span", std::move(lost_span)},
          {"dropped_records", loss.dropped_records ? Json(*loss.dropped_records) : Json(nullptr)},
          {"unmatched_launches", measured_field(loss.unmatched_launches)},
          {"orphan_activities", measured_field(loss.orphan_activities)},
          {"incomplete_records", measured_field(loss.incomplete_records)},
          {"late_activities", measured_field(loss.late_activities)},
          {"expired_launches", measured_field(loss.expired_launches)},
          {"lost_messages", loss.lost_messages},
          {"sequence_regressions", loss.sequence_regressions},
          {"ring_dropped_records", shim_field(&wire::Diagnostics::ring_dropped_records)},
          {"socket_dropped_records", shim_field(&wire::Diagnostics::socket_dropped_records)},
          {"socket_dropped_messages", shim_field(&wire::Diagnostics::socket_dropped_messages)},
          {"cupti_dropped_records", shim_field(&wire::Diagnostics::cupti_dropped_records)},
          {"cupti_buffers_declined", shim_field(&wire::Diagnostics::cupti_buffers_declined)},
          {"intern_table_full", shim_field(&wire::Diagnostics::intern_table_full)},
          {"untranslated_records", shim_field(&wire::Diagnostics::untranslated_records)},
          {"shim_incomplete_records", shim_field(&wire::Diagnostics::incomplete_records)},
          {"unmatched_pops", loss.unmatched_pops},
          {"implicitly_closed_ranges", loss.implicitly_closed_ranges},
          {"unclosed_ranges", loss.unclosed_ranges},
          {"unmatched_range_ends", loss.unmatched_range_ends},
          {"unknown_records", loss.unknown_records},
          {"orphan_api_exits", loss.orphan_api_exits},
          {"zero_correlation_launches", loss.zero_correlation_launches}};
}

// r = recompute / forward (§Recompute): null when not measured or forward is 0.
Json RecomputeFraction(bool measured, const PhaseTotals& phases) {
  const uint64_t forward = phases.ns[static_cast<size_t>(Phase::kForward)];
  const uint64_t recompute = phases.ns[static_cast<size_t>(Phase::kRecompute)];
  return measured && forward != 0
             ? Json(static_cast<double>(recompute) / static_cast<double>(forward))
             : Json(nullptr);
}

Json StepRowJson(const StepRow& row, bool device_measured, bool work_counted) {
  Json out = {
      {"index", row.index}, {"name", row.name}, {"start_ns", row.start_ns}, {"end_ns", row.end_ns}};
  const auto terms = StepTerms(row);
  for (size_t i = 0; i < terms.size(); ++i) {
    // host_ns is measured on the host; every other term needs device time.
    out[kStepTerms[i]] = device_measured || i == 0 ? Json(terms[i]) : Json(nullptr);
  }
  const auto work_terms = StepWorkTerms(row);
  for (size_t i = 0; i < work_terms.size(); ++i) {
    out[kStepWorkTerms[i]] = work_counted ? Json(work_terms[i]) : Json(nullptr);
  }
  out["recompute_fraction"] = RecomputeFraction(device_measured, row.phases);
  return out;
}

}  // namespace gpuattr::collector
