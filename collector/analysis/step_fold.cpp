#include "analysis/step_fold.h"

#include <algorithm>
#include <memory>
#include <regex>

#include "base/check.h"

namespace gpuattr::collector {
namespace {

// Auto-detection's preferred names, by StepRangeKey: every name of a key agrees.
bool StepLikeKey(const std::string& key) {
  static const std::regex kStepLike("(train_?)?step|iteration|iter",
                                    std::regex::ECMAScript | std::regex::icase);
  return key == "ProfilerStep#*" || std::regex_match(key, kStepLike);
}

// An operator's range, as torch.profiler names ops (`aten::zeros`, `c10d::allreduce_`,
// `autograd::engine::evaluate_function: …`): a range under --ranges ops, and every event of the
// legacy autograd profiler's list. An op runs many times per step, so auto-detection, which
// prefers the most instances, would take one for the step: it never does.
bool OpLikeKey(const std::string& key) {
  static const std::regex kOpLike("[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_].*");
  return std::regex_match(key, kOpLike);
}

}  // namespace

StepFold::StepFold(const TraceData& data, PathNames& paths, std::optional<std::string> step,
                   uint64_t skip_steps)
    : data_(data),
      paths_(paths),
      step_key_(step ? std::optional<std::string>(StepRangeKey(*step)) : std::nullopt),
      skip_steps_(skip_steps) {}

void StepFold::RegisterInstances() {
  while (registered_ < data_.pushes_dropped + data_.pushes.size()) {
    const auto [tid, index] =
        data_.pushes[static_cast<size_t>(registered_++ - data_.pushes_dropped)];
    const HistoryEntry& entry = data_.history.at(tid)[index];
    if (entry.node == 0) continue;
    const uint32_t pass = paths_.PassIdOf(entry.node);
    if (pass == 0) continue;
    Key* const step_key_of_pass = KeyOf(pass);
    if (step_key_of_pass == nullptr) continue;
    Key& step_key = *step_key_of_pass;
    if (only_step_like_keys_ && !step_key.step_like) continue;
    // Auto-detection considers the main thread's top-level ranges: a step is the main loop's.
    const bool main_top_level =
        paths_.PassPath(pass).size() == 1 && (!data_.main_tid || tid == *data_.main_tid);
    if ((step_key_ || main_top_level) && !step_key.tracked) {
      step_key.tracked = true;
      tracked_.push_back(&step_key);
    }
    const size_t id = instances_.size();
    instances_.push_back({tid, &entry, entry.node, entry.start_ns, {}, 0, 0});
    step_key.instances.Add(id, entry.start_ns, &entry.end_ns);
    if (!step_key_ && !only_step_like_keys_ && step_key.step_like && main_top_level) {
      step_like_open_.emplace_back(&step_key, id);
      // Already closed (an import registers a whole trace at once): settle now, so that the
      // instances of keys that can no longer win are not kept by the million.
      if (entry.end_ns != HistoryEntry::kOpenEnd) DropKeysThatCannotWin();
    }
  }
  if (!step_like_open_.empty()) DropKeysThatCannotWin();
}

// Auto-detection: once a step-like key has two closed top-level instances, the instances of
// keys that are not step-like can never be rows; they stop being tracked and kept.
void StepFold::DropKeysThatCannotWin() {
  bool settled = false;
  size_t kept = 0;
  for (const auto& [key, id] : step_like_open_) {
    if (EndOf(instances_[id]) == HistoryEntry::kOpenEnd) {
      step_like_open_[kept++] = {key, id};
    } else {
      settled = settled || ++key->top_level_closed >= 2;
    }
  }
  step_like_open_.resize(kept);
  if (!settled) return;
  only_step_like_keys_ = true;
  step_like_open_ = {};
  tracked_.clear();
  for (auto& [name, key] : step_keys_) {
    if (key.step_like) {
      if (key.tracked) tracked_.push_back(&key);
      continue;
    }
    key.tracked = false;
    key.instances = {};
  }
}

bool StepFold::Earlier(size_t a, size_t b) const {
  GPUATTR_DCHECK(a < instances_.size() && b < instances_.size());
  const Instance& x = instances_[a];
  const Instance& y = instances_[b];
  if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
  const uint64_t ex = EndOf(x);
  const uint64_t ey = EndOf(y);
  if (ex != ey) return ex < ey;
  return x.tid != y.tid ? x.tid < y.tid : a < b;
}

// Keeps in `best` the earlier of it and the earliest instance in `index` whose [start, end]
// holds t.
void StepFold::EarliestAt(RangeIndex& index, uint64_t t, std::optional<size_t>& best) {
  index.ForEachOverlapping(t, t, [&](size_t id) {
    if (!best || Earlier(id, *best)) best = id;
  });
}

StepFold::Key* StepFold::KeyOf(uint32_t pass) {
  if (pass >= key_of_pass_.size()) key_of_pass_.resize(paths_.pass_count());
  std::optional<Key*>& cached = key_of_pass_[pass];
  if (cached) return *cached;
  // The pass path's names are StepRangeKeys already.
  const std::string& key = paths_.PassPath(pass).back();
  if (step_key_ ? key != *step_key_ : OpLikeKey(key)) {
    return *(cached = nullptr);
  }
  auto [found, added] = step_keys_.try_emplace(key);
  if (added) found->second.step_like = StepLikeKey(key);
  return *(cached = &found->second);
}

void StepFold::Fold(const AttributedActivity& attributed, WorkCategory category) {
  if (!attributed.late) {
    const ActivityRecord& activity = attributed.activity;
    if (const auto closed = busy_.Add(activity.start_ns, activity.end_ns)) {
      AddOverlap(*closed, [](Instance& instance) -> uint64_t& { return instance.busy_ns; });
    }
    categories_.Add(category, activity.start_ns, activity.end_ns,
                    [this](CategoryUnions::Union which, const Interval& merged) {
                      AddOverlap(merged, [which](Instance& instance) -> uint64_t& {
                        return instance.category_ns[which];
                      });
                    });
  }
  if (attributed.launch) {
    FoldTerms(attributed.launch->enter_ns, attributed.outcome, attributed.ns());
  }
}

void StepFold::FoldTerms(uint64_t launch_ns, const ActivityOutcome& outcome, uint64_t ns) {
  for (Key* key : tracked_) {
    std::optional<size_t> id;
    EarliestAt(key->instances, launch_ns, id);
    if (!id) continue;
    Instance& instance = instances_[*id];
    if (outcome.node == 0) {
      instance.unattributed_ns += ns;
    } else {
      instance.phases.Add(outcome.phase, ns);
    }
  }
}

void StepFold::FoldWork(uint64_t timestamp_ns, const WorkCounts& counts) {
  for (Key* key : tracked_) {
    std::optional<size_t> id;
    EarliestAt(key->instances, timestamp_ns, id);
    if (id) instances_[*id].work.Add(counts);
  }
}

// A merged interval of a union over all devices closed: its overlap with every tracked instance.
template <typename Field>
void StepFold::AddOverlap(const Interval& merged, Field field) {
  for (Key* key : tracked_) {
    key->instances.ForEachOverlapping(merged.first, merged.second, [&](size_t id) {
      Instance& instance = instances_[id];
      const uint64_t end = EndOf(instance);
      if (end > merged.first && instance.start_ns < merged.second) {
        field(instance) += std::min(end, merged.second) - std::max(instance.start_ns, merged.first);
      }
    });
  }
}

std::optional<std::string> StepFold::ChooseStepRange(
    const std::map<uint32_t, Samples<uint64_t>>& host_durations, std::string& why) {
  if (step_key_) return step_key_;
  struct Candidate {
    uint64_t instances = 0;
    uint64_t host_ns = 0;
    bool step_like = false;
  };
  std::map<std::string, Candidate> top_level;
  for (const auto& [node, durations] : host_durations) {
    const std::vector<std::string>& path = paths_.PassOf(node);
    if (path.size() != 1) continue;
    const std::string& key = path.back();
    auto known = step_keys_.find(key);
    if (known == step_keys_.end() || !known->second.tracked) continue;
    Candidate& candidate = top_level[key];
    candidate.instances += durations.count();
    candidate.host_ns += durations.total();
    candidate.step_like = StepLikeKey(key);
  }
  const std::pair<const std::string, Candidate>* best = nullptr;
  auto better = [&](const std::pair<const std::string, Candidate>& entry) {
    if (best == nullptr) return true;
    const Candidate& a = entry.second;
    const Candidate& b = best->second;
    if (a.step_like != b.step_like) return a.step_like;
    if (a.instances != b.instances) return a.instances > b.instances;
    return a.host_ns > b.host_ns;  // equal: the first name in byte order stays
  };
  for (const auto& entry : top_level) {
    if (entry.second.instances >= 2 && better(entry)) best = &entry;
  }
  if (best == nullptr) {
    why = "no top-level range has two or more instances";
    return std::nullopt;
  }
  return best->first;
}

void StepFold::Finish(const std::map<uint32_t, Samples<uint64_t>>& host_durations,
                      ProcessAnalysis& analysis) {
  if (!busy_.empty()) {
    AddOverlap(busy_.current(), [](Instance& instance) -> uint64_t& { return instance.busy_ns; });
  }
  categories_.ForEachOpen([this](CategoryUnions::Union which, const Interval& merged) {
    AddOverlap(merged,
               [which](Instance& instance) -> uint64_t& { return instance.category_ns[which]; });
  });
  const std::optional<std::string> range = ChooseStepRange(host_durations, analysis.steps_reason);
  if (!range) return;
  auto key = step_keys_.find(*range);
  std::vector<size_t> ids;
  uint64_t unfinished = 0;
  if (key != step_keys_.end() && key->second.tracked) {
    key->second.instances.ForEachOverlapping(0, RangeIndex::kOpenEnd, [&](size_t id) {
      const Instance& instance = instances_[id];
      if (data_.closed_at_stream_end.count(instance.range) != 0) {
        ++unfinished;  // interrupted: its end, and so its terms, are not known
      } else if (EndOf(instance) != HistoryEntry::kOpenEnd) {
        ids.push_back(id);
      }
    });
  }
  if (ids.empty()) {
    analysis.steps_reason = "no range named '" + *range + "' was closed";
    if (unfinished != 0) analysis.steps_reason += " before the stream ended";
    return;
  }
  std::sort(ids.begin(), ids.end(), [&](size_t a, size_t b) { return Earlier(a, b); });
  Steps steps;
  steps.range = *range;
  steps.detected = !step_key_.has_value();
  steps.instances = ids.size();
  steps.unfinished = unfinished;
  steps.skipped = skip_steps_;
  const size_t skip = static_cast<size_t>(std::min<uint64_t>(skip_steps_, ids.size()));
  auto rows = std::make_shared<std::vector<StepRow>>();
  rows->reserve(ids.size() - skip);
  for (size_t i = skip; i < ids.size(); ++i) {
    const Instance& instance = instances_[ids[i]];
    StepRow row;
    row.index = i;
    row.name = paths_.Of(instance.node).back();
    row.start_ns = instance.start_ns;
    row.end_ns = EndOf(instance);
    row.phases = instance.phases;
    row.unattributed_ns = instance.unattributed_ns;
    row.busy_ns = instance.busy_ns;
    row.categories = CategoryUnions::BusyOf(instance.category_ns);
    row.work = instance.work;
    rows->push_back(std::move(row));
  }
  steps.rows = std::move(rows);
  analysis.steps = std::move(steps);
}

}  // namespace gpuattr::collector
