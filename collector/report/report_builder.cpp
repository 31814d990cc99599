// BuildReport (report_builder.h): one AnalyzeProcess per traced process, turned into the
// gpuattr.report/1 JSON, plus the summary merged over processes. Null-versus-measured rules:
// device numbers (totals, devices, pass device objects, families, coverage) are null when the
// process's device time was not measured (no successful CuptiState and no device records), and so
// are the phase times and the device terms of step rows; `steps` is null without a step range
// (`steps_reason` says why); loss counters from the shim are null when no Diagnostics record
// arrived. docs/attribution.md defines every number.
#include "report/report_builder.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <ctime>
#include <set>

#include "analysis/process_analysis.h"
#include "analysis/refusal_catalogue.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

constexpr const char* kSchemaVersion = "gpuattr.report/1";
constexpr const char* kToolVersion = "0.1.0";

std::string IsoUtc(uint64_t realtime_ns) {
  const auto seconds = static_cast<time_t>(realtime_ns / 1000000000u);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &utc);
  char out[64];
  std::snprintf(out, sizeof(out), "%s.%09" PRIu64 "Z", date, realtime_ns % 1000000000u);
  return out;
}

Json Fraction(uint64_t part, uint64_t whole) {
  if (whole == 0) return nullptr;
  return static_cast<double>(part) / static_cast<double>(whole);
}

Json OptionalString(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

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

Json PassJson(const PassNode& node, bool device_measured) {
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
  Json children = Json::array();
  for (const PassNode& child : node.children) children.push_back(PassJson(child, device_measured));
  out["children"] = std::move(children);
  return out;
}

// {count, mean (rounded toward zero), min, lower median, max, median_exact}; null without samples.
template <typename T>
Json SampleStats(const Samples<T>& samples) {
  if (samples.count() == 0) return nullptr;
  return {{"count", samples.count()}, {"mean", samples.total() / static_cast<T>(samples.count())},
          {"min", samples.min()},     {"median", samples.median()},
          {"max", samples.max()},     {"median_exact", samples.exact()}};
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
           {{"api_ns", SampleStats(family.api_samples)},
            {"latency_ns", SampleStats(family.latency_samples)}}}};
}

