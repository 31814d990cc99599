#include "analysis/activity_folder.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/process_facts.h"
#include "analysis/trace_observer.h"

namespace gpuattr::collector {
namespace {

void CountTotals(Totals& totals, ActivityKind kind, uint64_t ns) {
  switch (kind) {
    case ActivityKind::kKernel:
      totals.kernel_ns += ns;
      ++totals.kernels;
      break;
    case ActivityKind::kMemcpy:
      totals.memcpy_ns += ns;
      ++totals.memcpys;
      break;
    case ActivityKind::kMemset:
      totals.memset_ns += ns;
      ++totals.memsets;
      break;
  }
}

}  // namespace

ActivityFolder::ActivityFolder(const TraceData& data, const AnalysisOptions& options)
    : data_(data),
      options_(options),
      paths_(data),
      history_(data),
      rules_(data, options.inherit),
      passes_(options.phase_rules ? *options.phase_rules : PhaseRules::Default()),
      families_(data, paths_,
                options.family_rules ? *options.family_rules : FamilyRules::Default()),
      phases_(data, paths_, options.phase_rules ? *options.phase_rules : PhaseRules::Default(),
              phase_masks_),
      backward_threads_(data, phases_),
      modules_(paths_),
      compiled_graphs_(data, paths_, options.kernel_maps, options.kernel_map_names),
      host_ranges_(data),
      steps_(data, paths_, options.step, options.skip_steps),
      work_(data, paths_) {}

void ActivityFolder::RefreshNames() {
  if (!paths_.Refresh()) return;
  passes_.Refresh();
  phases_.Refresh();
  backward_threads_.Refresh();
  steps_.Refresh();
  work_.Refresh();
  families_.Refresh();
  modules_.Refresh();
  compiled_graphs_.Refresh();
}

void ActivityFolder::Release(const ActivityRecord& activity, const LaunchRecord* launch,
                             bool late) {
  RefreshNames();
  steps_.RegisterInstances();
  FoldClosedRanges();
  if (launch == nullptr) ++loss_.orphan_activities;
  if (!activity.complete()) {
    ++loss_.incomplete_records;
    return;
  }
  if (late) ++loss_.late_activities;
  last_end_ns_ = std::max(last_end_ns_, activity.end_ns);
  CountTotals(totals_, activity.kind, activity.duration_ns());

  const WorkCategory category = CategoryOf(activity);
  ActivityOutcome outcome = rules_.Attribute(activity, launch);
  if (outcome.kind == AttributionKind::kDirect || outcome.kind == AttributionKind::kCaptured) {
    outcome.node = compiled_graphs_.Place(outcome.node, activity, launch);
  }
  outcome.phase = phases_.PhaseOf(outcome.node);
  // A collective kernel is communication wherever it was launched; a launch from a thread running
  // the step's backward, with no range of its own or none that names a phase, is backward
  // (docs/attribution.md §Phases).
  const bool phaseless_own_range = outcome.kind == AttributionKind::kDirect && !outcome.phase;
  if (outcome.node != 0 && category == WorkCategory::kCommunication) {
    outcome.phase = Phase::kCommunication;
  } else if ((outcome.kind == AttributionKind::kInherited || phaseless_own_range) &&
             backward_threads_.InBackward(launch->tid, launch->enter_ns)) {
    outcome.phase = Phase::kBackward;
  }
  const AttributedActivity attributed{activity, launch, late, outcome};
  phases_.Fold(attributed);
  if (outcome.node != 0) {
    std::optional<std::vector<std::string>> launch_context;
    if (outcome.kind == AttributionKind::kCaptured && launch) {
      launch_context = outcome.launch_node != 0 ? paths_.PassOf(outcome.launch_node)
                                                : std::vector<std::string>{};
    }
    const uint32_t pass = paths_.PassIdOf(outcome.node);
    passes_.Fold(attributed, pass, paths_.PassPath(pass), families_.LeafFamily(activity),
                 launch_context);
    modules_.Fold(attributed);
    if (!compiled_graphs_.fused_modules().empty()) {
      modules_.FoldFused(compiled_graphs_.fused_modules(), paths_.PassPath(pass), outcome.phase,
                         attributed.ns());
    }
  }
  devices_.Fold(activity, launch, late, category);
  if (activity.kind == ActivityKind::kMemcpy)
    copies_.Fold(activity, data_.copies.Find(activity.shape));
  if (attributed.kernel()) families_.Fold(activity, launch);
  steps_.Fold(attributed, category);
  if (options_.observer) Observe(attributed);
}

void ActivityFolder::FoldValueMark(const wire::ValueMark& mark) {
  RefreshNames();
  const std::optional<WorkCounts> counts = work_.Fold(mark);
  if (!counts) return;
  if (mark.node != 0) {
    const uint32_t pass = paths_.PassIdOf(mark.node);
    passes_.AddWork(pass, paths_.PassPath(pass), *counts);
  }
  steps_.RegisterInstances();
  steps_.FoldWork(mark.timestamp_ns, *counts);
}

WorkCategory ActivityFolder::CategoryOf(const ActivityRecord& activity) {
  if (activity.kind != ActivityKind::kKernel) return WorkCategory::kMemory;
  return families_.NamesOf(activity.name_string).communication ? WorkCategory::kCommunication
                                                               : WorkCategory::kCompute;
}

void ActivityFolder::ForgetLaunch(uint32_t correlation_id, const LaunchRecord& launch) {
  families_.ForgetLaunch(correlation_id);
  if (options_.observer) options_.observer->LaunchDone(pid(), correlation_id, launch);
}

// Closed push/pop ranges not yet folded, and the observer, now that their names are known.
void ActivityFolder::FoldClosedRanges() {
  if (!options_.observer) {
    host_ranges_.FoldClosed(nullptr);
    return;
  }
  host_ranges_.FoldClosed([this](const HostRange& range) {
    options_.observer->RangeClosed(pid(), range, paths_.Of(range.node));
  });
}

void ActivityFolder::Observe(const AttributedActivity& attributed) {
  static const std::vector<std::string> kNoPath;
  const ActivityRecord& activity = attributed.activity;
  const ActivityOutcome& outcome = attributed.outcome;
  ObservedActivity observed;
  observed.pid = pid();
  observed.activity = &activity;
  observed.launch = attributed.launch;
  if (attributed.kernel()) {
    const FamilyFold::KernelNames& names = families_.NamesOf(activity.name_string);
    observed.kernel_name = &names.demangled;
    observed.family = &names.family;
  }
  observed.path = outcome.node != 0 ? &paths_.Of(outcome.node) : &kNoPath;
  if (activity.graph_node_id != 0 && attributed.launch) {
    observed.launch_path = outcome.launch_node != 0 ? &paths_.Of(outcome.launch_node) : &kNoPath;
  }
  if (attributed.launch) {
    auto name = data_.thread_names.find(attributed.launch->tid);
    if (name != data_.thread_names.end()) observed.thread_name = StringOr(data_, name->second);
  }
  observed.attribution = outcome.kind;
  observed.reason = outcome.reason;
  observed.phase = outcome.phase;
  options_.observer->ActivityReleased(observed);
}

ProcessAnalysis ActivityFolder::Finish(const LaunchCounts& launches) {
  // Names defined since the last release are read again.
  RefreshNames();
  steps_.RegisterInstances();
  ProcessAnalysis result;
  result.main_tid = data_.main_tid;
  // A window's stream may carry activities outside the window (excluded): its capture ends
  // at its last host timestamp or the last activity counted, whichever is later.
  result.capture_end_ns = data_.window_stream()
                              ? std::max(data_.last_host_timestamp_ns, last_end_ns_)
                              : data_.last_timestamp_ns;
  result.device_measured =
      data_.cupti_state ? data_.cupti_state->result == 0 : data_.activities_seen > 0;
  result.excluded_activities = excluded_activities_;
  result.first_launch_correlation = launches.first_correlation;
  result.last_launch_correlation = launches.last_correlation;
  FoldClosedRanges();
  for (const auto& [node, durations] : host_ranges_.durations_by_node()) {
    const uint32_t pass = paths_.PassIdOf(node);
    passes_.AddHostDurations(pass, paths_.PassPath(pass), durations);
  }
  phases_.Finish(result);
  result.totals = totals_;
  result.totals.launches = launches.launches_seen;
  result.loss = loss_;
  result.loss.unmatched_launches = launches.unmatched_launches;
  result.loss.expired_launches = launches.expired_launches;
  result.loss.orphan_api_exits = launches.orphan_api_exits;
  result.loss.zero_correlation_launches = launches.zero_correlation_launches;
  result.passes = passes_.Finish(phase_masks_);
  result.devices = devices_.Finish(
      result.capture_end_ns,
      // A gap is named by what the main thread was in when it began (the DataLoader's
      // __next__, the optimizer), else by the launching thread's range (docs/attribution.md
      // §Gaps).
      [this](uint32_t tid, uint64_t t) -> std::optional<std::vector<std::string>> {
        uint32_t node = data_.main_tid ? history_.InnermostAt(*data_.main_tid, t) : 0;
        if (node == 0) node = history_.InnermostAt(tid, t);
        if (node == 0) return std::nullopt;
        return paths_.Of(node);
      },
      [this](uint32_t device) -> std::optional<std::string> {
        auto name = data_.device_names.find(device);
        if (name == data_.device_names.end()) return std::nullopt;
        return StringOr(data_, name->second);
      });
  copies_.Finish(result.devices);
  result.families = families_.Finish();
  result.modules = modules_.Finish(result.passes);
  steps_.Finish(host_ranges_.durations_by_node(), result);
  host_ranges_.FinishSpansAndMarks(result);
  work_.Finish(result);
  AddProcessFacts(data_, result);
  if (options_.observer) options_.observer->ProcessFinished(data_, result);
  return result;
}

}  // namespace gpuattr::collector
