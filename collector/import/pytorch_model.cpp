#include "import/pytorch_model.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analysis/module_fold.h"

namespace gpuattr::collector {
namespace {

constexpr std::string_view kStepPrefix = "ProfilerStep#";

// One thread's ranges nested as the replay nests them (by start, the longer first at ties; a
// range ending after the one open below it ends there), asked which are open at an instant.
class NestedRanges {
 public:
  explicit NestedRanges(std::vector<const ImportedRange*> ranges) {
    std::stable_sort(ranges.begin(), ranges.end(),
                     [](const ImportedRange* a, const ImportedRange* b) {
                       if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
                       return a->end_ns > b->end_ns;
                     });
    std::vector<int32_t> open;
    for (const ImportedRange* range : ranges) {
      while (!open.empty() && entries_[static_cast<size_t>(open.back())].end_ns <= range->start_ns)
        open.pop_back();
      uint64_t end_ns = range->end_ns;
      const int32_t parent = open.empty() ? -1 : open.back();
      if (parent >= 0) end_ns = std::min(end_ns, entries_[static_cast<size_t>(parent)].end_ns);
      open.push_back(static_cast<int32_t>(entries_.size()));
      entries_.push_back({range->start_ns, end_ns, range->name, parent});
    }
  }

  struct Entry {
    uint64_t start_ns;
    uint64_t end_ns;
    uint32_t name;
    int32_t parent;  // index of the range it was pushed onto, -1: none
  };

  // The ranges open at t (start <= t < end), outermost first. Every range open at t is the last
  // one pushed at or before t or one of the ranges it was pushed onto.
  std::vector<const Entry*> OpenAt(uint64_t t) const {
    auto after = std::upper_bound(entries_.begin(), entries_.end(), t,
                                  [](uint64_t time, const Entry& e) { return time < e.start_ns; });
    std::vector<const Entry*> open;
    for (int32_t i = static_cast<int32_t>(after - entries_.begin()) - 1; i >= 0;
         i = entries_[static_cast<size_t>(i)].parent) {
      const Entry& entry = entries_[static_cast<size_t>(i)];
      if (entry.end_ns > t) open.push_back(&entry);
    }
    std::reverse(open.begin(), open.end());
    return open;
  }

 private:
  std::vector<Entry> entries_;  // push order
};

// What the model reads of one process.
struct ProcessEvents {
  std::map<uint32_t, std::vector<const ImportedRange*>> ranges;  // by tid
  std::map<uint32_t, uint64_t> modules;                          // by tid: how many
  std::map<uint32_t, uint64_t> step_ranges;                      // by tid
  std::vector<const TorchOp*> backward_ops;
  std::vector<const TorchOp*> sequenced_ops;
  std::vector<const TorchFlowPoint*> flow_finishes;
  uint64_t flow_points = 0;
};

uint32_t MainThreadOf(const ProcessEvents& process) {
  if (!process.step_ranges.empty()) return process.step_ranges.begin()->first;
  uint32_t main = 0;
  size_t most = 0;
  for (const auto& [tid, modules] : process.modules) {
    if (modules > most) {
      most = modules;
      main = tid;
    }
  }
  return main;
}

class ProcessModel {
 public:
  ProcessModel(const ProcessEvents& process,
               const std::unordered_map<uint64_t, const TorchFlowPoint*>& flow_starts,
               ImportedTrace* trace, PyTorchCounts* counts)
      : process_(process),
        flow_starts_(flow_starts),
        counts_(counts),
        strings_(trace->strings),
        main_tid_(MainThreadOf(process)),
        backward_(trace->strings.Intern(kBackwardLeaf)),
        backward_unlinked_(trace->strings.Intern(kBackwardUnlinkedLeaf)) {
    for (const auto& [tid, ranges] : process.ranges) threads_.emplace(tid, NestedRanges(ranges));
    for (const TorchOp* op : process.sequenced_ops) {
      forward_by_sequence_[{op->tid, op->sequence}].push_back(op->start_ns);
    }
    for (auto& [key, starts] : forward_by_sequence_) std::sort(starts.begin(), starts.end());
    for (const TorchFlowPoint* finish : process.flow_finishes) {
      finishes_[finish->tid].push_back(finish);
    }
    for (auto& [tid, finishes] : finishes_) {
      std::stable_sort(
          finishes.begin(), finishes.end(),
          [](const TorchFlowPoint* a, const TorchFlowPoint* b) { return a->ts_ns < b->ts_ns; });
    }
  }

