#include "analysis/process_trace.h"

#include <optional>
#include <utility>

#include "analysis/activity_folder.h"
#include "analysis/kernel_family.h"
#include "analysis/launch_join.h"
#include "analysis/phase.h"
#include "analysis/process_analysis.h"
#include "analysis/reorder_window.h"
#include "analysis/trace_builder.h"
#include "analysis/trace_data.h"
#include "base/check.h"
#include "wire/codec.h"

namespace gpuattr::collector {

struct ProcessTrace::State {
  explicit State(AnalysisOptions analysis_options)
      : options(std::move(analysis_options)),
        launches(options.reorder_window_ns),
        builder(data, launches, window),
        folder(std::in_place, data, options) {}

  // Releases every activity starting below `watermark` to the join and the fold, then expires
  // launches it passed by the window.
  void ReleaseBelow(uint64_t watermark) {
    window.ReleaseBelow(watermark, [this](const ActivityRecord& activity) { Release(activity); });
    launches.Expire(watermark, [this](uint32_t correlation_id, const LaunchRecord& launch) {
      folder->ForgetLaunch(correlation_id, launch);
    });
  }

  void Release(const ActivityRecord& activity) {
    ReleaseOne(activity);
    if (activity.kind == ActivityKind::kMemcpy) data.copies.Give(activity.shape);
  }

  void ReleaseOne(const ActivityRecord& activity) {
    const LaunchRecord* launch = launches.Match(activity.correlation_id);
    // docs/attach.md §What a window's report covers: decided with the launches known now.
    if (launch == nullptr && data.window_stream() &&
        launches.OutsideWindow(activity.correlation_id)) {
      folder->ExcludeOutsideWindow();
      return;
    }
    bool late = false;
    if (activity.complete()) {
      late = released_any && activity.start_ns < released_start;
      if (!late) released_start = activity.start_ns;
      released_any = true;
    }
    folder->Release(activity, launch, late);
    // Kernel, memcpy and memset launches run one activity: they leave on their first match.
    if (launch && activity.graph_node_id == 0 &&
        launch->kind != static_cast<uint8_t>(wire::ApiKind::kGraph)) {
      launches.Leave(activity.correlation_id,
                     [this](uint32_t correlation_id, const LaunchRecord& left) {
                       folder->ForgetLaunch(correlation_id, left);
                     });
    }
  }

  // The value marks sent before `watermark` (kEverything: all, at the end), in arrival order
  // (those of one thread are in time order), to the fold.
  void FoldValueMarksBelow(uint64_t watermark) {
    while (!data.value_marks.empty() && (watermark == LaunchJoin::kEverything ||
                                         data.value_marks.front().timestamp_ns < watermark)) {
      folder->FoldValueMark(data.value_marks.front());
      data.value_marks.pop_front();
    }
  }

  // After each datagram: what the watermark passed is released, and what the fold consumed of
  // the host records is dropped.
  void Advance() {
    const uint64_t window_ns = options.reorder_window_ns;
    if (window_ns == AnalysisOptions::kWholeTraceWindow || data.last_timestamp_ns < window_ns) {
      return;
    }
    ReleaseBelow(data.last_timestamp_ns - window_ns);
    FoldValueMarksBelow(data.last_timestamp_ns - window_ns);
    for (const uint64_t folded = folder->folded_host_ranges(); data.host_ranges_dropped < folded;
         ++data.host_ranges_dropped) {
      data.host_ranges.pop_front();
    }
    for (const uint64_t folded = folder->folded_pushes(); data.pushes_dropped < folded;
         ++data.pushes_dropped) {
      data.pushes.pop_front();
    }
  }

  const AnalysisOptions options;
  TraceData data;
  LaunchJoin launches;
  ReorderWindow window;
  TraceBuilder builder;
  std::optional<ActivityFolder> folder;     // freed once the analysis of a finished trace is taken
  std::optional<ProcessAnalysis> analysis;  // the fold's result, once ended
  uint64_t released_start = 0;              // start of the last complete activity released
  bool released_any = false;
};

ProcessTrace::ProcessTrace(AnalysisOptions options)
    : state_(std::make_unique<State>(std::move(options))) {}

ProcessTrace::~ProcessTrace() = default;

Status ProcessTrace::ConsumeMessage(const uint8_t* data, uint32_t size) {
  if (state_->data.finished) {
    return FailedPreconditionError("a message after the connection finished");
  }
  wire::MessageReader reader;
  const wire::DecodeError error = reader.Open(data, size);
  if (error != wire::DecodeError::kNone) {
    return DataLossError(std::string("malformed message: ") + wire::DecodeErrorName(error));
  }
  return ConsumeValidated(reader);
}

Status ProcessTrace::ConsumeValidated(wire::MessageReader& reader) {
  if (state_->data.finished) {
    return FailedPreconditionError("a message after the connection finished");
  }
  GPUATTR_RETURN_IF_ERROR(state_->builder.Consume(reader));
  state_->Advance();
  return Status::Ok();
}

void ProcessTrace::Finish(std::optional<uint64_t> closed_ns) {
  if (!state_->data.finished) state_->builder.Finish(closed_ns);
}

bool ProcessTrace::has_hello() const { return state_->data.hello.has_value(); }

uint32_t ProcessTrace::pid() const { return state_->data.hello ? state_->data.hello->pid : 0; }

ProcessAnalysis ProcessTrace::TakeAnalysis() {
  State& state = *state_;
  if (!state.analysis) {
    GPUATTR_CHECK(state.folder);  // freed only once the analysis is taken
    state.ReleaseBelow(LaunchJoin::kEverything);
    state.FoldValueMarksBelow(LaunchJoin::kEverything);
    state.analysis = state.folder->Finish(state.launches.counts());
    // Its per-instance step state is in the analysis now; nothing more can be released.
    if (state.data.finished) state.folder.reset();
  }
  return *state.analysis;
}

size_t ProcessTrace::in_flight() const {
  return state_->window.size() + state_->launches.in_flight();
}

size_t ProcessTrace::host_records_held() const {
  return state_->data.host_ranges.size() + state_->data.pushes.size() +
         state_->data.value_marks.size();
}

Status LoadRuleFiles(const std::string& phase_rules_path, const std::string& family_rules_path,
                     AnalysisOptions* options) {
  if (!phase_rules_path.empty()) {
    GPUATTR_ASSIGN_OR_RETURN(PhaseRules phase_rules, PhaseRules::Load(phase_rules_path));
    options->phase_rules = std::make_shared<const PhaseRules>(std::move(phase_rules));
  }
  if (!family_rules_path.empty()) {
    GPUATTR_ASSIGN_OR_RETURN(FamilyRules family_rules, FamilyRules::Load(family_rules_path));
    options->family_rules = std::make_shared<const FamilyRules>(std::move(family_rules));
  }
  return Status::Ok();
}

}  // namespace gpuattr::collector
