#include "export/exports.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

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

namespace {

// A folded stack's key is its frames, each after a '\x1f' (a byte no sanitised name holds), built
// the same way from a stack's frames and from an activity's pass path and leaf.
void AppendKeyFrame(std::string_view frame, std::string* key) {
  key->push_back('\x1f');
  key->append(frame);
}

std::string KeyOf(const FoldedStack& stack) {
  std::string key;
  for (const std::string& frame : stack.frames) AppendKeyFrame(frame, &key);
  return key;
}

}  // namespace

// The key of the folded stack `activity` falls in: its pass (each name by StepRangeKey, as the
// pass tree names it) and leaf frame, or its unattributed reason's frame.
std::string Exports::StackKey(const ObservedActivity& activity) {
  std::string key;
  if (activity.path == nullptr || activity.path->empty()) {
    AppendKeyFrame(UnattributedFrame(activity.reason != nullptr ? activity.reason : ""), &key);
    return key;
  }
  for (const std::string& name : *activity.path) AppendKeyFrame(StepRangeKey(name), &key);
  if (activity.family != nullptr) {
    AppendKeyFrame(*activity.family, &key);
  } else {
    AppendKeyFrame(activity.activity->kind == ActivityKind::kMemcpy ? "[memcpy]" : "[memset]",
                   &key);
  }
  return key;
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
  // activity was noted for keep their place after the others. Each stack's start is looked up
  // once, then the stacks are sorted by it.
  const auto& first_starts = first_start_ns_[data.hello->pid];
  std::vector<std::pair<uint64_t, FoldedStack>> by_start;
  by_start.reserve(folded.stacks.size());
  for (FoldedStack& stack : folded.stacks) {
    auto found = first_starts.find(KeyOf(stack));
    by_start.emplace_back(
        found == first_starts.end() ? std::numeric_limits<uint64_t>::max() : found->second,
        std::move(stack));
  }
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  folded.stacks.clear();
  for (auto& [start, stack] : by_start) folded.stacks.push_back(std::move(stack));
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
