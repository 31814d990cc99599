#include "analysis/attribution.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <regex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/kernel_family.h"
#include "analysis/range_index.h"
#include "analysis/trace_observer.h"

namespace gpuattr::collector {

std::string StringOr(const TraceData& data, uint32_t id) {
  auto it = data.strings.find(id);
  if (it != data.strings.end()) return it->second;
  return "<unknown:" + std::to_string(id) + ">";
}

DurationStats Summarize(std::vector<uint64_t>& durations) {
  DurationStats stats;
  if (durations.empty()) return stats;
  std::sort(durations.begin(), durations.end());
  stats.count = durations.size();
  stats.total = std::accumulate(durations.begin(), durations.end(), uint64_t{0});
  stats.min = durations.front();
  stats.max = durations.back();
  stats.median = durations[(durations.size() - 1) / 2];
  return stats;
}

namespace {

// The order of FamilyStats::shapes: most kernels first, then most time.
bool RanksBefore(const ShapeStats& a, const ShapeStats& b) {
  return a.kernels != b.kernels ? a.kernels > b.kernels : a.total_ns > b.total_ns;
}

// Adds `count` kernels that ran `total_ns` in all, the shortest `min_ns` and the longest `max_ns`.
void AddKernelCounts(FamilyStats& stats, uint64_t count, uint64_t total_ns, uint64_t min_ns,
                     uint64_t max_ns) {
  stats.min_ns = stats.kernels == 0 ? min_ns : std::min(stats.min_ns, min_ns);
  stats.max_ns = std::max(stats.max_ns, max_ns);
  stats.kernels += count;
  stats.total_ns += total_ns;
}

// The entry of `shape` in `shapes`, appended with no kernels when it is new.
std::vector<ShapeStats>::iterator ShapeEntry(std::vector<ShapeStats>& shapes,
                                             const KernelShape& shape) {
  auto it = std::find_if(shapes.begin(), shapes.end(),
                         [&](const ShapeStats& mine) { return mine.shape == shape; });
  return it != shapes.end() ? it : shapes.insert(shapes.end(), ShapeStats{shape, 0, 0});
}

}  // namespace

void FamilyStats::AddKernel(const KernelShape& shape, uint64_t duration_ns) {
  AddKernelCounts(*this, 1, duration_ns, duration_ns, duration_ns);
  auto it = ShapeEntry(shapes, shape);
  ++it->kernels;
  it->total_ns += duration_ns;
  // Only this shape grew, so the stable order Merge sorts into is restored by moving it ahead
  // of the shapes it now ranks strictly before.
  for (; it != shapes.begin() && RanksBefore(*it, *std::prev(it)); --it) {
    std::iter_swap(it, std::prev(it));
  }
}

void FamilyStats::AddExample(const std::string& name) {
  if (names.size() < kFamilyExamples &&
      std::find(names.begin(), names.end(), name) == names.end()) {
    names.push_back(name);
  }
}

void FamilyStats::Merge(const FamilyStats& other) {
  AddKernelCounts(*this, other.kernels, other.total_ns, other.min_ns, other.max_ns);
  for (const std::string& name : other.names) AddExample(name);
  for (const ShapeStats& shape : other.shapes) {
    auto it = ShapeEntry(shapes, shape.shape);
    it->kernels += shape.kernels;
    it->total_ns += shape.total_ns;
  }
  std::stable_sort(shapes.begin(), shapes.end(), RanksBefore);
  api_samples.Merge(other.api_samples);
  latency_samples.Merge(other.latency_samples);
}

std::string StepRangeKey(const std::string& name) {
  static const std::regex kProfilerStep("ProfilerStep#\\d+");
  return std::regex_match(name, kProfilerStep) ? "ProfilerStep#*" : name;
}

namespace {

using Interval = std::pair<uint64_t, uint64_t>;

// §Steps auto-detection's preferred names, by StepRangeKey: every name of a key agrees.
bool StepLikeKey(const std::string& key) {
  static const std::regex kStepLike("(train_?)?step|iteration|iter",
                                    std::regex::ECMAScript | std::regex::icase);
  return key == "ProfilerStep#*" || std::regex_match(key, kStepLike);
}

// `later - earlier` of two wire timestamps as a signed count, clamped to int64: a broken or
// hostile stream can put them anywhere in uint64, where casting first would overflow.
int64_t SignedDifferenceNs(uint64_t later, uint64_t earlier) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (later >= earlier) return static_cast<int64_t>(std::min(later - earlier, kMax));
  const uint64_t behind = earlier - later;
  return behind > kMax ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(behind);
}

// The union of intervals fed in start order: the open merged interval and the closed total.
struct RunningUnion {
  Interval current{0, 0};
  bool open = false;
  uint64_t closed = 0;

  // Adds [s, e); returns the merged interval this closed, if any.
  std::optional<Interval> Add(uint64_t s, uint64_t e) {
    if (open && s <= current.second) {
      current.second = std::max(current.second, e);
      return std::nullopt;
    }
    std::optional<Interval> done;
    if (open) {
      closed += current.second - current.first;
      done = current;
    }
    current = {s, e};
    open = true;
    return done;
  }
  uint64_t Total() const { return closed + (open ? current.second - current.first : 0); }
};

// Path node id -> names from the root, cached. Undefined ids become "<unknown:ID>" components;
// a parent cycle (malformed input) ends the walk.
class PathResolver {
 public:
  explicit PathResolver(const TraceData& data) : data_(data) {}

