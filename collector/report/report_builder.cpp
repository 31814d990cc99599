// BuildReport (report_builder.h): one entry per traced process from its analysis, ordered by
// rank then pid, with the summary over them (summary.h) and the run's own diagnostics. The
// values' JSON is report_json.h's.
#include "report/report_builder.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "analysis/refusal_catalogue.h"
#include "base/check.h"
#include "gpuattr_version.h"
#include "report/report_json.h"
#include "report/summary.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

// capture.window: what `gpuattr attach` asked for; null unless the report is an attach's.
Json WindowRequestJson(const std::optional<WindowRequest>& request) {
  if (!request) return nullptr;
  return {
      {"selector", request->selector},         {"pid", OptionalJson(request->pid)},
      {"rank", OptionalJson(request->rank)},   {"duration_ns", OptionalJson(request->duration_ns)},
      {"steps", OptionalJson(request->steps)}, {"step_name", OptionalJson(request->step_name)}};
}

// One process's entry, its rank row and its analysis, for BuildReport to order and summarise.
ProcessEntry BuildProcess(const ProcessAnalysis& analysis, const ReportInputs& inputs) {
  GPUATTR_DCHECK(analysis.process);  // BuildReport only counts the others
  const ProcessIdentity& identity = *analysis.process;
  const bool measured = analysis.device_measured;
  Json refusals = Json::array();
  for (const ProcessRefusal& refusal : analysis.refusals) {
    refusals.push_back(RefusalJson(*refusal.entry, refusal.seen, refusal.cupti_result));
  }
  const char* status = ProcessStatusName(analysis.status);

  Json process;
  process["host"] = OptionalJson(inputs.capture.host);
  process["pid"] = identity.pid;
  process["ppid"] = identity.ppid;
  process["rank"] = identity.rank >= 0 ? Json(identity.rank) : Json(nullptr);
  process["local_rank"] = identity.local_rank >= 0 ? Json(identity.local_rank) : Json(nullptr);
  process["exe"] = OptionalJson(identity.exe);
  auto exit_status = inputs.exit_statuses.find(identity.pid);
  process["exit_status"] =
      exit_status != inputs.exit_statuses.end() ? Json(exit_status->second) : Json(nullptr);
  process["status"] = status;
  process["goodbye"] = analysis.goodbye;
  process["refusals"] = std::move(refusals);

  process["loss"] = LossJson(analysis.loss, measured);
  process["totals"] = measured ? TotalsJson(analysis.totals) : NullTotals();

  if (measured) {
    Json devices = Json::array();
    for (const DeviceStats& device : analysis.devices) devices.push_back(DeviceJson(device));
    process["devices"] = std::move(devices);
  } else {
    process["devices"] = nullptr;
  }
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
  process["modules"] = ModulesJson(measured, analysis.modules);
  process["steps"] =
      analysis.steps ? StepsJson(measured, WorkCounted(analysis), *analysis.steps) : Json(nullptr);
  process["steps_reason"] = analysis.steps ? Json(nullptr) : Json(analysis.steps_reason);
  process["coverage"] =
      CoverageJson(measured, analysis.attributed_kernel_ns, analysis.totals.kernel_ns,
                   analysis.unattributed, inputs.coverage_threshold, analysis.phase_coverage);
  process["coverage"]["fallbacks"] = FallbacksJson(measured, analysis.fallbacks);
  PassWorkSettings pass_work;
  process["work"] = ProcessWorkJson(analysis, process["coverage"], inputs.work, &pass_work);
  Json passes = Json::array();
  for (const PassNode& root : analysis.passes) {
    passes.push_back(PassJson(root, measured, pass_work));
  }
  process["passes"] = std::move(passes);

  Json ranges = Json::array();
  for (const SpanStats& span : analysis.ranges) {
    ranges.push_back({{"name", span.name},
                      {"domain", OptionalJson(span.domain)},
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
        {{"name", mark.name}, {"domain", OptionalJson(mark.domain)}, {"count", mark.count}});
  }
  process["marks"] = std::move(marks);
  Json threads = Json::array();
  for (const ThreadName& thread : analysis.threads) {
    threads.push_back({{"tid", thread.tid}, {"name", thread.name}});
  }
  process["threads"] = std::move(threads);
  process["main_thread"] = analysis.main_tid ? Json(*analysis.main_tid) : Json(nullptr);
  auto attach_index = inputs.attach_indices.find(identity.pid);
  process["window"] =
      WindowJson(analysis, attach_index != inputs.attach_indices.end() ? attach_index->second : 1);

  uint64_t busy = 0;
  uint64_t idle = 0;
  uint64_t exposed_communication = 0;
  for (const DeviceStats& device : analysis.devices) {
    busy += device.busy_ns;
    idle += device.idle_ns;
    exposed_communication += device.categories.communication_exposed_ns;
  }
  // The rank table's step time (§Ranks): the lower median of the kept step rows' host_ns.
  Json step_ns = nullptr;
  if (process["steps"].is_object()) step_ns = process["steps"]["summary"]["host_ns"];
  ProcessEntry entry;
  entry.analysis = &analysis;
  entry.rank_row = {
      {"host", process["host"]},
      {"rank", process["rank"]},
      {"local_rank", process["local_rank"]},
      {"pid", identity.pid},
      {"ppid", identity.ppid},
      {"status", status},
      {"step_ns", std::move(step_ns)},
      {"busy_ns", measured ? Json(busy) : Json(nullptr)},
      {"idle_ns", measured ? Json(idle) : Json(nullptr)},
      {"communication_exposed_ns", measured ? Json(exposed_communication) : Json(nullptr)},
      {"coverage", process["coverage"]["attributed_fraction"]}};
  entry.json = std::move(process);
  return entry;
}

}  // namespace

