#include "contract_expect.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <regex>
#include <set>

namespace gpuattr::e2e {
namespace {

using nlohmann::json;

constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();

// The default phase rules of docs/attribution.md §Phases, written out here on purpose: the test
// must not read the collector's data file it is checking.
const std::vector<std::pair<std::string, std::vector<std::string>>>& PhaseRules() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> rules = {
      {"forward",
       {"forward", "fwd", "forward[_.:# ].*", ".*[_.:# ]forward", "##\\s*forward([_.:# ].*)?##",
        "CompiledFunction", "nn\\.Module: (?!.*Loss(_\\d+)?$).*"}},
      {"backward",
       {"backward", "bwd", "backward[_.:# ].*", ".*[_.:# ]backward",
        "autograd::engine::evaluate_function.*", "##\\s*backward([_.:# ].*)?##",
        "CompiledFunctionBackward"}},
      {"recompute",
       {"recompute", "recompute[_.:# ].*", "checkpoint", "activation_checkpoint.*",
        ".*checkpoint\\.py\\(\\d+\\): recompute_fn"}},
      {"optimizer",
       {"optimizer", "optim", "optimizer[_.:# ].*", "optimizer\\.step.*", "optimizer_step",
        "Optimizer\\.step#.*", "Optimizer\\.zero_grad#.*", "##\\s*optimizer([_.:# ].*)?##",
        "##\\s*zero_grad\\s*##", "torch\\.nn\\.utils\\.clip_grad_\\w+"}},
      {"loss",
       {"loss", "loss[_.:# ].*", ".*[_.:# ]loss", "criterion", "##\\s*loss([_.:# ].*)?##",
        "nn\\.Module: .*Loss(_\\d+)?",
        "nn\\.functional\\.(\\w*_loss|cross_entropy|binary_cross_entropy\\w*|kl_div)",
        "aten::(?!\\w*backward)(\\w*_loss\\w*|nll_loss\\w*|cross_entropy\\w*|"
        "binary_cross_entropy\\w*|kl_div)"}},
      {"communication", {"nccl:.*", "rccl:.*", "record_param_comms", "c10d::.*"}},
  };
  return rules;
}

// Memoised: a scenario has few distinct range names and many activities.
std::optional<std::string> PhaseOfName(const std::string& name) {
  static std::map<std::string, std::optional<std::string>> known;
  if (const auto it = known.find(name); it != known.end()) return it->second;
  std::optional<std::string> found;
  for (const auto& [phase, patterns] : PhaseRules()) {
    for (const std::string& pattern : patterns) {
      if (!found &&
          std::regex_match(name, std::regex(pattern, std::regex::ECMAScript | std::regex::icase))) {
        found = phase;
      }
    }
  }
  known.emplace(name, found);
  return found;
}

struct HostRange {
  std::string thread;
  Path path;
  uint64_t start_ns = 0;           // read before the push
  uint64_t end_ns = 0;             // read before the pop; kOpen when never closed
  uint64_t start_returned_ns = 0;  // read after the push returned
  uint64_t end_returned_ns = 0;    // read after the pop returned; kOpen when never closed
};

std::vector<HostRange> PushPopRanges(const json& process) {
  std::vector<HostRange> out;
  for (const auto& range : process["ranges"]) {
    if (range["kind"] != "push_pop") continue;
    HostRange r{range["thread"].get<std::string>(), range["path"].get<Path>(),
                range["start_ns"].get<uint64_t>(),
                range["end_ns"].is_null() ? kOpen : range["end_ns"].get<uint64_t>()};
    r.start_returned_ns = range.value("start_returned_ns", r.start_ns);
    r.end_returned_ns =
        range["end_ns"].is_null() ? kOpen : range.value("end_returned_ns", r.end_ns);
    out.push_back(std::move(r));
  }
  return out;
}

// The merged stack of `thread` at instant t: the deepest of its ranges open then, by the readings
// before the NVTX calls, or with `returned` by the readings after they returned.
Path StackAt(const std::vector<HostRange>& ranges, const std::string& thread, uint64_t t,
             bool returned = false) {
  Path best;
  for (const HostRange& range : ranges) {
    const uint64_t start = returned ? range.start_returned_ns : range.start_ns;
    const uint64_t end = returned ? range.end_returned_ns : range.end_ns;
    if (range.thread == thread && start <= t && t < end && range.path.size() > best.size()) {
      best = range.path;
    }
  }
  return best;
}

// "ProfilerStep#12" counts as the one name "ProfilerStep#*".
std::string StepName(const std::string& name) {
  static const std::regex profiler_step("ProfilerStep#\\d+");
  return std::regex_match(name, profiler_step) ? "ProfilerStep#*" : name;
}

std::optional<std::string> DetectStep(const std::vector<HostRange>& ranges) {
  struct Candidate {
    uint64_t instances = 0;
    uint64_t host_ns = 0;
    bool named_like_a_step = false;
  };
  static const std::regex step_like("(train_?)?step|iteration|iter|ProfilerStep#\\d+",
                                    std::regex::ECMAScript | std::regex::icase);
  std::map<std::string, Candidate> candidates;
  for (const HostRange& range : ranges) {
    if (range.path.size() != 1 || range.end_ns == kOpen) continue;
    Candidate& c = candidates[StepName(range.path[0])];
    ++c.instances;
    c.host_ns += range.end_ns - range.start_ns;
    c.named_like_a_step = c.named_like_a_step || std::regex_match(range.path[0], step_like);
  }
  std::optional<std::string> best;
  auto better = [&](const Candidate& a, const Candidate& b) {
    if (a.named_like_a_step != b.named_like_a_step) return a.named_like_a_step;
    if (a.instances != b.instances) return a.instances > b.instances;
    return a.host_ns > b.host_ns;
  };
  for (const auto& [name, c] : candidates) {
    if (c.instances < 2) continue;
    if (!best || better(c, candidates[*best])) best = name;
  }
  return best;
}

using Intervals = std::vector<std::pair<uint64_t, uint64_t>>;

// The union of the intervals as disjoint sorted intervals.
Intervals Merge(Intervals intervals) {
  std::sort(intervals.begin(), intervals.end());
  Intervals out;
  for (const auto& interval : intervals) {
    if (!out.empty() && interval.first <= out.back().second) {
      out.back().second = std::max(out.back().second, interval.second);
    } else {
      out.push_back(interval);
    }
  }
  return out;
}

uint64_t OverlapLength(const Intervals& merged, uint64_t start, uint64_t end) {
  uint64_t total = 0;
  for (const auto& [a, b] : merged) {
    const uint64_t lo = std::max(a, start);
    const uint64_t hi = std::min(b, end);
    if (lo < hi) total += hi - lo;
  }
  return total;
}

ContractActivity ExpectActivity(const json& activity, const ContractOptions& options) {
  ContractActivity out;
  out.truth = activity;
  out.attribution = activity["attribution"].get<std::string>();
  out.path = activity["range_path"].get<Path>();
  if (!options.inherit && out.attribution == "inherited") {
    out.attribution = "none";
    out.path.clear();
  }
  if (out.attribution == "none") {
    out.path.clear();
    out.reason = activity["correlation_id"].is_null() ? "launch_not_seen" : "no_open_range";
  } else {
    out.phase = PhaseOfPath(out.path);
    // NCCL / RCCL collectives are communication wherever they were launched.
    static const std::regex collective("^(?:void )?nccl(?:Dev)?Kernel_");
    if (activity["kind"] == "kernel" &&
        std::regex_search(activity["name"].get<std::string>(), collective)) {
      out.phase = "communication";
    }
  }
  return out;
}

// docs/attribution.md §Phases, backward on autograd's threads: a launch from a thread other than
// `main_thread` that began a backward-phase range within the main thread's outermost range open at
// the launch (the step), at or before the launch, is backward when it had no range of its own
// (inherited) or its path names no phase.
bool LaunchedInBackward(const std::vector<HostRange>& ranges, const std::string& main_thread,
                        const std::string& thread, uint64_t launch_ns) {
  if (thread == main_thread) return false;
  std::optional<uint64_t> step_start;
  for (const HostRange& range : ranges) {
    if (range.thread == main_thread && range.path.size() == 1 && range.start_ns <= launch_ns &&
        launch_ns < range.end_ns) {
      step_start = range.start_ns;
    }
  }
  if (!step_start) return false;
  return std::any_of(ranges.begin(), ranges.end(), [&](const HostRange& range) {
    return range.thread == thread && range.start_ns >= *step_start && range.start_ns <= launch_ns &&
           PhaseOfPath(range.path) == "backward";
  });
}

// `main_thread`: the thread of the process's earliest range (empty: none), whose stack names a
// gap before the launching thread's does (docs/attribution.md §Gaps).
void ExpectGaps(const json& activities, const std::vector<HostRange>& ranges,
                const std::string& main_thread, std::map<int64_t, ContractDevice>* devices) {
  std::map<int64_t, Intervals> by_device;
  // (device, start) -> the activity starting then with the earliest launch.
  std::map<std::pair<int64_t, uint64_t>, const json*> first_launched;
  for (const auto& a : activities) {
    const int64_t device = a["device"].get<int64_t>();
    const uint64_t start = a["start_ns"].get<uint64_t>();
    by_device[device].emplace_back(start, a["end_ns"].get<uint64_t>());
    const json*& ender = first_launched[{device, start}];
    if (ender == nullptr ||
        a["launch_ns"].get<uint64_t>() < (*ender)["launch_ns"].get<uint64_t>()) {
      ender = &a;
    }
  }
  for (const auto& [device, intervals] : by_device) {
    ContractDevice& out = (*devices)[device];
    const Intervals merged = Merge(intervals);
    for (size_t i = 1; i < merged.size(); ++i) {
      ContractGap gap{merged[i - 1].second, merged[i].first, "", false, {}};
      const json& ender = *first_launched.at({device, gap.end_ns});
      const uint64_t launch = ender["launch_ns"].get<uint64_t>();
      const uint64_t launch_returned = ender.value("launch_returned_ns", launch);
      const uint64_t length = gap.end_ns - gap.start_ns;
      if (launch >= gap.start_ns) {
        gap.gap_class = "host_bound";
        out.host_bound_ns += length;
      } else if (launch_returned >= gap.start_ns) {
        gap.gap_class = "host_bound";  // or dependency: the shim stamped the launch in between
        gap.class_ambiguous = true;
        out.ambiguous_ns += length;
      } else {
        gap.gap_class = "dependency";
        out.dependency_ns += length;
      }
      const std::string thread = ender["thread"].get<std::string>();
      for (const bool returned : {false, true}) {
        const Path main =
            main_thread.empty() ? Path{} : StackAt(ranges, main_thread, gap.start_ns, returned);
        gap.host_range_candidates.push_back(
            main.empty() ? StackAt(ranges, thread, gap.start_ns, returned) : main);
      }
      out.holes.push_back(std::move(gap));
    }
    std::stable_sort(out.holes.begin(), out.holes.end(),
                     [](const ContractGap& a, const ContractGap& b) {
                       return a.end_ns - a.start_ns > b.end_ns - b.start_ns;
                     });
  }
}

std::optional<ContractSteps> ExpectSteps(const ContractProcess& process,
                                         const std::vector<HostRange>& ranges,
                                         const ContractOptions& options) {
  const std::optional<std::string> name = options.step ? options.step : DetectStep(ranges);
  if (!name) return std::nullopt;
  ContractSteps steps;
  steps.range = *name;
  Intervals all;
  for (const ContractActivity& a : process.activities) {
    all.emplace_back(a.truth["start_ns"].get<uint64_t>(), a.truth["end_ns"].get<uint64_t>());
  }
  const Intervals merged = Merge(all);
  std::vector<const HostRange*> instances;
  for (const HostRange& range : ranges) {
    if (range.path.size() == 1 && StepName(range.path[0]) == *name && range.end_ns != kOpen) {
      instances.push_back(&range);
    }
  }
  std::sort(instances.begin(), instances.end(),
            [](const HostRange* a, const HostRange* b) { return a->start_ns < b->start_ns; });
  for (const HostRange* instance : instances) {
    ContractStepRow row;
    row.start_ns = instance->start_ns;
    row.end_ns = instance->end_ns;
    row.host_ns = row.end_ns - row.start_ns;
    row.busy_ns = OverlapLength(merged, row.start_ns, row.end_ns);
    for (const std::string& term : kPhaseTerms) row.ns[term] = 0;
    row.ns["unattributed"] = 0;
    for (const ContractActivity& a : process.activities) {
      const uint64_t launch = a.truth["launch_ns"].get<uint64_t>();
      if (launch < row.start_ns || launch > row.end_ns) continue;
      const uint64_t duration =
          a.truth["end_ns"].get<uint64_t>() - a.truth["start_ns"].get<uint64_t>();
      // Launched while the step was open, from any thread (docs/attribution.md §Steps).
      if (a.attribution == "none") {
        row.ns["unattributed"] += duration;
      } else {
        row.ns[a.phase.value_or("other")] += duration;
      }
    }
    steps.rows.push_back(std::move(row));
  }
  return steps;
}

}  // namespace