  // Drops cached names when strings or path nodes were defined since they were resolved.
  // References returned by Names stay valid until then.
  bool Refresh() {
    if (generation_ == data_.definitions) return false;
    generation_ = data_.definitions;
    cache_.clear();
    return true;
  }

  const std::vector<std::string>& Names(uint32_t node) {
    auto cached = cache_.find(node);
    if (cached != cache_.end()) return cached->second;
    std::vector<std::string> names;
    std::vector<uint32_t> seen;
    for (uint32_t id = node; id != 0 && names.size() < kMaxDepth;) {
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) break;
      seen.push_back(id);
      auto def = data_.path_nodes.find(id);
      if (def == data_.path_nodes.end()) {
        names.push_back("<unknown:" + std::to_string(id) + ">");
        break;
      }
      names.push_back(StringOr(data_, def->second.name_string));
      id = def->second.parent;
    }
    std::reverse(names.begin(), names.end());
    return cache_.emplace(node, std::move(names)).first->second;
  }

 private:
  static constexpr size_t kMaxDepth = 1024;
  const TraceData& data_;
  uint64_t generation_ = 0;
  std::unordered_map<uint32_t, std::vector<std::string>> cache_;
};

// "Which range was open on thread T at time t", read from the threads' histories as they stand
// (TraceData::history, push order). Ranges of one thread nest (a stack), so the innermost one
// open at t is the last range pushed at or before t or one of its ancestors: walk up the parent
// links until one still contains t. Ranges with node 0 are skipped (they name no path).
class ThreadRanges {
 public:
  explicit ThreadRanges(const TraceData& data) : data_(data) {}

  // The path node innermost-open on `tid` at `t` ([start, end) contains t), 0 when none.
  uint32_t InnermostAt(uint32_t tid, uint64_t t) const {
    auto it = data_.history.find(tid);
    if (it == data_.history.end()) return 0;
    const auto& entries = it->second;
    auto after =
        std::upper_bound(entries.begin(), entries.end(), t,
                         [](uint64_t value, const HistoryEntry& e) { return value < e.start_ns; });
    int64_t i = static_cast<int64_t>(after - entries.begin()) - 1;
    while (i >= 0) {
      const HistoryEntry& entry = entries[static_cast<size_t>(i)];
      if (entry.end_ns > t && entry.node != 0) return entry.node;
      i = entry.parent;
    }
    return 0;
  }

 private:
  const TraceData& data_;
};

// The pass tree under construction: nodes keyed by names (domains merged), index 0 the root.
class PassTreeBuilder {
 public:
  struct Node {
    std::string name;
    std::map<std::string, size_t> children;
    PassNode out;
    Interval current{0, 0};  // the open merged interval of its activities (start order)
    bool current_open = false;
    uint64_t busy_closed = 0;
    Samples<uint64_t> host_durations;
    std::map<std::optional<std::vector<std::string>>, LaunchContext> contexts;
    std::unordered_map<std::string, uint64_t> family_ns;  // self_ns by leaf family
  };

  PassTreeBuilder() : nodes_(1) {}

  Node& At(const std::vector<std::string>& path) {
    size_t index = 0;
    for (const std::string& name : path) {
      auto it = nodes_[index].children.find(name);
      if (it == nodes_[index].children.end()) {
        const size_t child = nodes_.size();
        nodes_[index].children.emplace(name, child);
        nodes_.emplace_back();
        nodes_[child].name = name;
        nodes_[child].out.path.assign(path.begin(), path.begin() + (&name - path.data()) + 1);
        index = child;
      } else {
        index = it->second;
      }
    }
    return nodes_[index];
  }

  std::vector<PassNode> Build() { return std::move(Finalize(0).children); }

 private:
  PassNode Finalize(size_t index) {
    Node& node = nodes_[index];
    PassNode out = std::move(node.out);
    out.name = node.name;
    out.instances = node.host_durations.count();
    if (out.instances > 0) {
      const Samples<uint64_t>& host = node.host_durations;
      out.host = DurationStats{host.count(),  host.total(), host.min(),
                               host.median(), host.max(),   host.exact()};
    }
    out.busy_ns =
        node.busy_closed + (node.current_open ? node.current.second - node.current.first : 0);
    out.total_ns = out.self_ns;
    for (auto& [key, context] : node.contexts) {
      context.path = key;
      out.launch_contexts.push_back(std::move(context));
    }
    std::stable_sort(out.launch_contexts.begin(), out.launch_contexts.end(),
                     [](const LaunchContext& a, const LaunchContext& b) { return a.ns > b.ns; });
    out.self_by_family.assign(node.family_ns.begin(), node.family_ns.end());
    std::sort(out.self_by_family.begin(), out.self_by_family.end(),
              [](const auto& a, const auto& b) {
                return a.second != b.second ? a.second > b.second : a.first < b.first;
              });
    const std::vector<size_t> child_indices = ChildIndices(index);
    for (size_t child : child_indices) {
      out.children.push_back(Finalize(child));
      out.total_ns += out.children.back().total_ns;
    }
    std::stable_sort(out.children.begin(), out.children.end(),
                     [](const PassNode& a, const PassNode& b) {
                       if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
                       const uint64_t ha = a.host ? a.host->total : 0;
                       const uint64_t hb = b.host ? b.host->total : 0;
                       return ha > hb;
                     });
    return out;
  }

