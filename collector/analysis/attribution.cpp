#include "analysis/attribution.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/kernel_family.h"

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

void FamilyStats::Merge(const FamilyStats& other) {
  min_ns = kernels == 0 ? other.min_ns : std::min(min_ns, other.min_ns);
  max_ns = std::max(max_ns, other.max_ns);
  kernels += other.kernels;
  total_ns += other.total_ns;
  for (const std::string& name : other.names) {
    if (names.size() >= kFamilyExamples) break;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  for (const ShapeStats& shape : other.shapes) {
    auto it = std::find_if(shapes.begin(), shapes.end(),
                           [&](const ShapeStats& mine) { return mine.shape == shape.shape; });
    if (it == shapes.end()) {
      shapes.push_back(shape);
    } else {
      it->kernels += shape.kernels;
      it->total_ns += shape.total_ns;
    }
  }
  std::stable_sort(shapes.begin(), shapes.end(), [](const ShapeStats& a, const ShapeStats& b) {
    return a.kernels != b.kernels ? a.kernels > b.kernels : a.total_ns > b.total_ns;
  });
  api_samples.insert(api_samples.end(), other.api_samples.begin(), other.api_samples.end());
  latency_samples.insert(latency_samples.end(), other.latency_samples.begin(),
                         other.latency_samples.end());
}

std::string StepRangeKey(const std::string& name) {
  static const std::regex kProfilerStep("ProfilerStep#\\d+");
  return std::regex_match(name, kProfilerStep) ? "ProfilerStep#*" : name;
}

namespace {

using Interval = std::pair<uint64_t, uint64_t>;

// Length of the union of half-open intervals (reordered).
uint64_t UnionLength(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (!open || s > end) {
      if (open) total += end - start;
      start = s;
      end = e;
      open = true;
    } else {
      end = std::max(end, e);
    }
  }
  if (open) total += end - start;
  return total;
}

// The disjoint, sorted union of half-open intervals (reordered).
std::vector<Interval> MergeIntervals(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval& interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

// Length of the part of the disjoint sorted `merged` that lies inside [start, end].
uint64_t CoveredLength(const std::vector<Interval>& merged, uint64_t start, uint64_t end) {
  auto it = std::lower_bound(merged.begin(), merged.end(), start,
                             [](const Interval& interval, uint64_t t) { return interval.second <= t; });
  uint64_t total = 0;
  for (; it != merged.end() && it->first < end; ++it) {
    total += std::min(it->second, end) - std::max(it->first, start);
  }
  return total;
}

// Path node id -> names from the root, cached. Undefined ids become "<unknown:ID>" components;
// a parent cycle (malformed input) ends the walk.
class PathResolver {
 public:
  explicit PathResolver(const TraceData& data) : data_(data) {}

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
  std::unordered_map<uint32_t, std::vector<std::string>> cache_;
};

// Per-thread push/pop intervals, for "which range was open on thread T at time t".
// Ranges of one thread nest (a stack), so the innermost one open at t is the last-starting range
// with start <= t or one of its ancestors: walk up the parent links until one still contains t.
class ThreadRanges {
 public:
  explicit ThreadRanges(const std::vector<HostRange>& ranges) {
    for (const HostRange& range : ranges) {
      if (range.node != 0)
        by_tid_[range.tid].push_back({range.start_ns, range.end_ns, range.node, -1});
    }
    for (auto& [tid, entries] : by_tid_) {
      std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      std::vector<int64_t> stack;
      for (size_t i = 0; i < entries.size(); ++i) {
        while (!stack.empty() &&
               entries[static_cast<size_t>(stack.back())].end <= entries[i].start) {
          stack.pop_back();
        }
        entries[i].parent = stack.empty() ? -1 : stack.back();
        stack.push_back(static_cast<int64_t>(i));
      }
    }
  }

  // The path node innermost-open on `tid` at `t` ([start, end) contains t), 0 when none.
  uint32_t InnermostAt(uint32_t tid, uint64_t t) const {
    auto it = by_tid_.find(tid);
    if (it == by_tid_.end()) return 0;
    const auto& entries = it->second;
    auto after = std::upper_bound(entries.begin(), entries.end(), t,
                                  [](uint64_t value, const Entry& e) { return value < e.start; });
    int64_t i = static_cast<int64_t>(after - entries.begin()) - 1;
    while (i >= 0) {
      const Entry& entry = entries[static_cast<size_t>(i)];
      if (entry.end > t) return entry.node;
      i = entry.parent;
    }
    return 0;
  }

 private:
  struct Entry {
    uint64_t start;
    uint64_t end;
    uint32_t node;
    int64_t parent;
  };
  std::unordered_map<uint32_t, std::vector<Entry>> by_tid_;
};

// The pass tree under construction: nodes keyed by names (domains merged), index 0 the root.
class PassTreeBuilder {
 public:
  struct Node {
    std::string name;
    std::map<std::string, size_t> children;
    PassNode out;
    std::vector<Interval> intervals;
    std::vector<uint64_t> host_durations;
    std::map<std::optional<std::vector<std::string>>, LaunchContext> contexts;
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
    out.instances = node.host_durations.size();
    if (!node.host_durations.empty()) out.host = Summarize(node.host_durations);
    out.busy_ns = UnionLength(node.intervals);
    out.total_ns = out.self_ns;
    for (auto& [key, context] : node.contexts) {
      context.path = key;
      out.launch_contexts.push_back(std::move(context));
    }
    std::stable_sort(out.launch_contexts.begin(), out.launch_contexts.end(),
                     [](const LaunchContext& a, const LaunchContext& b) { return a.ns > b.ns; });
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

class Analyzer {
 public:
  Analyzer(const TraceData& data, const AnalysisOptions& options)
      : data_(data),
        options_(options),
        family_rules_(options.family_rules ? *options.family_rules : FamilyRules::Default()),
        phase_rules_(options.phase_rules ? *options.phase_rules : PhaseRules::Default()),
        paths_(data),
        ranges_(data.host_ranges) {}

  ProcessAnalysis Run() {
    ProcessAnalysis result;
    result.main_tid = data_.main_tid;
    result.capture_end_ns = data_.last_timestamp_ns;
    result.device_measured =
        data_.cupti_state ? data_.cupti_state->result == 0 : !data_.activities.empty();
    AddHostRanges();
    JoinAndAttribute(result);
    result.passes = tree_.Build();
    for (PassNode& root : result.passes) SetPhases(root);
    BuildDevices(result);
    BuildFamilies(result);
    BuildSteps(result);
    BuildSpansAndMarks(result);
    if (data_.diagnostics) {
      const wire::Diagnostics& d = *data_.diagnostics;
      result.loss.dropped_records =
          d.ring_dropped_records + d.socket_dropped_records + d.cupti_dropped_records;
    }
    return result;
  }

 private:
  void AddHostRanges() {
    for (const HostRange& range : data_.host_ranges) {
      if (range.node == 0) continue;
      tree_.At(paths_.Names(range.node)).host_durations.push_back(range.end_ns - range.start_ns);
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
    if (origin == nullptr) return {0, AttributionKind::kNone, kReasonGraphBeforeAttach};
    if (origin->path_node != 0) return {origin->path_node, AttributionKind::kCaptured, nullptr};
    // Captured with no range open: rules 2-4 with the graph launch as the launch.
    if (at_launch) return *at_launch;
    return {0, AttributionKind::kNone, kReasonLaunchNotSeen};
  }

  void JoinAndAttribute(ProcessAnalysis& result) {
    std::unordered_set<uint32_t> matched;
    std::map<std::string, Unattributed> unattributed;
    result.outcomes.resize(data_.activities.size());
    for (size_t index = 0; index < data_.activities.size(); ++index) {
      const ActivityRecord& activity = data_.activities[index];
      ActivityOutcome& outcome = result.outcomes[index];
      const LaunchRecord* launch = LaunchOf(activity);
      if (launch) {
        matched.insert(activity.correlation_id);
      } else {
        ++result.loss.orphan_activities;
      }
      if (!activity.complete()) {
        ++result.loss.incomplete_records;
        continue;
      }
      const uint64_t ns = activity.duration_ns();
      const bool kernel = activity.kind == ActivityKind::kKernel;
      CountTotals(result.totals, activity.kind, ns);

      const Attribution attribution = Attribute(activity, launch, outcome);
      outcome.node = attribution.node;
      outcome.kind = attribution.how;
      outcome.reason = attribution.reason;
      if (attribution.node == 0) {
        Unattributed& entry = unattributed[attribution.reason];
        entry.ns += ns;
        entry.activities += 1;
        if (kernel) {
          entry.kernel_ns += ns;
          // §Coverage: counts against the phase the main thread was in at the launch.
          if (launch && data_.main_tid) {
            const std::optional<Phase> main_phase =
                PhaseOf(ranges_.InnermostAt(*data_.main_tid, launch->enter_ns));
            if (main_phase) {
              result.phase_coverage.unattributed_kernel_ns[static_cast<size_t>(*main_phase)] += ns;
            }
          }
        }
        continue;
      }
      outcome.phase = PhaseOf(attribution.node);
      if (outcome.phase) {
        result.phases.ns[static_cast<size_t>(*outcome.phase)] += ns;
        if (kernel) result.phase_coverage.attributed_kernel_ns[static_cast<size_t>(*outcome.phase)] += ns;
      } else {
        result.phases.other_ns += ns;
      }
      if (kernel) result.attributed_kernel_ns += ns;
      auto& node = tree_.At(paths_.Names(attribution.node));
      node.out.self_ns += ns;
      node.out.activities += 1;
      if (kernel) node.out.kernels += 1;
      node.intervals.emplace_back(activity.start_ns, activity.end_ns);
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
    for (auto& [reason, entry] : unattributed) {
      entry.reason = reason;
      result.unattributed.push_back(entry);
    }
    std::stable_sort(result.unattributed.begin(), result.unattributed.end(),
                     [](const Unattributed& a, const Unattributed& b) { return a.ns > b.ns; });
    result.totals.launches = data_.launches.size();
    for (const auto& [correlation, launch] : data_.launches) {
      if (!matched.contains(correlation) && !data_.captured_correlations.contains(correlation)) {
        ++result.loss.unmatched_launches;
      }
    }
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

  // The launch API entry time of an activity, when its launch was seen.
  const LaunchRecord* LaunchOf(const ActivityRecord& activity) const {
    if (activity.correlation_id == 0) return nullptr;
    auto it = data_.launches.find(activity.correlation_id);
    return it == data_.launches.end() ? nullptr : &it->second;
  }

  void BuildDevices(ProcessAnalysis& result) {
    std::map<uint32_t, std::vector<const ActivityRecord*>> by_device;
    for (const ActivityRecord& activity : data_.activities) {
      if (activity.complete()) by_device[activity.device].push_back(&activity);
    }
    for (auto& [device_id, activities] : by_device) {
      DeviceStats device;
      device.id = device_id;
      if (auto name = data_.device_names.find(device_id); name != data_.device_names.end()) {
        device.name = StringOr(data_, name->second);
      }
      std::sort(activities.begin(), activities.end(),
                [](const ActivityRecord* a, const ActivityRecord* b) {
                  return a->start_ns != b->start_ns ? a->start_ns < b->start_ns
                                                    : a->end_ns < b->end_ns;
                });
      std::map<uint32_t, std::pair<StreamStats, std::vector<Interval>>> streams;
      for (const ActivityRecord* activity : activities) {
        auto& [stats, intervals] = streams[activity->stream];
        stats.id = activity->stream;
        stats.activities += 1;
        const uint64_t ns = activity->duration_ns();
        switch (activity->kind) {
          case ActivityKind::kKernel:
            stats.kernel_ns += ns;
            break;
          case ActivityKind::kMemcpy:
            stats.memcpy_ns += ns;
            break;
          case ActivityKind::kMemset:
            stats.memset_ns += ns;
            break;
        }
        intervals.emplace_back(activity->start_ns, activity->end_ns);
      }
      for (auto& [stream_id, entry] : streams) {
        entry.first.busy_ns = UnionLength(entry.second);
        device.streams.push_back(entry.first);
      }
      SweepDevice(activities, result.capture_end_ns, device);
      result.devices.push_back(std::move(device));
    }
  }

  // One pass over a device's activities sorted by start: the busy union, and each hole in it
  // classified by the earliest-launched activity starting at the hole's end (DESIGN §2 gaps).
  void SweepDevice(const std::vector<const ActivityRecord*>& sorted, uint64_t capture_end,
                   DeviceStats& device) {
    struct Hole {
      uint64_t start;
      uint64_t end;
      GapKind kind;
      const LaunchRecord* launch;
    };
    std::vector<Hole> holes;
    device.first_start_ns = sorted.front()->start_ns;
    uint64_t segment_start = device.first_start_ns;
    uint64_t segment_end = sorted.front()->end_ns;
    for (size_t i = 1; i < sorted.size(); ++i) {
      const ActivityRecord* activity = sorted[i];
      if (activity->start_ns > segment_end) {
        device.busy_ns += segment_end - segment_start;
        const LaunchRecord* first_launched = nullptr;
        for (size_t j = i; j < sorted.size() && sorted[j]->start_ns == activity->start_ns; ++j) {
          const LaunchRecord* launch = LaunchOf(*sorted[j]);
          if (launch && (!first_launched || launch->enter_ns < first_launched->enter_ns)) {
            first_launched = launch;
          }
        }
        GapKind kind = GapKind::kUnknown;
        if (first_launched) {
          kind =
              first_launched->enter_ns >= segment_end ? GapKind::kHostBound : GapKind::kDependency;
        }
        holes.push_back({segment_end, activity->start_ns, kind, first_launched});
        segment_start = activity->start_ns;
      }
      segment_end = std::max(segment_end, activity->end_ns);
    }
    device.busy_ns += segment_end - segment_start;
    device.last_end_ns = segment_end;
    device.span_ns = device.last_end_ns - device.first_start_ns;
    device.idle_ns = device.span_ns - device.busy_ns;
    device.tail_ns = capture_end > device.last_end_ns ? capture_end - device.last_end_ns : 0;
    device.gaps = holes.size();
    for (const Hole& hole : holes) {
      const uint64_t ns = hole.end - hole.start;
      switch (hole.kind) {
        case GapKind::kHostBound:
          device.host_bound_ns += ns;
          break;
        case GapKind::kDependency:
          device.dependency_ns += ns;
          break;
        case GapKind::kUnknown:
          device.unclassified_ns += ns;
          break;
      }
    }
    const size_t keep = std::min(kLargestGaps, holes.size());
    std::partial_sort(holes.begin(), holes.begin() + static_cast<std::ptrdiff_t>(keep), holes.end(),
                      [](const Hole& a, const Hole& b) {
                        const uint64_t la = a.end - a.start;
                        const uint64_t lb = b.end - b.start;
                        return la != lb ? la > lb : a.start < b.start;
                      });
    for (size_t i = 0; i < keep; ++i) {
      Gap gap{holes[i].start, holes[i].end, holes[i].kind, std::nullopt, std::nullopt};
      if (holes[i].launch) {
        gap.launch_tid = holes[i].launch->tid;
        const uint32_t node = ranges_.InnermostAt(holes[i].launch->tid, holes[i].start);
        if (node != 0) gap.host_range = paths_.Names(node);
      }
      device.largest.push_back(std::move(gap));
    }
  }

  void BuildFamilies(ProcessAnalysis& result) {
    struct Names {
      std::string demangled;
      std::string family;
    };
    std::unordered_map<uint32_t, Names> names;
    std::map<std::string, FamilyStats> families;
    std::map<std::string, std::unordered_set<uint32_t>> family_launches;
    for (const ActivityRecord& activity : data_.activities) {
      if (activity.kind != ActivityKind::kKernel || !activity.complete()) continue;
      auto known = names.find(activity.name_string);
      if (known == names.end()) {
        std::string demangled = DemangleKernelName(StringOr(data_, activity.name_string));
        std::string family = family_rules_.FamilyOf(demangled);
        known = names.emplace(activity.name_string, Names{std::move(demangled), std::move(family)})
                    .first;
      }
      FamilyStats one;
      one.family = known->second.family;
      one.kernels = 1;
      one.total_ns = one.min_ns = one.max_ns = activity.duration_ns();
      one.names.push_back(known->second.demangled);
      one.shapes.push_back({data_.shapes[activity.shape], 1, activity.duration_ns()});
      FamilyStats& family = families[one.family];
      family.family = one.family;
      family.Merge(one);
      if (const LaunchRecord* launch = LaunchOf(activity)) {
        family.latency_samples.push_back(static_cast<int64_t>(activity.start_ns) -
                                         static_cast<int64_t>(launch->enter_ns));
        if (launch->exit_ns >= launch->enter_ns && launch->exit_ns != 0 &&
            family_launches[family.family].insert(activity.correlation_id).second) {
          family.api_samples.push_back(launch->exit_ns - launch->enter_ns);
        }
      }
    }
    for (auto& [name, family] : families) result.families.push_back(std::move(family));
    std::stable_sort(
        result.families.begin(), result.families.end(),
        [](const FamilyStats& a, const FamilyStats& b) { return a.total_ns > b.total_ns; });
  }

  // §Steps: the step range's name, explicit or auto-detected; empty with the reason in `why`.
  std::optional<std::string> ChooseStepRange(std::string& why) {
    if (options_.step) return StepRangeKey(*options_.step);
    struct Candidate {
      uint64_t instances = 0;
      uint64_t host_ns = 0;
      bool step_like = false;
    };
    static const std::regex kStepLike("(train_?)?step|iteration|iter|ProfilerStep#\\d+",
                                      std::regex::ECMAScript | std::regex::icase);
    std::map<std::string, Candidate> top_level;
    for (const HostRange& range : data_.host_ranges) {
      if (range.node == 0) continue;
      const std::vector<std::string>& names = paths_.Names(range.node);
      if (names.size() != 1) continue;
      Candidate& candidate = top_level[StepRangeKey(names[0])];
      candidate.instances += 1;
      candidate.host_ns += range.end_ns - range.start_ns;
      candidate.step_like = candidate.step_like || std::regex_match(names[0], kStepLike);
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
    struct Instance {
      const HostRange* range;
      const std::vector<std::string>* path;
    };
    std::vector<Instance> instances;
    for (const HostRange& host : data_.host_ranges) {
      if (host.node == 0) continue;
      const std::vector<std::string>& names = paths_.Names(host.node);
      if (!names.empty() && StepRangeKey(names.back()) == *range) {
        instances.push_back({&host, &names});
      }
    }
    if (instances.empty()) {
      result.steps_reason = "no range named '" + *range + "' was closed";
      return;
    }
    std::sort(instances.begin(), instances.end(), [](const Instance& a, const Instance& b) {
      if (a.range->start_ns != b.range->start_ns) return a.range->start_ns < b.range->start_ns;
      if (a.range->end_ns != b.range->end_ns) return a.range->end_ns < b.range->end_ns;
      return a.range->tid < b.range->tid;
    });
    std::vector<StepRow> rows(instances.size());
    std::vector<uint64_t> max_end(instances.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      rows[i].index = i;
      rows[i].name = instances[i].path->back();
      rows[i].start_ns = instances[i].range->start_ns;
      rows[i].end_ns = instances[i].range->end_ns;
      max_end[i] = std::max(i ? max_end[i - 1] : 0, rows[i].end_ns);
    }
    // The earliest-starting instance whose [start, end] holds t and that `accepts`.
    auto instance_at = [&](uint64_t t, auto accepts) -> StepRow* {
      auto after = std::upper_bound(rows.begin(), rows.end(), t,
                                    [](uint64_t value, const StepRow& row) {
                                      return value < row.start_ns;
                                    });
      StepRow* found = nullptr;
      for (size_t i = static_cast<size_t>(after - rows.begin()); i-- > 0 && max_end[i] >= t;) {
        if (rows[i].end_ns >= t && accepts(i)) found = &rows[i];
      }
      return found;
    };
    std::vector<Interval> busy;
    for (size_t index = 0; index < data_.activities.size(); ++index) {
      const ActivityRecord& activity = data_.activities[index];
      if (!activity.complete()) continue;
      busy.emplace_back(activity.start_ns, activity.end_ns);
      const LaunchRecord* launch = LaunchOf(activity);
      if (launch == nullptr) continue;
      const ActivityOutcome& outcome = result.outcomes[index];
      const uint64_t ns = activity.duration_ns();
      if (outcome.node == 0) {
        if (StepRow* row = instance_at(launch->enter_ns, [](size_t) { return true; })) {
          row->unattributed_ns += ns;
        }
        continue;
      }
      const std::vector<std::string>& path = paths_.Names(outcome.node);
      StepRow* row = instance_at(launch->enter_ns, [&](size_t i) {
        const std::vector<std::string>& step_path = *instances[i].path;
        return path.size() >= step_path.size() &&
               std::equal(step_path.begin(), step_path.end(), path.begin());
      });
      if (row == nullptr) continue;
      if (outcome.phase) {
        row->phases.ns[static_cast<size_t>(*outcome.phase)] += ns;
      } else {
        row->phases.other_ns += ns;
      }
    }
    const std::vector<Interval> merged = MergeIntervals(busy);
    for (StepRow& row : rows) row.busy_ns = CoveredLength(merged, row.start_ns, row.end_ns);

    Steps steps;
    steps.range = *range;
    steps.detected = !options_.step.has_value();
    steps.instances = rows.size();
    steps.skipped = options_.skip_steps;
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(options_.skip_steps, rows.size()));
    steps.rows.assign(std::make_move_iterator(rows.begin() + static_cast<std::ptrdiff_t>(skip)),
                      std::make_move_iterator(rows.end()));
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
  std::unordered_map<uint32_t, std::optional<Phase>> phase_cache_;
  PathResolver paths_;
  ThreadRanges ranges_;
  PassTreeBuilder tree_;
};

}  // namespace

ProcessAnalysis AnalyzeProcess(const TraceData& data, const AnalysisOptions& options) {
  return Analyzer(data, options).Run();
}

void AppendActivityLines(const TraceData& data, const ProcessAnalysis& analysis, std::string* out) {
  using Json = nlohmann::json;
  PathResolver paths(data);
  std::unordered_map<uint32_t, std::string> demangled;
  const uint32_t pid = data.hello ? data.hello->pid : 0;
  for (size_t index = 0; index < data.activities.size() && index < analysis.outcomes.size();
       ++index) {
    const ActivityRecord& activity = data.activities[index];
    if (!activity.complete()) continue;
    const ActivityOutcome& outcome = analysis.outcomes[index];
    const LaunchRecord* launch = nullptr;
    if (activity.correlation_id != 0) {
      auto it = data.launches.find(activity.correlation_id);
      if (it != data.launches.end()) launch = &it->second;
    }
    Json line;
    line["pid"] = pid;
    switch (activity.kind) {
      case ActivityKind::kKernel: {
        line["kind"] = "kernel";
        auto name = demangled.find(activity.name_string);
        if (name == demangled.end()) {
          name = demangled
                     .emplace(activity.name_string,
                              DemangleKernelName(StringOr(data, activity.name_string)))
                     .first;
        }
        line["name"] = name->second;
        break;
      }
      case ActivityKind::kMemcpy:
        line["kind"] = "memcpy";
        line["name"] = nullptr;
        break;
      case ActivityKind::kMemset:
        line["kind"] = "memset";
        line["name"] = nullptr;
        break;
    }
    line["correlation_id"] = activity.correlation_id;
    line["device"] = activity.device;
    line["stream"] = activity.stream;
    line["start_ns"] = activity.start_ns;
    line["end_ns"] = activity.end_ns;
    line["launch_ns"] = launch ? Json(launch->enter_ns) : Json(nullptr);
    if (launch) {
      auto name = data.thread_names.find(launch->tid);
      line["thread"] = name != data.thread_names.end() ? StringOr(data, name->second)
                                                       : std::to_string(launch->tid);
    } else {
      line["thread"] = nullptr;
    }
    line["path"] = outcome.node != 0 ? paths.Names(outcome.node) : std::vector<std::string>{};
    switch (outcome.kind) {
      case AttributionKind::kNone:
        line["attribution"] = "none";
        break;
      case AttributionKind::kDirect:
        line["attribution"] = "direct";
        break;
      case AttributionKind::kInherited:
        line["attribution"] = "inherited";
        break;
      case AttributionKind::kCaptured:
        line["attribution"] = "captured";
        break;
    }
    line["reason"] = outcome.reason ? Json(outcome.reason) : Json(nullptr);
    line["graph_node"] = activity.graph_node_id ? Json(activity.graph_node_id) : Json(nullptr);
    if (activity.graph_node_id != 0 && launch) {
      line["launch_path"] = outcome.launch_node != 0 ? paths.Names(outcome.launch_node)
                                                     : std::vector<std::string>{};
    } else {
      line["launch_path"] = nullptr;
    }
    line["phase"] = outcome.phase ? Json(PhaseName(*outcome.phase)) : Json(nullptr);
    *out += line.dump(-1, ' ', false, Json::error_handler_t::replace);
    out->push_back('\n');
  }
}

}  // namespace gpuattr::collector