  // Appends the ranges of every backward op to `out`.
  void Build(std::vector<ImportedRange>* out) {
    std::vector<const TorchOp*> ops = process_.backward_ops;
    std::stable_sort(ops.begin(), ops.end(), [](const TorchOp* a, const TorchOp* b) {
      if (a->tid != b->tid) return a->tid < b->tid;
      if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
      return a->end_ns > b->end_ns;
    });
    std::vector<const TorchOp*> open;  // the ops of this thread that enclose the current one
    for (const TorchOp* op : ops) {
      while (!open.empty() &&
             (open.back()->tid != op->tid || open.back()->end_ns <= op->start_ns)) {
        open.pop_back();
      }
      AddChain(*op, open.empty() ? nullptr : open.back(), out);
      open.push_back(op);
    }
  }

 private:
  // Where the forward op that created `op` started: (thread, time). `enclosing`, the backward
  // op `op` runs inside on its thread (a reentrant checkpoint's), made `op`'s graph on that
  // thread while it ran: a number is looked up there; a top-level op's on the main thread.
  std::optional<std::pair<uint32_t, uint64_t>> ForwardOf(const TorchOp& op,
                                                         const TorchOp* enclosing) {
    auto finishes = finishes_.find(op.tid);
    if (finishes != finishes_.end()) {
      auto first = std::lower_bound(
          finishes->second.begin(), finishes->second.end(), op.start_ns,
          [](const TorchFlowPoint* point, uint64_t time) { return point->ts_ns < time; });
      for (auto it = first; it != finishes->second.end() && (*it)->ts_ns <= op.end_ns; ++it) {
        auto start = flow_starts_.find(uint64_t{op.pid} << 32 | (*it)->id);
        if (start == flow_starts_.end()) continue;
        ++counts_->linked_by_flow;
        return std::make_pair(start->second->tid, start->second->ts_ns);
      }
    }
    if (op.sequence >= 0) {
      // Sequence numbers count per thread (autograd's are thread-local).
      const uint32_t tid = enclosing ? op.tid : main_tid_;
      auto starts = forward_by_sequence_.find({tid, op.sequence});
      if (starts != forward_by_sequence_.end()) {
        auto after = std::upper_bound(starts->second.begin(), starts->second.end(), op.start_ns);
        if (after != starts->second.begin() &&
            (!enclosing || *(after - 1) >= enclosing->start_ns)) {
          ++counts_->linked_by_sequence;
          return std::make_pair(tid, *(after - 1));
        }
      }
    }
    ++counts_->unlinked;
    return std::nullopt;
  }

  // The ranges of backward op `op`, nested in `enclosing` (null: a top-level op), whose chain
  // holds the main thread's context already.
  void AddChain(const TorchOp& op, const TorchOp* enclosing, std::vector<ImportedRange>* out) {
    ++counts_->backward_ops;
    const auto add = [&](uint32_t name, RangeOrigin origin) {
      out->push_back({op.start_ns, op.end_ns, op.pid, op.tid, name, origin});
    };
    const auto forward = ForwardOf(op, enclosing);
    if (!forward) {
      // The main thread's context up to its first module (the step, `## backward ##`).
      if (op.tid != main_tid_ && !enclosing) {
        const auto context = OpenAt(main_tid_, op.start_ns);
        for (auto it = context.begin(); it != FirstModule(context.begin(), context.end()); ++it) {
          add((*it)->name, RangeOrigin::kModelContext);
        }
      }
      return add(backward_unlinked_, RangeOrigin::kModel);
    }
    // The forward op's path: what is still open when the backward op starts (the step both
    // belong to), then its modules, the first to the innermost (annotations between them too,
    // the ops below them not). A range still open on the backward op's own thread is on its
    // stack already.
    const auto path = OpenAt(forward->first, forward->second);
    const auto first = FirstModule(path.begin(), path.end());
    const auto last = FirstModule(path.rbegin(), path.rend()).base();
    for (auto it = path.begin(); it != path.end(); ++it) {
      const bool module_path = it >= first && it < last;
      const bool still_open = (*it)->end_ns > op.start_ns;
      if (module_path || (still_open && forward->first != op.tid && !enclosing)) {
        add((*it)->name, RangeOrigin::kModelContext);
      }
    }
    add(backward_, RangeOrigin::kModel);
  }