  std::vector<size_t> ChildIndices(size_t index) const {
    std::vector<size_t> out;
    for (const auto& [name, child] : nodes_[index].children) out.push_back(child);
    return out;
  }

  std::vector<Node> nodes_;
};

// Follows GraphNodeCloned links to the most original node with a known creation. The original's
// creation wins over a clone's own (CUPTI also fires CREATED for clones inside instantiate).
const GraphNodeInfo* GraphOrigin(const TraceData& data, uint64_t graph_node_id) {
  constexpr int kMaxHops = 64;
  const GraphNodeInfo* best = nullptr;
  uint64_t id = graph_node_id;
  for (int hop = 0; hop < kMaxHops && id != 0; ++hop) {
    auto it = data.graph_nodes.find(id);
    if (it == data.graph_nodes.end()) break;
    if (it->second.created) best = &it->second;
    id = it->second.original_node;
  }
  return best;
}

struct Attribution {
  uint32_t node = 0;  // 0: unattributed
  AttributionKind how = AttributionKind::kNone;
  const char* reason = nullptr;
};

}  // namespace

class ActivityFolder::Impl {
 public:
  Impl(const TraceData& data, const AnalysisOptions& options)
      : data_(data),
        options_(options),
        family_rules_(options.family_rules ? *options.family_rules : FamilyRules::Default()),
        phase_rules_(options.phase_rules ? *options.phase_rules : PhaseRules::Default()),
        paths_(data),
        ranges_(data) {
    if (options_.step) step_key_ = StepRangeKey(*options_.step);
  }

  void Release(const ActivityRecord& activity, const LaunchRecord* launch, bool late) {
    if (paths_.Refresh()) {
      phase_cache_.clear();
      key_cache_.clear();
      kernel_names_.clear();
    }
    RegisterStepInstances();
    FoldClosedRanges();
    if (launch == nullptr) ++result_.loss.orphan_activities;
    if (!activity.complete()) {
      ++result_.loss.incomplete_records;
      return;
    }
    ++released_;
    if (late) ++result_.loss.late_activities;
    last_end_ns_ = std::max(last_end_ns_, activity.end_ns);
    const uint64_t ns = activity.duration_ns();
    const bool kernel = activity.kind == ActivityKind::kKernel;
    CountTotals(result_.totals, activity.kind, ns);

    ActivityOutcome outcome;
    const Attribution attribution = Attribute(activity, launch, outcome);
    outcome.node = attribution.node;
    outcome.kind = attribution.how;
    outcome.reason = attribution.reason;
    if (outcome.fallback) {
      Fallback& entry = fallbacks_[outcome.fallback];
      entry.ns += ns;
      entry.activities += 1;
    }
    if (attribution.node == 0) {
      Unattributed& entry = unattributed_[attribution.reason];
      entry.ns += ns;
      entry.activities += 1;
      if (kernel) {
        entry.kernel_ns += ns;
        // §Coverage: counts against the phase the main thread was in at the launch.
        if (launch && data_.main_tid) {
          const std::optional<Phase> main_phase =
              PhaseOf(ranges_.InnermostAt(*data_.main_tid, launch->enter_ns));
          if (main_phase) {
            result_.phase_coverage.unattributed_kernel_ns[static_cast<size_t>(*main_phase)] += ns;
          }
        }
      }
    } else {
      outcome.phase = PhaseOf(attribution.node);
      if (outcome.phase) {
        result_.phases.ns[static_cast<size_t>(*outcome.phase)] += ns;
        if (kernel) {
          result_.phase_coverage.attributed_kernel_ns[static_cast<size_t>(*outcome.phase)] += ns;
        }
      } else {
        result_.phases.other_ns += ns;
      }
      if (kernel) result_.attributed_kernel_ns += ns;
      auto& node = tree_.At(paths_.Names(attribution.node));
      node.family_ns[LeafFamily(activity)] += ns;
      node.out.self_ns += ns;
      node.out.activities += 1;
      if (kernel) node.out.kernels += 1;
      if (!late) {
        if (node.current_open && activity.start_ns <= node.current.second) {
          node.current.second = std::max(node.current.second, activity.end_ns);
        } else {
          if (node.current_open) node.busy_closed += node.current.second - node.current.first;
          node.current = {activity.start_ns, activity.end_ns};
          node.current_open = true;
        }
      }
      switch (attribution.how) {
        case AttributionKind::kNone:
          break;
        case AttributionKind::kDirect:
          node.out.direct_ns += ns;
          break;
        case AttributionKind::kInherited:
          node.out.inherited_ns += ns;
          break;
        case AttributionKind::kCaptured: {
          std::optional<std::vector<std::string>> context;
          if (launch) {
            context = outcome.launch_node != 0 ? paths_.Names(outcome.launch_node)
                                               : std::vector<std::string>{};
          }
          LaunchContext& entry = node.contexts[context];
          entry.ns += ns;
          entry.activities += 1;
          node.out.captured_ns += ns;
          break;
        }
      }
    }
    FoldDevice(activity, launch, late);
    if (kernel) FoldFamily(activity, launch);
    if (launch) FoldStep(launch->enter_ns, outcome, ns);
    if (options_.observer) Observe(activity, launch, outcome);
  }

  void ForgetLaunch(uint32_t correlation_id, const LaunchRecord& launch) {
    if (!graph_families_.empty()) graph_families_.erase(correlation_id);  // graphs are rare
    if (options_.observer) options_.observer->LaunchDone(pid(), correlation_id, launch);
  }