std::optional<std::string> PhaseOfPath(const Path& path) {
  for (size_t i = path.size(); i-- > 0;) {
    const std::optional<std::string> phase = PhaseOfName(path[i]);
    if (!phase) continue;
    if (*phase == "forward") {
      for (size_t j = 0; j < i; ++j) {
        if (PhaseOfName(path[j]) == "backward") return "recompute";
      }
    }
    return phase;
  }
  return std::nullopt;
}

std::pair<uint64_t, uint64_t> MedianBounds(std::vector<uint64_t> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return {values[(n - 1) / 2], values[n / 2]};
}

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : name;
}

std::vector<ContractProcess> ExpectContract(const json& truth, const ContractOptions& options) {
  std::vector<ContractProcess> out;
  for (const auto& process : truth["processes"]) {
    ContractProcess expected;
    expected.pid = process["pid"].get<int64_t>();
    const std::vector<HostRange> ranges = PushPopRanges(process);
    const HostRange* first = nullptr;
    for (const HostRange& range : ranges) {
      if (first == nullptr || range.start_ns < first->start_ns) first = &range;
    }
    for (const std::string& term : kPhaseTerms) expected.phase_ns[term] = 0;
    for (const auto& activity : process["activities"]) {
      ContractActivity a = ExpectActivity(activity, options);
      const bool phaseless_direct = a.attribution == "direct" && !a.phase;
      if ((a.attribution == "inherited" || phaseless_direct) && a.phase != "communication" &&
          first != nullptr &&
          LaunchedInBackward(ranges, first->thread, activity["thread"].get<std::string>(),
                             activity["launch_ns"].get<uint64_t>())) {
        a.phase = "backward";
      }
      const uint64_t duration =
          activity["end_ns"].get<uint64_t>() - activity["start_ns"].get<uint64_t>();
      const bool kernel = activity["kind"] == "kernel";
      expected.device_ns += duration;
      if (kernel) expected.kernel_ns += duration;
      if (a.reason) {
        auto& [ns, count] = expected.unattributed[*a.reason];
        ns += duration;
        ++count;
        if (kernel && first != nullptr) {
          const std::optional<std::string> main_phase =
              PhaseOfPath(StackAt(ranges, first->thread, activity["launch_ns"].get<uint64_t>()));
          if (main_phase) expected.phase_unattributed_kernel_ns[*main_phase] += duration;
        }
      } else {
        expected.phase_ns[a.phase.value_or("other")] += duration;
        if (kernel) {
          expected.attributed_kernel_ns += duration;
          if (a.phase) expected.phase_kernel_ns[*a.phase] += duration;
        }
      }
      expected.activities.push_back(std::move(a));
    }
    ExpectGaps(process["activities"], ranges, first ? first->thread : std::string(),
               &expected.devices);
    expected.steps = ExpectSteps(expected, ranges, options);
    out.push_back(std::move(expected));
  }
  return out;
}

}  // namespace gpuattr::e2e