  std::vector<const NestedRanges::Entry*> OpenAt(uint32_t tid, uint64_t t) const {
    auto thread = threads_.find(tid);
    if (thread == threads_.end()) return {};
    return thread->second.OpenAt(t);
  }

  // The first range in [begin, end) that is a module, else end.
  template <typename Iterator>
  Iterator FirstModule(Iterator begin, Iterator end) const {
    return std::find_if(begin, end, [this](const NestedRanges::Entry* entry) {
      return strings_.Text(entry->name).starts_with(kModuleRangePrefix);
    });
  }

  const ProcessEvents& process_;
  const std::unordered_map<uint64_t, const TorchFlowPoint*>& flow_starts_;
  PyTorchCounts* counts_;
  const StringTable& strings_;
  const uint32_t main_tid_;
  const uint32_t backward_;
  const uint32_t backward_unlinked_;
  std::map<uint32_t, NestedRanges> threads_;  // the file's ranges, by tid
  // Sequenced op starts by (thread, sequence number).
  std::map<std::pair<uint32_t, int64_t>, std::vector<uint64_t>> forward_by_sequence_;
  std::map<uint32_t, std::vector<const TorchFlowPoint*>> finishes_;  // by tid, by time
};

}  // namespace

void ApplyPyTorchModel(const TorchEvents& events, ImportedTrace* trace) {
  PyTorchCounts& counts = trace->pytorch.emplace();
  counts.recompute_frames = events.recompute_frames;
  std::map<uint32_t, ProcessEvents> processes;
  for (const ImportedRange& range : trace->ranges) {
    const std::string_view name = trace->strings.Text(range.name);
    ProcessEvents& process = processes[range.pid];
    process.ranges[range.tid].push_back(&range);
    if (name.starts_with(kModuleRangePrefix)) {
      ++counts.module_ranges;
      ++process.modules[range.tid];
    } else if (name.starts_with(kStepPrefix)) {
      ++process.step_ranges[range.tid];
    }
  }
  for (const TorchOp& op : events.backward_ops) processes[op.pid].backward_ops.push_back(&op);
  for (const TorchOp& op : events.sequenced_ops) processes[op.pid].sequenced_ops.push_back(&op);
  for (const TorchFlowPoint& point : events.flow_finishes) {
    processes[point.pid].flow_finishes.push_back(&point);
    ++processes[point.pid].flow_points;
  }
  std::unordered_map<uint64_t, const TorchFlowPoint*> flow_starts;  // by (pid, id)
  for (const TorchFlowPoint& point : events.flow_starts) {
    flow_starts.try_emplace(uint64_t{point.pid} << 32 | point.id, &point);
    ++processes[point.pid].flow_points;
  }
  std::vector<ImportedRange> added;
  for (const auto& [pid, process] : processes) {
    if (process.modules.empty()) {
      // Flows link backward ops to modules; without modules they are not used.
      for (uint64_t i = 0; i < process.flow_points; ++i) trace->CountUnused("fwdbwd");
      continue;
    }
    ProcessModel(process, flow_starts, trace, &counts).Build(&added);
  }
  trace->ranges.insert(trace->ranges.end(), added.begin(), added.end());
}

}  // namespace gpuattr::collector