  void ExcludeOutsideWindow() { ++result_.excluded_activities; }

  ProcessAnalysis Finish() {
    paths_.Refresh();
    phase_cache_.clear();
    RegisterStepInstances();
    ProcessAnalysis& result = result_;
    result.main_tid = data_.main_tid;
    // A window's stream may carry activities outside the window (excluded): its capture ends
    // at its last host timestamp or the last activity counted, whichever is later.
    result.capture_end_ns = data_.window_stream()
                                ? std::max(data_.last_host_timestamp_ns, last_end_ns_)
                                : data_.last_timestamp_ns;
    result.device_measured =
        data_.cupti_state ? data_.cupti_state->result == 0 : data_.activities_seen > 0;
    if (busy_.open) AddStepBusy(busy_.current);
    AddHostRanges();
    for (auto& [reason, entry] : unattributed_) {
      entry.reason = reason;
      result.unattributed.push_back(entry);
    }
    std::stable_sort(result.unattributed.begin(), result.unattributed.end(),
                     [](const Unattributed& a, const Unattributed& b) { return a.ns > b.ns; });
    for (auto& [reason, entry] : fallbacks_) {
      entry.reason = reason;
      result.fallbacks.push_back(entry);
    }
    result.totals.launches = data_.launches_seen;
    result.loss.unmatched_launches = data_.unmatched_launches;
    result.loss.expired_launches = data_.expired_launches;
    result.passes = tree_.Build();
    for (PassNode& root : result.passes) SetPhases(root);
    FinishDevices(result);
    for (auto& [name, family] : families_) result.families.push_back(std::move(family));
    std::stable_sort(
        result.families.begin(), result.families.end(),
        [](const FamilyStats& a, const FamilyStats& b) { return a.total_ns > b.total_ns; });
    BuildSteps(result);
    BuildSpansAndMarks(result);
    if (data_.diagnostics) {
      const wire::Diagnostics& d = *data_.diagnostics;
      result.loss.dropped_records =
          d.ring_dropped_records + d.socket_dropped_records + d.cupti_dropped_records;
    }
    if (options_.observer) options_.observer->ProcessFinished(data_, result);
    return std::move(result_);
  }

  uint64_t folded_host_ranges() const { return folded_ranges_; }
  uint64_t folded_pushes() const { return registered_; }

 private:
  struct KernelNames {
    std::string demangled;
    std::string family;
    FamilyStats* stats = nullptr;  // in families_ (a std::map: stable), once this name folded
  };
  struct Hole {
    uint64_t start = 0;
    uint64_t end = 0;
    GapKind kind = GapKind::kUnknown;
    bool has_launch = false;
    uint64_t launch_ns = 0;
    uint32_t launch_tid = 0;
  };
  struct StreamState {
    StreamStats stats;
    RunningUnion busy;
  };
  // §Gaps, swept in start order: the merged interval, and the hole it last opened, pending
  // while activities starting exactly at the hole's end may still name an earlier launch.
  struct DeviceState {
    DeviceStats stats;
    bool started = false;
    Interval segment{0, 0};
    std::optional<Hole> pending;
    std::vector<Hole> largest;  // longest first (then earliest), at most kLargestGaps
    std::map<uint32_t, StreamState> streams;
  };
  // One instance of a range that may become the step range (§Steps), with its row's terms.
  struct StepInstance {
    uint32_t tid = 0;
    const HistoryEntry* range = nullptr;  // in TraceData::history, whose deques never move it
    uint32_t node = 0;
    uint64_t start_ns = 0;
    PhaseTotals phases;
    uint64_t unattributed_ns = 0;
    uint64_t busy_ns = 0;
  };
  // Instances of one step key, by node: the instances of one node share a path, so a fold asks
  // whether a path qualifies once per node rather than once per instance.
  struct StepKey {
    bool tracked = false;
    bool step_like = false;  // StepLikeKey
    std::map<uint32_t, RangeIndex> by_node;
    uint64_t top_level_closed = 0;  // auto-detection, until settled: seen closed so far
  };
  static_assert(RangeIndex::kOpenEnd == HistoryEntry::kOpenEnd);

  static uint64_t EndOf(const StepInstance& instance) { return instance.range->end_ns; }

  // Instances of step-like ranges pushed since the last call, resolved now that their names
  // are more likely known. Tracked keys: --step, else every key seen at the top level. Only
  // instances that can still become rows are kept: with --step those of its key; when
  // auto-detecting, all until a step-like key has two closed top-level instances (it then
  // outranks every other kind of name, §Steps), and from then on those of step-like keys.
  void RegisterStepInstances() {
    while (registered_ < data_.pushes_dropped + data_.pushes.size()) {
      const auto [tid, index] =
          data_.pushes[static_cast<size_t>(registered_++ - data_.pushes_dropped)];
      const HistoryEntry& entry = data_.history.at(tid)[index];
      if (entry.node == 0) continue;
      const std::vector<std::string>& names = paths_.Names(entry.node);
      if (names.empty()) continue;
      const std::string& key = KeysOf(entry.node).back();
      if (step_key_ && key != *step_key_) continue;
      auto [found, added] = step_keys_.try_emplace(key);
      StepKey& step_key = found->second;
      if (added) step_key.step_like = StepLikeKey(key);
      if (only_step_like_keys_ && !step_key.step_like) continue;
      if (step_key_ || names.size() == 1) step_key.tracked = true;
      const size_t id = instances_.size();
      instances_.push_back({tid, &entry, entry.node, entry.start_ns, {}, 0, 0});
      step_key.by_node[entry.node].Add(id, entry.start_ns, &entry.end_ns);
      if (!step_key_ && !only_step_like_keys_ && step_key.step_like && names.size() == 1) {
        step_like_open_.emplace_back(&step_key, id);
      }
    }
    if (!step_like_open_.empty()) DropKeysThatCannotWin();
  }

