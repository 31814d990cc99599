#include "export/exports.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "analysis/path_names.h"
#include "base/os.h"
#include "report/atomic_write.h"

namespace gpuattr::collector {

StatusOr<std::shared_ptr<Exports>> Exports::Create(const ExportPaths& paths,
                                                   const std::string& generator) {
  if (!paths.trace.empty()) GPUATTR_RETURN_IF_ERROR(CheckOutputPath(paths.trace, "--trace"));
  if (!paths.folded.empty()) GPUATTR_RETURN_IF_ERROR(CheckOutputPath(paths.folded, "--folded"));
  if (!paths.speedscope.empty()) {
    GPUATTR_RETURN_IF_ERROR(CheckOutputPath(paths.speedscope, "--speedscope"));
  }
  if (!paths.activities.empty()) {
    GPUATTR_RETURN_IF_ERROR(CheckOutputPath(paths.activities, "--activities"));
  }
  std::shared_ptr<Exports> exports(new Exports());
  exports->paths_ = paths;
  exports->generator_ = generator;
  if (!paths.trace.empty()) {
    GPUATTR_ASSIGN_OR_RETURN(exports->trace_,
                             ChromeTraceWriter::Create(paths.trace, generator, paths.existing));
  }
  if (!paths.activities.empty()) {
    GPUATTR_ASSIGN_OR_RETURN(exports->activities_,
                             ActivityLinesWriter::Create(paths.activities, paths.existing));
  }
  return exports;
}

void Exports::RangeClosed(uint32_t pid, const HostRange& range,
                          const std::vector<std::string>& path) {
  if (trace_) trace_->RangeClosed(pid, range, path);
}

void Exports::LaunchDone(uint32_t pid, uint32_t correlation_id, const LaunchRecord& launch) {
  if (trace_) trace_->LaunchDone(pid, correlation_id, launch);
}

void Exports::ActivityReleased(const ObservedActivity& activity) {
  if (trace_) trace_->ActivityReleased(activity);
  if (activities_) activities_->ActivityReleased(activity);
  if (!paths_.folded.empty() || !paths_.speedscope.empty()) NoteFirstStart(activity);
}

// The key of the folded stack `activity` falls in: its pass (each name by StepRangeKey, as the
// pass tree names it) and leaf frame, or its unattributed reason's frame.
std::string Exports::StackKey(const ObservedActivity& activity) {
  std::string key;
  if (activity.path == nullptr || activity.path->empty()) {
    return UnattributedFrame(activity.reason != nullptr ? activity.reason : "");
  }
  for (const std::string& name : *activity.path) {
    key += StepRangeKey(name);
    key.push_back('\x1f');
  }
  if (activity.family != nullptr) return key + *activity.family;
  return key + (activity.activity->kind == ActivityKind::kMemcpy ? "[memcpy]" : "[memset]");
}

void Exports::NoteFirstStart(const ObservedActivity& activity) {
  auto [first, inserted] =
      first_start_ns_[activity.pid].try_emplace(StackKey(activity), activity.activity->start_ns);
  if (!inserted) first->second = std::min(first->second, activity.activity->start_ns);
}

void Exports::ProcessFinished(const TraceData& data, const ProcessAnalysis& analysis) {
  if (trace_) trace_->ProcessFinished(data, analysis);
  if (!data.hello) return;
  FoldedProcess folded =
      FoldPasses(data.hello->pid, data.hello->rank, analysis.passes, analysis.unattributed);
  // In the order the stacks' first activities started (speedscope's time-order view); stacks no
  // activity was noted for keep their place after the others.
  const auto& first_starts = first_start_ns_[data.hello->pid];
  const auto first_start = [&](const FoldedStack& stack) {
    std::string key;
    if (stack.frames.size() == 1) {
      key = stack.frames[0];
    } else {
      for (size_t i = 0; i + 1 < stack.frames.size(); ++i) key += stack.frames[i] + '\x1f';
      key += stack.frames.back();
    }
    auto found = first_starts.find(key);
    return found == first_starts.end() ? std::numeric_limits<uint64_t>::max() : found->second;
  };
  std::stable_sort(
      folded.stacks.begin(), folded.stacks.end(),
      [&](const FoldedStack& a, const FoldedStack& b) { return first_start(a) < first_start(b); });
  first_start_ns_.erase(data.hello->pid);
  folded_.push_back(std::move(folded));
}

Status Exports::Commit() {
  // Ranks in order, then processes without a rank, by pid (the report's order).
  std::stable_sort(folded_.begin(), folded_.end(), [](const auto& a, const auto& b) {
    const int64_t ra = a.rank >= 0 ? a.rank : INT64_MAX;
    const int64_t rb = b.rank >= 0 ? b.rank : INT64_MAX;
    return ra != rb ? ra < rb : a.pid < b.pid;
  });
  if (!paths_.folded.empty()) {
    GPUATTR_RETURN_IF_ERROR(
        WriteTextAtomically(RenderFolded(folded_), paths_.folded, paths_.existing));
  }
  if (!paths_.speedscope.empty()) {
    GPUATTR_RETURN_IF_ERROR(WriteTextAtomically(RenderSpeedscope(folded_, generator_),
                                                paths_.speedscope, paths_.existing));
  }
  if (trace_) GPUATTR_RETURN_IF_ERROR(trace_->Commit());
  if (activities_) GPUATTR_RETURN_IF_ERROR(activities_->Commit());
  return Status::Ok();
}

}  // namespace gpuattr::collector
