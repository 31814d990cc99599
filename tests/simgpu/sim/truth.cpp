#include "truth.h"

#include <cstdlib>
#include <utility>

namespace gpuattr::simgpu {

void ProcessTruth::Push(const std::string& thread, const std::string& name,
                        const std::string& domain, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!main_thread_) main_thread_ = thread;
  std::vector<Frame>& stack = stacks_[thread];
  std::vector<std::string> path;
  for (const Frame& frame : stack) path.push_back(frame.name);
  path.push_back(name);
  ranges_.push_back(
      {thread, domain, path, "push_pop", t, std::nullopt, std::nullopt, std::nullopt});
  stack.push_back({name, domain, ranges_.size() - 1});
  last_boundary_[thread] = {ranges_.size() - 1, false};
}

bool ProcessTruth::Pop(const std::string& thread, const std::string& domain, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Frame>& stack = stacks_[thread];
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    if (it->domain != domain) continue;
    ranges_[it->range_index].end = t;
    last_boundary_[thread] = {it->range_index, true};
    stack.erase(std::next(it).base());
    return true;
  }
  last_boundary_.erase(thread);
  return false;
}

void ProcessTruth::BoundaryReturned(const std::string& thread, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = last_boundary_.find(thread);
  if (it == last_boundary_.end()) return;
  Range& range = ranges_[it->second.range_index];
  (it->second.is_end ? range.end_returned : range.start_returned) = t;
  last_boundary_.erase(it);
}

void ProcessTruth::RangeStart(const std::string& id, const std::string& thread,
                              const std::string& name, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  ranges_.push_back({thread, "", {name}, "start_end", t, std::nullopt, std::nullopt, std::nullopt});
  open_start_end_[id] = ranges_.size() - 1;
}

void ProcessTruth::RangeEnd(const std::string& id, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_start_end_.find(id);
  if (it == open_start_end_.end()) return;
  ranges_[it->second].end = t;
  open_start_end_.erase(it);
}

void ProcessTruth::Mark(const std::string& thread, const std::string& name, HostTime t) {
  std::lock_guard<std::mutex> lock(mu_);
  marks_.push_back({thread, name, t});
}

std::vector<std::string> ProcessTruth::PathOf(const std::string& thread) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> path;
  for (const Frame& frame : stacks_[thread]) path.push_back(frame.name);
  return path;
}

Attribution ProcessTruth::Attribute(const std::string& thread) {
  std::lock_guard<std::mutex> lock(mu_);
  Attribution out;
  auto path_of = [this](const std::string& t) {
    std::vector<std::string> path;
    for (const Frame& frame : stacks_[t]) path.push_back(frame.name);
    return path;
  };
  out.path = path_of(thread);
  if (!out.path.empty()) {
    out.kind = "direct";
  } else if (main_thread_ && *main_thread_ != thread && !stacks_[*main_thread_].empty()) {
    out.kind = "inherited";
    out.path = path_of(*main_thread_);
  } else {
    out.kind = "none";
  }
  return out;
}

void ProcessTruth::AddActivity(nlohmann::json activity) {
  static const bool counts_only = [] {
    const char* mode = std::getenv("SIMGPU_TRUTH_ACTIVITIES");
    return mode != nullptr && std::string(mode) == "counts";
  }();
  std::lock_guard<std::mutex> lock(mu_);
  if (counts_only) {
    ++activity_counts_[activity["kind"].get<std::string>()];
    return;
  }
  activities_.push_back(std::move(activity));
}

nlohmann::json ProcessTruth::ToJson(int pid, std::optional<int> rank, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json out;
  out["pid"] = pid;
  out["rank"] = rank ? nlohmann::json(*rank) : nlohmann::json(nullptr);
  out["name"] = name;
  out["activities"] = activities_;
  if (!activity_counts_.empty()) out["activity_counts"] = activity_counts_;
  nlohmann::json ranges = nlohmann::json::array();
  for (const Range& range : ranges_) {
    nlohmann::json out_range = {
        {"thread", range.thread},
        {"domain", range.domain.empty() ? nlohmann::json(nullptr) : nlohmann::json(range.domain)},
        {"path", range.path},
        {"kind", range.kind},
        {"start_ns", range.start.ns},
        {"end_ns", range.end ? nlohmann::json(range.end->ns) : nullptr}};
    if (range.start_returned) out_range["start_returned_ns"] = range.start_returned->ns;
    if (range.end_returned) out_range["end_returned_ns"] = range.end_returned->ns;
    ranges.push_back(std::move(out_range));
  }
  out["ranges"] = ranges;
  nlohmann::json marks = nlohmann::json::array();
  for (const MarkRecord& mark : marks_) {
    marks.push_back({{"thread", mark.thread}, {"name", mark.name}, {"ns", mark.t.ns}});
  }
  out["marks"] = marks;
  return out;
}

void ProcessTruth::ForkChild(const std::string& forking_thread, const std::string& child_thread) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Frame> stack = stacks_[forking_thread];
  std::vector<Range> kept;
  for (Frame& frame : stack) {
    Range range = ranges_[frame.range_index];
    range.thread = child_thread;
    kept.push_back(std::move(range));
    frame.range_index = kept.size() - 1;
  }
  ranges_ = std::move(kept);
  stacks_.clear();
  stacks_[child_thread] = stack;
  main_thread_.reset();
  if (!stack.empty()) main_thread_ = child_thread;
  open_start_end_.clear();
  activities_.clear();
  marks_.clear();
}

}  // namespace gpuattr::simgpu