  // Auto-detection: once a step-like key has two closed top-level instances, the instances of
  // keys that are not step-like can never be rows; they stop being tracked and kept.
  void DropKeysThatCannotWin() {
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
    for (auto& [name, key] : step_keys_) {
      if (key.step_like) continue;
      key.tracked = false;
      key.by_node.clear();
    }
  }

  bool Earlier(size_t a, size_t b) const {
    const StepInstance& x = instances_[a];
    const StepInstance& y = instances_[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    const uint64_t ex = EndOf(x);
    const uint64_t ey = EndOf(y);
    if (ex != ey) return ex < ey;
    return x.tid != y.tid ? x.tid < y.tid : a < b;
  }

  // Keeps in `best` the earlier of it and the earliest instance in `index` whose [start, end]
  // holds t.
  void EarliestAt(RangeIndex& index, uint64_t t, std::optional<size_t>& best) {
    index.ForEachOverlapping(t, t, [&](size_t id) {
      if (!best || Earlier(id, *best)) best = id;
    });
  }

  const std::vector<std::string>& KeysOf(uint32_t node) {
    auto cached = key_cache_.find(node);
    if (cached != key_cache_.end()) return cached->second;
    std::vector<std::string> keys;
    for (const std::string& name : paths_.Names(node)) keys.push_back(StepRangeKey(name));
    return key_cache_.emplace(node, std::move(keys)).first->second;
  }

  void FoldStep(uint64_t launch_ns, const ActivityOutcome& outcome, uint64_t ns) {
    if (outcome.node == 0) {
      for (auto& [name, key] : step_keys_) {
        if (!key.tracked) continue;
        std::optional<size_t> id;
        for (auto& [node, index] : key.by_node) EarliestAt(index, launch_ns, id);
        if (id) instances_[*id].unattributed_ns += ns;
      }
      return;
    }
    const std::vector<std::string>& path = paths_.Names(outcome.node);
    const std::vector<std::string>& keys = KeysOf(outcome.node);
    // The earliest matching instance per step key, keyed by the key's entry (no allocation: this
    // runs for every activity).
    std::vector<std::pair<const StepKey*, size_t>>& best = best_instances_;
    best.clear();
    for (size_t depth = 0; depth < keys.size(); ++depth) {
      auto key = step_keys_.find(keys[depth]);
      if (key == step_keys_.end() || !key->second.tracked) continue;
      std::optional<size_t> id;
      for (auto& [node, index] : key->second.by_node) {
        const std::vector<std::string>& step_path = paths_.Names(node);
        if (step_path.size() == depth + 1 &&
            std::equal(step_path.begin(), step_path.end(), path.begin())) {
          EarliestAt(index, launch_ns, id);
        }
      }
      if (!id) continue;
      const StepKey* identity = &key->second;
      auto it = std::find_if(best.begin(), best.end(),
                             [&](const auto& entry) { return entry.first == identity; });
      if (it == best.end()) {
        best.emplace_back(identity, *id);
      } else if (Earlier(*id, it->second)) {
        it->second = *id;
      }
    }
    for (const auto& [key, id] : best) {
      StepInstance& instance = instances_[id];
      if (outcome.phase) {
        instance.phases.ns[static_cast<size_t>(*outcome.phase)] += ns;
      } else {
        instance.phases.other_ns += ns;
      }
    }
  }

  // A merged interval of all device activity closed: its overlap with every tracked instance.
  void AddStepBusy(const Interval& merged) {
    for (auto& [name, key] : step_keys_) {
      if (!key.tracked) continue;
      for (auto& [node, index] : key.by_node) {
        index.ForEachOverlapping(merged.first, merged.second, [&](size_t id) {
          StepInstance& instance = instances_[id];
          const uint64_t end = EndOf(instance);
          if (end > merged.first && instance.start_ns < merged.second) {
            instance.busy_ns +=
                std::min(end, merged.second) - std::max(instance.start_ns, merged.first);
          }
        });
      }
    }
  }

  void FoldDevice(const ActivityRecord& activity, const LaunchRecord* launch, bool late) {
    DeviceState& device = devices_[activity.device];
    StreamState& stream = device.streams[activity.stream];
    stream.stats.id = activity.stream;
    stream.stats.activities += 1;
    const uint64_t ns = activity.duration_ns();
    switch (activity.kind) {
      case ActivityKind::kKernel:
        stream.stats.kernel_ns += ns;
        break;
      case ActivityKind::kMemcpy:
        stream.stats.memcpy_ns += ns;
        break;
      case ActivityKind::kMemset:
        stream.stats.memset_ns += ns;
        break;
    }
    if (late) return;
    stream.busy.Add(activity.start_ns, activity.end_ns);
    if (auto closed = busy_.Add(activity.start_ns, activity.end_ns)) AddStepBusy(*closed);
    if (!device.started) {
      device.started = true;
      device.stats.first_start_ns = activity.start_ns;
      device.segment = {activity.start_ns, activity.end_ns};
      return;
    }
    if (device.pending && activity.start_ns != device.pending->end) FinishHole(device);
    if (activity.start_ns > device.segment.second) {
      device.stats.busy_ns += device.segment.second - device.segment.first;
      device.pending =
          Hole{device.segment.second, activity.start_ns, GapKind::kUnknown, false, 0, 0};
      device.segment.first = activity.start_ns;
    }
    if (device.pending && launch &&
        (!device.pending->has_launch || launch->enter_ns < device.pending->launch_ns)) {
      device.pending->has_launch = true;
      device.pending->launch_ns = launch->enter_ns;
      device.pending->launch_tid = launch->tid;
    }
    device.segment.second = std::max(device.segment.second, activity.end_ns);
  }

  static void FinishHole(DeviceState& device) {
    Hole hole = *device.pending;
    device.pending.reset();
    if (hole.has_launch) {
      hole.kind = hole.launch_ns >= hole.start ? GapKind::kHostBound : GapKind::kDependency;
    }
    const uint64_t ns = hole.end - hole.start;
    switch (hole.kind) {
      case GapKind::kHostBound:
        device.stats.host_bound_ns += ns;
        break;
      case GapKind::kDependency:
        device.stats.dependency_ns += ns;
        break;
      case GapKind::kUnknown:
        device.stats.unclassified_ns += ns;
        break;
    }
    ++device.stats.gaps;
    auto longer = [](const Hole& a, const Hole& b) {
      const uint64_t la = a.end - a.start;
      const uint64_t lb = b.end - b.start;
      return la != lb ? la > lb : a.start < b.start;
    };
    auto position = std::upper_bound(device.largest.begin(), device.largest.end(), hole, longer);
    if (static_cast<size_t>(position - device.largest.begin()) < kLargestGaps) {
      device.largest.insert(position, hole);
      if (device.largest.size() > kLargestGaps) device.largest.pop_back();
    }
  }

  void FinishDevices(ProcessAnalysis& result) {
    for (auto& [device_id, state] : devices_) {
      if (!state.started) continue;
      if (state.pending) FinishHole(state);
      DeviceStats device = std::move(state.stats);
      device.id = device_id;
      if (auto name = data_.device_names.find(device_id); name != data_.device_names.end()) {
        device.name = StringOr(data_, name->second);
      }
      for (auto& [stream_id, stream] : state.streams) {
        stream.stats.busy_ns = stream.busy.Total();
        device.streams.push_back(stream.stats);
      }
      device.busy_ns += state.segment.second - state.segment.first;
      device.last_end_ns = state.segment.second;
      device.span_ns = device.last_end_ns - device.first_start_ns;
      device.idle_ns = device.span_ns - device.busy_ns;
      device.tail_ns = result.capture_end_ns > device.last_end_ns
                           ? result.capture_end_ns - device.last_end_ns
                           : 0;
      for (const Hole& hole : state.largest) {
        Gap gap{hole.start, hole.end, hole.kind, std::nullopt, std::nullopt};
        if (hole.has_launch) {
          gap.launch_tid = hole.launch_tid;
          const uint32_t node = ranges_.InnermostAt(hole.launch_tid, hole.start);
          if (node != 0) gap.host_range = paths_.Names(node);
        }
        device.largest.push_back(std::move(gap));
      }
      result.devices.push_back(std::move(device));
    }
  }

  // The demangled name and family of a kernel's name string, cached until names change.
  KernelNames& NamesOf(uint32_t name_string) {
    auto known = kernel_names_.find(name_string);
    if (known == kernel_names_.end()) {
      std::string demangled = DemangleKernelName(StringOr(data_, name_string));
      std::string family = family_rules_.FamilyOf(demangled);
      known =
          kernel_names_.emplace(name_string, KernelNames{std::move(demangled), std::move(family)})
              .first;
    }
    return known->second;
  }

  // The leaf frame of the folded exports: the kernel's family, or the kind of a copy or set.
  const std::string& LeafFamily(const ActivityRecord& activity) {
    static const std::string kMemcpyLeaf = "[memcpy]";
    static const std::string kMemsetLeaf = "[memset]";
    switch (activity.kind) {
      case ActivityKind::kKernel:
        break;
      case ActivityKind::kMemcpy:
        return kMemcpyLeaf;
      case ActivityKind::kMemset:
        return kMemsetLeaf;
    }
    return NamesOf(activity.name_string).family;
  }

  uint32_t pid() const { return data_.hello ? data_.hello->pid : 0; }

  // Closed push/pop ranges not yet folded: their host durations by path node (paths are named
  // at the end), and the observer, now that their names are known.
  void FoldClosedRanges() {
    const uint64_t available = data_.host_ranges_dropped + data_.host_ranges.size();
    while (folded_ranges_ < available) {
      const HostRange& range =
          data_.host_ranges[static_cast<size_t>(folded_ranges_++ - data_.host_ranges_dropped)];
      if (range.node == 0) continue;
      host_durations_[range.node].Add(range.end_ns - range.start_ns);
      if (options_.observer) {
        options_.observer->RangeClosed(pid(), range, paths_.Names(range.node));
      }
    }
  }

  void Observe(const ActivityRecord& activity, const LaunchRecord* launch,
               const ActivityOutcome& outcome) {
    static const std::vector<std::string> kNoPath;
    ObservedActivity observed;
    observed.pid = pid();
    observed.activity = &activity;
    observed.launch = launch;
    if (activity.kind == ActivityKind::kKernel) {
      const KernelNames& names = NamesOf(activity.name_string);
      observed.kernel_name = &names.demangled;
      observed.family = &names.family;
    }
    observed.path = outcome.node != 0 ? &paths_.Names(outcome.node) : &kNoPath;
    if (activity.graph_node_id != 0 && launch) {
      observed.launch_path =
          outcome.launch_node != 0 ? &paths_.Names(outcome.launch_node) : &kNoPath;
    }
    if (launch) {
      auto name = data_.thread_names.find(launch->tid);
      if (name != data_.thread_names.end()) observed.thread_name = StringOr(data_, name->second);
    }
    observed.attribution = outcome.kind;
    observed.reason = outcome.reason;
    observed.phase = outcome.phase;
    options_.observer->ActivityReleased(observed);
  }

  void FoldFamily(const ActivityRecord& activity, const LaunchRecord* launch) {
    KernelNames& known = NamesOf(activity.name_string);
    if (known.stats == nullptr) {
      // First kernel of this name (since names last changed): find its family and offer the
      // name as an example once, instead of comparing strings for every kernel.
      FamilyStats& stats = families_[known.family];
      stats.family = known.family;
      stats.AddExample(known.demangled);
      known.stats = &stats;
    }
    FamilyStats& family = *known.stats;
    family.AddKernel(data_.shapes[activity.shape], activity.duration_ns());
    if (launch == nullptr) return;
    family.latency_samples.Add(SignedDifferenceNs(activity.start_ns, launch->enter_ns));
    if (launch->exit_ns < launch->enter_ns || launch->exit_ns == 0) return;
    // One api sample per distinct launch: only graph launches run several kernels, so only
    // they remember which families they already sampled (until the launch leaves the join).
    if (activity.graph_node_id != 0) {
      std::vector<std::string>& sampled = graph_families_[activity.correlation_id];
      if (std::find(sampled.begin(), sampled.end(), family.family) != sampled.end()) return;
      sampled.push_back(family.family);
    }
    family.api_samples.Add(launch->exit_ns - launch->enter_ns);
  }

  void AddHostRanges() {
    FoldClosedRanges();
    // Merging into a path's empty samples copies them: with one node per path (the usual case;
    // paths merge domains) they are exactly what adding each duration in closing order gives.
    for (const auto& [node, durations] : host_durations_) {
      tree_.At(paths_.Names(node)).host_durations.Merge(durations);
    }
  }

  // The phase of a path node's path, cached: paths repeat across millions of activities.
  std::optional<Phase> PhaseOf(uint32_t node) {
    if (node == 0) return std::nullopt;
    auto cached = phase_cache_.find(node);
    if (cached != phase_cache_.end()) return cached->second;
    const std::optional<Phase> phase = phase_rules_.PhaseOfPath(paths_.Names(node));
    phase_cache_.emplace(node, phase);
    return phase;
  }

  void SetPhases(PassNode& node) {
    node.phase = phase_rules_.PhaseOfPath(node.path);
    for (PassNode& child : node.children) SetPhases(child);
  }

  // The path a launch is attributed to by rules 2 and 3 (direct, inherited).
  Attribution ForLaunch(const LaunchRecord& launch) const {
    if (launch.node != 0) return {launch.node, AttributionKind::kDirect, nullptr};
    if (options_.inherit && data_.main_tid) {
      const uint32_t node = ranges_.InnermostAt(*data_.main_tid, launch.enter_ns);
      if (node != 0) return {node, AttributionKind::kInherited, nullptr};
    }
    return {0, AttributionKind::kNone, kReasonNoOpenRange};
  }

  // §Attribution of one activity, rules 1-4, in order.
  Attribution Attribute(const ActivityRecord& activity, const LaunchRecord* launch,
                        ActivityOutcome& outcome) const {
    if (activity.graph_node_id == 0) {
      if (launch == nullptr) return {0, AttributionKind::kNone, kReasonLaunchNotSeen};
      return ForLaunch(*launch);
    }
    std::optional<Attribution> at_launch;
    if (launch) {
      at_launch = ForLaunch(*launch);
      outcome.launch_node = at_launch->node;
    }
    const GraphNodeInfo* origin = GraphOrigin(data_, activity.graph_node_id);
    if (origin == nullptr) {
      // Its creation was never seen (captured before the window): rules 2-4 at the graph launch.
      if (!at_launch) return {0, AttributionKind::kNone, kReasonLaunchNotSeen};
      outcome.fallback = kFallbackGraphBeforeWindow;
      return *at_launch;
    }
    if (origin->path_node != 0) return {origin->path_node, AttributionKind::kCaptured, nullptr};
    // Captured with no range open: rules 2-4 with the graph launch as the launch.
    if (at_launch) return *at_launch;
    return {0, AttributionKind::kNone, kReasonLaunchNotSeen};
  }

  static void CountTotals(Totals& totals, ActivityKind kind, uint64_t ns) {
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

  // §Steps: the step range's name, explicit or auto-detected; empty with the reason in `why`.
  std::optional<std::string> ChooseStepRange(std::string& why) {
    if (options_.step) return StepRangeKey(*options_.step);
    struct Candidate {
      uint64_t instances = 0;
      uint64_t host_ns = 0;
      bool step_like = false;
    };
    std::map<std::string, Candidate> top_level;
    for (const auto& [node, durations] : host_durations_) {
      if (paths_.Names(node).size() != 1) continue;
      const std::string& key = KeysOf(node).back();
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

  void BuildSteps(ProcessAnalysis& result) {
    const std::optional<std::string> range = ChooseStepRange(result.steps_reason);
    if (!range) return;
    auto key = step_keys_.find(*range);
    std::vector<size_t> ids;
    if (key != step_keys_.end() && key->second.tracked) {
      for (auto& [node, index] : key->second.by_node) {
        index.ForEachOverlapping(0, RangeIndex::kOpenEnd, [&](size_t id) {
          if (EndOf(instances_[id]) != HistoryEntry::kOpenEnd) ids.push_back(id);
        });
      }
    }
    if (ids.empty()) {
      result.steps_reason = "no range named '" + *range + "' was closed";
      return;
    }
    std::sort(ids.begin(), ids.end(), [&](size_t a, size_t b) { return Earlier(a, b); });
    Steps steps;
    steps.range = *range;
    steps.detected = !options_.step.has_value();
    steps.instances = ids.size();
    steps.skipped = options_.skip_steps;
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(options_.skip_steps, ids.size()));
    auto rows = std::make_shared<std::vector<StepRow>>();
    rows->reserve(ids.size() - skip);
    for (size_t i = skip; i < ids.size(); ++i) {
      const StepInstance& instance = instances_[ids[i]];
      StepRow row;
      row.index = i;
      row.name = paths_.Names(instance.node).back();
      row.start_ns = instance.start_ns;
      row.end_ns = EndOf(instance);
      row.phases = instance.phases;
      row.unattributed_ns = instance.unattributed_ns;
      row.busy_ns = instance.busy_ns;
      rows->push_back(std::move(row));
    }
    steps.rows = std::move(rows);
    result.steps = std::move(steps);
  }

  void BuildSpansAndMarks(ProcessAnalysis& result) {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> spans;
    for (const SpanRange& span : data_.spans) {
      spans[{span.name_string, span.domain_string}].push_back(span.end_ns - span.start_ns);
    }
    auto domain = [&](uint32_t id) -> std::optional<std::string> {
      if (id == 0) return std::nullopt;
      return StringOr(data_, id);
    };
    for (auto& [key, durations] : spans) {
      result.ranges.push_back(
          {StringOr(data_, key.first), domain(key.second), Summarize(durations)});
    }
    for (const auto& [key, count] : data_.marks) {
      result.marks.push_back({StringOr(data_, key.first), domain(key.second), count});
    }
  }

  const TraceData& data_;
  const AnalysisOptions& options_;
  const FamilyRules& family_rules_;
  const PhaseRules& phase_rules_;
  std::optional<std::string> step_key_;
  std::unordered_map<uint32_t, std::optional<Phase>> phase_cache_;
  std::unordered_map<uint32_t, std::vector<std::string>> key_cache_;
  std::unordered_map<uint32_t, KernelNames> kernel_names_;
  PathResolver paths_;
  ThreadRanges ranges_;
  PassTreeBuilder tree_;
  ProcessAnalysis result_;
  uint64_t released_ = 0;
  std::map<std::string, Unattributed> unattributed_;
  std::map<std::string, Fallback> fallbacks_;
  uint64_t last_end_ns_ = 0;  // latest end of a released activity with timestamps
  std::map<uint32_t, DeviceState> devices_;
  RunningUnion busy_;  // all devices: the step rows' busy time
  std::map<std::string, FamilyStats> families_;
  std::unordered_map<uint32_t, std::vector<std::string>> graph_families_;
  uint64_t registered_ = 0;           // data_.pushes registered, counted from the first ever
  bool only_step_like_keys_ = false;  // DropKeysThatCannotWin settled auto-detection
  // Auto-detection, until settled: top-level instances of step-like keys not yet seen closed.
  std::vector<std::pair<StepKey*, size_t>> step_like_open_;
  uint64_t folded_ranges_ = 0;  // data_.host_ranges folded, counted from the first ever
  // Closed instances' host durations by path node (folded into the pass tree by path at the end).
  std::map<uint32_t, Samples<uint64_t>> host_durations_;
  std::deque<StepInstance> instances_;  // grows with every step, like TraceData's ranges
  std::vector<std::pair<const StepKey*, size_t>> best_instances_;  // FoldStep's scratch
  std::map<std::string, StepKey> step_keys_;
};

ActivityFolder::ActivityFolder(const TraceData& data, const AnalysisOptions& options)
    : impl_(std::make_unique<Impl>(data, options)) {}
ActivityFolder::~ActivityFolder() = default;

void ActivityFolder::Release(const ActivityRecord& activity, const LaunchRecord* launch,
                             bool late) {
  impl_->Release(activity, launch, late);
}

void ActivityFolder::ForgetLaunch(uint32_t correlation_id, const LaunchRecord& launch) {
  impl_->ForgetLaunch(correlation_id, launch);
}

void ActivityFolder::ExcludeOutsideWindow() { impl_->ExcludeOutsideWindow(); }

ProcessAnalysis ActivityFolder::Finish() { return impl_->Finish(); }

uint64_t ActivityFolder::folded_host_ranges() const { return impl_->folded_host_ranges(); }

uint64_t ActivityFolder::folded_pushes() const { return impl_->folded_pushes(); }

}  // namespace gpuattr::collector