Json DeviceJson(const DeviceStats& device) {
  Json streams = Json::array();
  for (const StreamStats& stream : device.streams) {
    streams.push_back({{"id", stream.id},
                       {"busy_ns", stream.busy_ns},
                       {"kernel_ns", stream.kernel_ns},
                       {"memcpy_ns", stream.memcpy_ns},
                       {"memset_ns", stream.memset_ns},
                       {"activities", stream.activities}});
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
          {"name", OptionalString(device.name)},
          {"first_start_ns", device.first_start_ns},
          {"last_end_ns", device.last_end_ns},
          {"span_ns", device.span_ns},
          {"busy_ns", device.busy_ns},
          {"idle_ns", device.idle_ns},
          {"idle_fraction", Fraction(device.idle_ns, device.span_ns)},
          {"streams", std::move(streams)},
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

Json PhasesJson(bool measured, const PhaseTotals& phases) {
  Json out = Json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) {
    out[std::string(PhaseName(static_cast<Phase>(i))) + "_ns"] =
        measured ? Json(phases.ns[i]) : Json(nullptr);
  }
  out["other_ns"] = measured ? Json(phases.other_ns) : Json(nullptr);
  const uint64_t forward = phases.ns[static_cast<size_t>(Phase::kForward)];
  const uint64_t recompute = phases.ns[static_cast<size_t>(Phase::kRecompute)];
  out["recompute_fraction"] =
      measured && forward != 0 ? Json(static_cast<double>(recompute) / static_cast<double>(forward))
                               : Json(nullptr);
  return out;
}

// The terms of one step row (§Steps), in a fixed order shared with the summary.
constexpr const char* kStepTerms[] = {
    "host_ns", "forward_ns", "backward_ns",     "recompute_ns", "optimizer_ns",
    "loss_ns", "other_ns",   "unattributed_ns", "busy_ns",      "gaps_ns"};

std::array<uint64_t, std::size(kStepTerms)> StepTerms(const StepRow& row) {
  const auto& ns = row.phases.ns;
  return {row.host_ns(),
          ns[static_cast<size_t>(Phase::kForward)],
          ns[static_cast<size_t>(Phase::kBackward)],
          ns[static_cast<size_t>(Phase::kRecompute)],
          ns[static_cast<size_t>(Phase::kOptimizer)],
          ns[static_cast<size_t>(Phase::kLoss)],
          row.phases.other_ns,
          row.unattributed_ns,
          row.busy_ns,
          row.gaps_ns()};
}

// steps with its rows left [] (report_builder.h): they are rendered by StepRowJson when written.
Json StepsJson(bool measured, const Steps& steps) {
  Json summary = Json::object();
  std::vector<uint64_t> column;  // one term at a time: a run can have millions of rows
  for (size_t i = 0; i < std::size(kStepTerms); ++i) {
    Json median = nullptr;
    if (!steps.rows->empty() && (measured || i == 0)) {
      column.clear();
      for (const StepRow& row : *steps.rows) column.push_back(StepTerms(row)[i]);
      median = Summarize(column).median;
    }
    summary[kStepTerms[i]] = std::move(median);
  }
  return {{"range", steps.range},         {"detected", steps.detected},
          {"instances", steps.instances}, {"skipped", steps.skipped},
          {"rows", Json::array()},        {"summary", std::move(summary)}};
}

Json CoverageJson(bool measured, uint64_t attributed_kernel_ns, uint64_t kernel_ns,
                  const std::vector<Unattributed>& unattributed, double threshold,
                  const PhaseCoverage& phase_coverage) {
  Json fraction = measured ? Fraction(attributed_kernel_ns, kernel_ns) : Json(nullptr);
  Json passed = nullptr;
  if (fraction.is_number()) passed = fraction.get<double>() >= threshold;
  return {{"attributed_fraction", fraction},
          {"attributed_kernel_ns", measured ? Json(attributed_kernel_ns) : Json(nullptr)},
          {"threshold", threshold},
          {"passed", passed},
          {"by_phase", ByPhaseJson(measured, phase_coverage)},
          {"unattributed", measured ? UnattributedJson(unattributed) : Json(nullptr)}};
}

// coverage.fallbacks: device time attributed by a fallback (docs/attribution.md §Coverage);
// null when device time was not measured.
Json FallbacksJson(bool measured, const std::vector<Fallback>& fallbacks) {
  if (!measured) return nullptr;
  Json out = Json::array();
  for (const Fallback& entry : fallbacks) {
    out.push_back({{"reason", entry.reason}, {"ns", entry.ns}, {"activities", entry.activities}});
  }
  return out;
}

// A process's capture window (docs/attach.md §What a window's report covers); null unless its
// stream was a window's. Wire enum values this collector does not know read as null.
Json WindowJson(const ProcessAnalysis& analysis, const ReportInputs& inputs) {
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
  auto index = inputs.attach_indices.find(analysis.process->pid);
  return {{"id", std::move(id)},
          {"begin_ns", begin ? Json(begin->timestamp_ns) : Json(nullptr)},
          {"end_ns", end ? Json(end->timestamp_ns) : Json(nullptr)},
          {"end_reason", std::move(end_reason)},
          {"detach", detach},
          {"attach_ns", begin ? Json(begin->attach_ns) : Json(nullptr)},
          {"detach_ns", detach == "finalized" ? Json(end->detach_ns) : Json(nullptr)},
          {"steps", end ? Json(end->steps_seen) : Json(nullptr)},
          {"excluded_activities", analysis.excluded_activities},
          {"attach_index", index != inputs.attach_indices.end() ? index->second : uint64_t{1}}};
}

// capture.window: what `gpuattr attach` asked for; null unless the report is an attach's.
Json WindowRequestJson(const std::optional<WindowRequest>& request) {
  if (!request) return nullptr;
  auto optional = [](const auto& value) { return value ? Json(*value) : Json(nullptr); };
  return {{"selector", request->selector},     {"pid", optional(request->pid)},
          {"rank", optional(request->rank)},   {"duration_ns", optional(request->duration_ns)},
          {"steps", optional(request->steps)}, {"step_name", optional(request->step_name)}};
}

Json RefusalJson(const RefusalEntry& entry, const std::string& detail, int32_t cupti_result) {
  std::string cause = entry.cause;
  if (!detail.empty()) cause += " Seen: " + detail + ".";
  return {{"code", entry.code},
          {"cause", cause},
          {"remedy", entry.remedy},
          {"cupti_result", cupti_result != 0 ? Json(cupti_result) : Json(nullptr)}};
}

// Everything one process contributes: its JSON and the numbers the summary merges.
struct ProcessReport {
  Json json;
  StepRowTable step_rows;
  Json summary_row;  // this process's line of summary.ranks
  std::string status;
  int rank_sort = 0;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  bool measured = false;
  Totals totals;
  uint64_t attributed_kernel_ns = 0;
  PhaseCoverage phase_coverage;
  std::vector<Unattributed> unattributed;
  std::vector<Fallback> fallbacks;
  std::vector<FamilyStats> families;
};

ProcessReport BuildProcess(ProcessAnalysis analysis, const ReportInputs& inputs) {
  const ProcessIdentity& identity = *analysis.process;
  const bool measured = analysis.device_measured;
  Json refusals = Json::array();
  for (const ProcessRefusal& refusal : analysis.refusals) {
    refusals.push_back(RefusalJson(*refusal.entry, refusal.seen, refusal.cupti_result));
  }
  const char* status = ProcessStatusName(analysis.status);

  Json process;
  process["pid"] = identity.pid;
  process["ppid"] = identity.ppid;
  process["rank"] = identity.rank >= 0 ? Json(identity.rank) : Json(nullptr);
  process["local_rank"] = identity.local_rank >= 0 ? Json(identity.local_rank) : Json(nullptr);
  process["exe"] = OptionalString(identity.exe);
  auto exit_status = inputs.exit_statuses.find(identity.pid);
  process["exit_status"] =
      exit_status != inputs.exit_statuses.end() ? Json(exit_status->second) : Json(nullptr);
  process["status"] = status;
  process["goodbye"] = analysis.goodbye;
  process["refusals"] = std::move(refusals);

  const Loss& loss = analysis.loss;
  auto shim_field = [&](uint64_t wire::Diagnostics::*field) {
    return loss.shim ? Json((*loss.shim).*field) : Json(nullptr);
  };
  auto measured_field = [&](uint64_t value) { return measured ? Json(value) : Json(nullptr); };
  process["loss"] = {
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
  process["totals"] = measured ? TotalsJson(analysis.totals) : NullTotals();

  if (measured) {
    Json devices = Json::array();
    for (const DeviceStats& device : analysis.devices) devices.push_back(DeviceJson(device));
    process["devices"] = std::move(devices);
  } else {
    process["devices"] = nullptr;
  }
  Json passes = Json::array();
  for (const PassNode& root : analysis.passes) passes.push_back(PassJson(root, measured));
  process["passes"] = std::move(passes);
  if (measured) {
    Json families = Json::array();
    for (const FamilyStats& family : analysis.families) {
      families.push_back(FamilyJson(family, analysis.totals.kernel_ns));
    }
    process["families"] = std::move(families);
  } else {
    process["families"] = nullptr;
  }
  process["phases"] = PhasesJson(measured, analysis.phases);
  process["steps"] = analysis.steps ? StepsJson(measured, *analysis.steps) : Json(nullptr);
  process["steps_reason"] = analysis.steps ? Json(nullptr) : Json(analysis.steps_reason);
  process["coverage"] =
      CoverageJson(measured, analysis.attributed_kernel_ns, analysis.totals.kernel_ns,
                   analysis.unattributed, inputs.coverage_threshold, analysis.phase_coverage);
  process["coverage"]["fallbacks"] = FallbacksJson(measured, analysis.fallbacks);

  Json ranges = Json::array();
  for (const SpanStats& span : analysis.ranges) {
    ranges.push_back({{"name", span.name},
                      {"domain", OptionalString(span.domain)},
                      {"instances", span.host.count},
                      {"host_ns",
                       {{"total", span.host.total},
                        {"min", span.host.min},
                        {"median", span.host.median},
                        {"max", span.host.max}}}});
  }
  process["ranges"] = std::move(ranges);
  Json marks = Json::array();
  for (const MarkStats& mark : analysis.marks) {
    marks.push_back(
        {{"name", mark.name}, {"domain", OptionalString(mark.domain)}, {"count", mark.count}});
  }
  process["marks"] = std::move(marks);
  Json threads = Json::array();
  for (const ThreadName& thread : analysis.threads) {
    threads.push_back({{"tid", thread.tid}, {"name", thread.name}});
  }
  process["threads"] = std::move(threads);
  process["main_thread"] = analysis.main_tid ? Json(*analysis.main_tid) : Json(nullptr);
  process["window"] = WindowJson(analysis, inputs);

  uint64_t busy = 0;
  uint64_t idle = 0;
  for (const DeviceStats& device : analysis.devices) {
    busy += device.busy_ns;
    idle += device.idle_ns;
  }
  ProcessReport report;
  // The rank table's step time (§Ranks): the lower median of the kept step rows' host_ns.
  Json step_ns = nullptr;
  if (process["steps"].is_object()) step_ns = process["steps"]["summary"]["host_ns"];
  report.summary_row = {{"rank", process["rank"]},
                        {"local_rank", process["local_rank"]},
                        {"pid", identity.pid},
                        {"ppid", identity.ppid},
                        {"status", status},
                        {"step_ns", std::move(step_ns)},
                        {"busy_ns", measured ? Json(busy) : Json(nullptr)},
                        {"idle_ns", measured ? Json(idle) : Json(nullptr)},
                        {"coverage", process["coverage"]["attributed_fraction"]}};
  report.status = status;
  report.json = std::move(process);
  report.step_rows.device_measured = measured;
  if (analysis.steps) report.step_rows.rows = analysis.steps->rows;
  report.rank_sort = identity.rank >= 0 ? identity.rank : INT32_MAX;
  report.pid = identity.pid;
  report.ppid = identity.ppid;
  report.measured = measured;
  report.totals = analysis.totals;
  report.attributed_kernel_ns = analysis.attributed_kernel_ns;
  report.phase_coverage = analysis.phase_coverage;
  report.unattributed = std::move(analysis.unattributed);
  report.fallbacks = std::move(analysis.fallbacks);
  report.families = std::move(analysis.families);
  return report;
}

// The straggler terms of the rank table (docs/attribution.md §Ranks), from the summary.ranks
// rows with a step time: the slowest and the fastest row by step_ns (ties: the earlier row) and
// straggler_spread = (slowest - fastest) / fastest. All null with fewer than two such rows;
// the spread is also null when the fastest step_ns is 0.
void AddStragglers(const Json& ranks, Json* summary) {
  const Json* slowest = nullptr;
  const Json* fastest = nullptr;
  size_t with_steps = 0;
  for (const Json& row : ranks) {
    if (!row["step_ns"].is_number_integer()) continue;
    ++with_steps;
    const uint64_t step_ns = row["step_ns"].get<uint64_t>();
    if (slowest == nullptr || step_ns > (*slowest)["step_ns"].get<uint64_t>()) slowest = &row;
    if (fastest == nullptr || step_ns < (*fastest)["step_ns"].get<uint64_t>()) fastest = &row;
  }
  auto entry = [](const Json& row) {
    return Json{{"rank", row["rank"]}, {"pid", row["pid"]}, {"step_ns", row["step_ns"]}};
  };
  if (with_steps < 2) {
    (*summary)["slowest"] = nullptr;
    (*summary)["fastest"] = nullptr;
    (*summary)["straggler_spread"] = nullptr;
    return;
  }
  const uint64_t slow_ns = (*slowest)["step_ns"].get<uint64_t>();
  const uint64_t fast_ns = (*fastest)["step_ns"].get<uint64_t>();
  (*summary)["slowest"] = entry(*slowest);
  (*summary)["fastest"] = entry(*fastest);
  (*summary)["straggler_spread"] =
      fast_ns == 0 ? Json(nullptr)
                   : Json(static_cast<double>(slow_ns - fast_ns) / static_cast<double>(fast_ns));
}

Json SummaryJson(const std::vector<ProcessReport>& processes, const ReportInputs& inputs) {
  Totals totals;
  uint64_t attributed = 0;
  PhaseCoverage phase_coverage;
  bool any_measured = false;
  std::map<std::string, Unattributed> unattributed;
  std::map<std::string, Fallback> fallbacks;
  std::map<std::string, FamilyStats> families;
  Json statuses = {{"complete", 0}, {"truncated", 0}, {"refused", 0}};
  Json ranks = Json::array();
  for (const ProcessReport& process : processes) {
    statuses[process.status] = statuses[process.status].get<int>() + 1;
    ranks.push_back(process.summary_row);
    if (!process.measured) continue;
    any_measured = true;
    totals.kernel_ns += process.totals.kernel_ns;
    totals.memcpy_ns += process.totals.memcpy_ns;
    totals.memset_ns += process.totals.memset_ns;
    totals.kernels += process.totals.kernels;
    totals.memcpys += process.totals.memcpys;
    totals.memsets += process.totals.memsets;
    totals.launches += process.totals.launches;
    attributed += process.attributed_kernel_ns;
    for (size_t i = 0; i < kPhaseCount; ++i) {
      phase_coverage.attributed_kernel_ns[i] += process.phase_coverage.attributed_kernel_ns[i];
      phase_coverage.unattributed_kernel_ns[i] += process.phase_coverage.unattributed_kernel_ns[i];
    }
    for (const Unattributed& entry : process.unattributed) {
      Unattributed& merged = unattributed[entry.reason];
      merged.reason = entry.reason;
      merged.ns += entry.ns;
      merged.kernel_ns += entry.kernel_ns;
      merged.activities += entry.activities;
    }
    for (const Fallback& entry : process.fallbacks) {
      Fallback& merged = fallbacks[entry.reason];
      merged.reason = entry.reason;
      merged.ns += entry.ns;
      merged.activities += entry.activities;
    }
    for (const FamilyStats& family : process.families) {
      FamilyStats& merged = families[family.family];
      merged.family = family.family;
      merged.Merge(family);
    }
  }
  std::vector<Unattributed> merged_unattributed;
  for (auto& [reason, entry] : unattributed) merged_unattributed.push_back(entry);
  std::stable_sort(merged_unattributed.begin(), merged_unattributed.end(),
                   [](const Unattributed& a, const Unattributed& b) { return a.ns > b.ns; });
  std::vector<FamilyStats> merged_families;
  for (auto& [name, family] : families) merged_families.push_back(std::move(family));
  std::stable_sort(
      merged_families.begin(), merged_families.end(),
      [](const FamilyStats& a, const FamilyStats& b) { return a.total_ns > b.total_ns; });
  Json family_json = nullptr;
  if (any_measured) {
    family_json = Json::array();
    for (const FamilyStats& family : merged_families) {
      family_json.push_back(FamilyJson(family, totals.kernel_ns));
    }
  }
  Json summary = {
      {"processes", processes.size()},
      {"statuses", std::move(statuses)},
      {"totals", any_measured ? TotalsJson(totals) : NullTotals()},
      {"coverage", CoverageJson(any_measured, attributed, totals.kernel_ns, merged_unattributed,
                                inputs.coverage_threshold, phase_coverage)},
      {"families", std::move(family_json)}};
  std::vector<Fallback> merged_fallbacks;
  for (auto& [reason, entry] : fallbacks) merged_fallbacks.push_back(entry);
  summary["coverage"]["fallbacks"] = FallbacksJson(any_measured, merged_fallbacks);
  AddStragglers(ranks, &summary);
  summary["ranks"] = std::move(ranks);
  return summary;
}

// Parents that never connected (docs/attribution.md §Ranks): the ppid of a traced process that
// is not itself traced but that gpuattr reaped (the command, or a descendant orphaned to the
// subreaper), so it was a descendant of the capture with a known exit status. One entry each,
// {pid, exit_status, children}, by pid; it gets no process row. Sets every process's `parent`:
// kind `traced` (a process of the report), `launcher` (in this list) or `outside` (neither).
Json LaunchersJson(std::vector<ProcessReport>& processes, const ReportInputs& inputs) {
  std::set<uint32_t> traced;
  for (const ProcessReport& process : processes) traced.insert(process.pid);
  std::map<uint32_t, std::vector<uint32_t>> children;  // launcher pid -> traced children
  for (ProcessReport& process : processes) {
    const char* kind = "outside";
    if (traced.count(process.ppid) != 0) {
      kind = "traced";
    } else if (inputs.exit_statuses.count(process.ppid) != 0) {
      kind = "launcher";
      children[process.ppid].push_back(process.pid);
    }
    process.json["parent"] = {{"pid", process.ppid}, {"kind", kind}};
  }
  Json launchers = Json::array();
  for (auto& [pid, pids] : children) {
    std::sort(pids.begin(), pids.end());
    launchers.push_back(
        {{"pid", pid}, {"exit_status", inputs.exit_statuses.at(pid)}, {"children", pids}});
  }
  return launchers;
}

}  // namespace

Json StepRowJson(const StepRow& row, bool device_measured) {
  Json out = {
      {"index", row.index}, {"name", row.name}, {"start_ns", row.start_ns}, {"end_ns", row.end_ns}};
  const auto terms = StepTerms(row);
  for (size_t i = 0; i < terms.size(); ++i) {
    // host_ns is measured on the host; every other term needs device time.
    out[kStepTerms[i]] = device_measured || i == 0 ? Json(terms[i]) : Json(nullptr);
  }
  return out;
}

Report BuildReport(const ReportInputs& inputs) {
  std::vector<ProcessReport> processes;
  uint64_t without_hello = 0;
  for (const ProcessAnalysis& analysis : inputs.processes) {
    if (!analysis.process) {
      ++without_hello;
      continue;
    }
    processes.push_back(BuildProcess(analysis, inputs));
  }
  std::stable_sort(processes.begin(), processes.end(),
                   [](const ProcessReport& a, const ProcessReport& b) {
                     return a.rank_sort != b.rank_sort ? a.rank_sort < b.rank_sort : a.pid < b.pid;
                   });

  Report built;
  Json& report = built.without_step_rows;
  report["schema_version"] = kSchemaVersion;
  report["tool"] = {{"name", "gpuattr"}, {"version", kToolVersion}};
  report["capture"] = {{"mode", inputs.capture.mode},
                       {"command", inputs.capture.command},
                       {"source", inputs.capture.source},
                       {"host", inputs.capture.host},
                       {"started_at", IsoUtc(inputs.capture.started_at_realtime_ns)},
                       {"duration_ns", inputs.capture.duration_ns},
                       {"clock", "CLOCK_MONOTONIC"},
                       {"inherit", inputs.inherit},
                       {"window", WindowRequestJson(inputs.window_request)}};
  report["summary"] = SummaryJson(processes, inputs);
  Json launchers = LaunchersJson(processes, inputs);
  Json process_json = Json::array();
  for (ProcessReport& process : processes) {
    process_json.push_back(std::move(process.json));
    built.step_rows.push_back(std::move(process.step_rows));
  }
  report["processes"] = std::move(process_json);
  report["launchers"] = std::move(launchers);
  report["diagnostics"] = {{"rejected_connections", inputs.rejected_connections},
                           {"rejected_messages", inputs.rejected_messages},
                           {"connections_without_hello", without_hello}};
  return built;
}

}  // namespace gpuattr::collector