Report BuildReport(const ReportInputs& inputs) {
  std::vector<ProcessEntry> processes;
  uint64_t without_hello = 0;
  for (const ProcessAnalysis& analysis : inputs.processes) {
    if (!analysis.process) {
      ++without_hello;
      continue;
    }
    processes.push_back(BuildProcess(analysis, inputs));
  }
  // Ranks in order, then processes without a rank, by pid.
  std::stable_sort(processes.begin(), processes.end(),
                   [](const ProcessEntry& a, const ProcessEntry& b) {
                     const ProcessIdentity& x = *a.analysis->process;
                     const ProcessIdentity& y = *b.analysis->process;
                     const int rank_x = x.rank >= 0 ? x.rank : INT32_MAX;
                     const int rank_y = y.rank >= 0 ? y.rank : INT32_MAX;
                     return rank_x != rank_y ? rank_x < rank_y : x.pid < y.pid;
                   });

  Report built;
  Json& report = built.without_step_rows;
  report["schema_version"] = kReportSchemaVersion;
  report["tool"] = {{"name", "gpuattr"}, {"version", GPUATTR_VERSION}};
  report["capture"] = {{"mode", inputs.capture.mode},
                       {"command", inputs.capture.command},
                       {"source", inputs.capture.source},
                       {"host", OptionalJson(inputs.capture.host)},
                       {"started_at", inputs.capture.started_at_realtime_ns
                                          ? Json(IsoUtc(*inputs.capture.started_at_realtime_ns))
                                          : Json(nullptr)},
                       {"duration_ns", inputs.capture.duration_ns},
                       {"clock", OptionalJson(inputs.capture.clock)},
                       {"inherit", inputs.inherit},
                       {"window", WindowRequestJson(inputs.window_request)}};
  SummaryBuilder summary;
  for (ProcessEntry& process : processes)
    summary.Add(*process.analysis, std::move(process.rank_row));
  report["summary"] = std::move(summary).Finish(inputs.coverage_threshold);
  Json launchers = LaunchersJson(processes, inputs.exit_statuses, inputs.capture.host);
  Json process_json = Json::array();
  for (ProcessEntry& process : processes) {
    process_json.push_back(std::move(process.json));
    const ProcessAnalysis& analysis = *process.analysis;
    built.step_rows.push_back({analysis.device_measured, WorkCounted(analysis),
                               analysis.steps ? analysis.steps->rows : nullptr});
  }
  // Advice (refusal_catalogue.h): how to get ranges when no process has one.
  const bool any_range = std::any_of(processes.begin(), processes.end(), [](const auto& entry) {
    return !entry.analysis->passes.empty() || !entry.analysis->ranges.empty();
  });
  Json advice = Json::array();
  if (!any_range) {
    const RefusalEntry& no_ranges = NoRangesAdvice();
    advice.push_back(
        {{"code", no_ranges.code}, {"cause", no_ranges.cause}, {"remedy", no_ranges.remedy}});
  }
  report["advice"] = std::move(advice);
  report["processes"] = std::move(process_json);
  report["launchers"] = std::move(launchers);
  report["diagnostics"] = {{"rejected_connections", inputs.rejected_connections},
                           {"rejected_messages", inputs.rejected_messages},
                           {"connections_without_hello", without_hello}};
  return built;
}

}  // namespace gpuattr::collector
