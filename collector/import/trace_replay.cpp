#include "import/trace_replay.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "wire/codec.h"
#include "wire/protocol.h"

namespace gpuattr::collector {
namespace {

uint64_t Key(uint32_t pid, uint32_t correlation) { return uint64_t{pid} << 32 | correlation; }

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool NamedLikeLaunch(std::string_view name) {
  return Contains(name, "Launch") || Contains(name, "Memcpy") || Contains(name, "Memset");
}

wire::ApiKind KindOf(DeviceWork work) {
  switch (work) {
    case DeviceWork::kKernel:
      return wire::ApiKind::kKernel;
    case DeviceWork::kMemcpy:
      return wire::ApiKind::kMemcpy;
    case DeviceWork::kMemset:
      return wire::ApiKind::kMemset;
  }
  return wire::ApiKind::kKernel;
}

wire::ApiKind KindFromName(std::string_view name) {
  if (Contains(name, "Graph")) return wire::ApiKind::kGraph;
  if (Contains(name, "Memcpy")) return wire::ApiKind::kMemcpy;
  if (Contains(name, "Memset")) return wire::ApiKind::kMemset;
  return wire::ApiKind::kKernel;
}

// Packs records into datagrams and hands each to the ProcessTrace, as the ingest loop would.
class Sender {
 public:
  explicit Sender(ProcessTrace* trace)
      : trace_(trace),
        buffer_(wire::kMaxMessageBytes),
        writer_(buffer_.data(), wire::kMaxMessageBytes) {}

  template <typename Body>
  void Append(const Body& body) {
    if (!writer_.Append(body)) {
      Flush();
      writer_.Append(body);
    }
  }
  void AppendRange(wire::RecordType type, const wire::RangeEvent& body) {
    if (!writer_.AppendRange(type, body)) {
      Flush();
      writer_.AppendRange(type, body);
    }
  }
  void AppendString(uint32_t id, std::string_view text) {
    if (!writer_.AppendString(id, text)) {
      Flush();
      writer_.AppendString(id, text);
    }
  }
  void Flush() {
    if (writer_.empty()) return;
    const uint32_t size = writer_.Finish(sequence_++);
    Status status = trace_->ConsumeMessage(buffer_.data(), size);
    if (!status.ok() && status_.ok()) status_ = std::move(status);
    writer_.Reset();
  }
  const Status& status() const { return status_; }

 private:
  ProcessTrace* trace_;
  std::vector<uint8_t> buffer_;
  wire::MessageWriter writer_;
  uint64_t sequence_ = 0;
  Status status_;
};

// A push or pop of the reconstructed per-thread stack.
struct StackEvent {
  uint64_t time_ns;
  uint32_t tid;
  uint32_t node;
  bool push;
};

enum class ItemClass : uint8_t {
  kRange = 0,  // pops and pushes first: a range ending at t does not enclose a launch at t
  kSpanStart,
  kApiEnter,
  kActivity,
  kApiExit,
  kSpanEnd,
};

struct Item {
  uint64_t time_ns;
  ItemClass item_class;
  uint32_t index;
};

// The indices of one process's records in the ImportedTrace.
struct ProcessParts {
  std::vector<uint32_t> ranges;
  std::vector<uint32_t> spans;
  std::vector<uint32_t> launches;
  std::vector<uint32_t> activities;
};

class ProcessReplay {
 public:
  ProcessReplay(const ImportedTrace& trace, uint32_t pid, const ProcessParts& parts,
                const std::unordered_map<uint64_t, std::pair<uint32_t, DeviceWork>>& work,
                ReplayStats* stats)
      : trace_(trace), pid_(pid), parts_(parts), work_(work), stats_(stats) {}

  Status Run(ProcessTrace* out) {
    BuildStacks();
    std::vector<Item> items = OrderedItems();
    const uint64_t first_ns = items.empty() ? 0 : items.front().time_ns;
    const uint64_t last_ns = items.empty() ? 0 : items.back().time_ns;

    Sender sender(out);
    const uint32_t exe_string = trace_.strings.size() + 1;
    wire::Hello hello = wire::MakeHello(wire::HelloMode::kTraced, pid_);
    hello.rank = trace_.rank;
    hello.monotonic_ns = first_ns;
    hello.realtime_ns = trace_.wall_clock ? trace_.realtime_offset_ns + first_ns : 0;
    hello.exe_string = exe_string;
    sender.Append(hello);
    sender.AppendString(exe_string, trace_.path);
    // A file without device activity did not measure device time: no CuptiState says it did
    // (the import adds the refusal, import_command.h).
    if (!trace_.activities.empty()) sender.Append(wire::CuptiState{0, 0, 0, 0});
    SendStrings(&sender);
    for (const ImportedDevice& device : trace_.devices) {
      sender.Append(wire::Device{device.device, device.name});
    }
    for (uint32_t id = 1; id <= path_nodes_.size(); ++id) {
      const auto& [parent, name] = path_nodes_[id - 1];
      sender.Append(wire::PathNode{id, parent, name, 0});
    }
    for (const Item& item : items) SendItem(item, &sender);
    sender.Append(wire::Goodbye{last_ns, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0});
    sender.Flush();
    out->Finish();
    if (!sender.status().ok()) {
      return InternalError("import replay produced a record the trace refused: " +
                           sender.status().message());
    }
    return Status::Ok();
  }

 private:
  uint32_t InternPath(uint32_t parent, uint32_t name) {
    auto [it, inserted] = path_ids_.try_emplace(Key(parent, name), 0);
    if (inserted) {
      path_nodes_.emplace_back(parent, name);
      it->second = static_cast<uint32_t>(path_nodes_.size());
    }
    return it->second;
  }

  // Per thread: ranges by (start, longer first) merged with launches by start.
  void BuildStacks() {
    std::vector<uint32_t> ranges = parts_.ranges;
    std::sort(ranges.begin(), ranges.end(), [&](uint32_t a, uint32_t b) {
      const ImportedRange& x = trace_.ranges[a];
      const ImportedRange& y = trace_.ranges[b];
      if (x.tid != y.tid) return x.tid < y.tid;
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
      // The PyTorch model's ranges enclose the file's range of the same interval.
      const bool x_model = x.origin != RangeOrigin::kFile;
      if (x_model != (y.origin != RangeOrigin::kFile)) return x_model;
      return a < b;
    });
    std::vector<uint32_t> launch_order(parts_.launches.size());
    for (uint32_t i = 0; i < launch_order.size(); ++i) launch_order[i] = i;
    std::sort(launch_order.begin(), launch_order.end(), [&](uint32_t a, uint32_t b) {
      const ImportedApiCall& x = trace_.api_calls[parts_.launches[a]];
      const ImportedApiCall& y = trace_.api_calls[parts_.launches[b]];
      if (x.tid != y.tid) return x.tid < y.tid;
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      return a < b;
    });
    launch_nodes_.assign(parts_.launches.size(), 0);

    // A context range (RangeOrigin::kModelContext) is on the stack for the path it gives the
    // ranges and launches inside it, but sends no push or pop: the range inside it that does
    // (the model's leaf) carries the whole path, so the trace's stacks and histories answer the
    // same, without a wire record per copied range per backward op.
    struct Open {
      uint64_t end_ns;
      uint32_t node;
      bool sent;
    };
    std::vector<Open> stack;
    uint32_t tid = 0;
    auto pop_until = [&](uint64_t time_ns) {
      while (!stack.empty() && stack.back().end_ns <= time_ns) {
        if (stack.back().sent) {
          stack_events_.push_back({stack.back().end_ns, tid, stack.back().node, false});
        }
        stack.pop_back();
      }
    };
    size_t r = 0;
    size_t l = 0;
    while (r < ranges.size() || l < launch_order.size()) {
      const uint32_t range_tid =
          r < ranges.size() ? trace_.ranges[ranges[r]].tid : std::numeric_limits<uint32_t>::max();
      const uint32_t launch_tid = l < launch_order.size()
                                      ? trace_.api_calls[parts_.launches[launch_order[l]]].tid
                                      : std::numeric_limits<uint32_t>::max();
      const uint32_t next_tid = std::min(range_tid, launch_tid);
      if (next_tid != tid) {
        pop_until(std::numeric_limits<uint64_t>::max());
        tid = next_tid;
      }
      const bool take_range =
          range_tid == tid &&
          (launch_tid != tid || trace_.ranges[ranges[r]].start_ns <=
                                    trace_.api_calls[parts_.launches[launch_order[l]]].start_ns);
      if (take_range) {
        const ImportedRange& range = trace_.ranges[ranges[r++]];
        pop_until(range.start_ns);
        uint64_t end_ns = range.end_ns;
        if (!stack.empty() && end_ns > stack.back().end_ns) {
          end_ns = stack.back().end_ns;
          ++stats_->clipped_ranges;
        }
        const uint32_t node = InternPath(stack.empty() ? 0 : stack.back().node, range.name);
        const bool sent = range.origin != RangeOrigin::kModelContext;
        if (sent) stack_events_.push_back({range.start_ns, tid, node, true});
        stack.push_back({end_ns, node, sent});
      } else {
        const uint32_t position = launch_order[l++];
        pop_until(trace_.api_calls[parts_.launches[position]].start_ns);
        launch_nodes_[position] = stack.empty() ? 0 : stack.back().node;
      }
    }
    pop_until(std::numeric_limits<uint64_t>::max());
  }

  std::vector<Item> OrderedItems() const {
    std::vector<Item> items;
    items.reserve(stack_events_.size() + 2 * parts_.spans.size() + 2 * parts_.launches.size() +
                  parts_.activities.size());
    for (uint32_t i = 0; i < stack_events_.size(); ++i) {
      items.push_back({stack_events_[i].time_ns, ItemClass::kRange, i});
    }
    for (uint32_t i = 0; i < parts_.spans.size(); ++i) {
      const ImportedRange& span = trace_.spans[parts_.spans[i]];
      items.push_back({span.start_ns, ItemClass::kSpanStart, i});
      items.push_back({span.end_ns, ItemClass::kSpanEnd, i});
    }
    for (uint32_t i = 0; i < parts_.launches.size(); ++i) {
      const ImportedApiCall& call = trace_.api_calls[parts_.launches[i]];
      items.push_back({call.start_ns, ItemClass::kApiEnter, i});
      items.push_back({call.end_ns, ItemClass::kApiExit, i});
    }
    for (uint32_t i = 0; i < parts_.activities.size(); ++i) {
      items.push_back({trace_.activities[parts_.activities[i]].start_ns, ItemClass::kActivity, i});
    }
    // Stable: a thread's stack events were generated in time order and must stay so at ties.
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
      return a.item_class < b.item_class;
    });
    return items;
  }

  void SendStrings(Sender* sender) const {
    std::vector<bool> used(size_t{trace_.strings.size()} + 1, false);
    for (const auto& [parent, name] : path_nodes_) used[name] = true;
    for (uint32_t index : parts_.spans) used[trace_.spans[index].name] = true;
    for (uint32_t index : parts_.activities) used[trace_.activities[index].name] = true;
    for (const ImportedDevice& device : trace_.devices) used[device.name] = true;
    for (uint32_t id = 1; id < used.size(); ++id) {
      if (used[id]) sender->AppendString(id, trace_.strings.Text(id));
    }
  }

  void SendItem(const Item& item, Sender* sender) const {
    switch (item.item_class) {
      case ItemClass::kRange: {
        const StackEvent& event = stack_events_[item.index];
        sender->AppendRange(event.push ? wire::RecordType::kRangePush : wire::RecordType::kRangePop,
                            wire::RangeEvent{event.time_ns, event.tid, event.node});
        return;
      }
      case ItemClass::kSpanStart: {
        const ImportedRange& span = trace_.spans[parts_.spans[item.index]];
        sender->Append(wire::RangeStart{span.start_ns, item.index + 1u, span.tid, span.name, 0, 0});
        return;
      }
      case ItemClass::kSpanEnd: {
        const ImportedRange& span = trace_.spans[parts_.spans[item.index]];
        sender->Append(wire::RangeEnd{span.end_ns, item.index + 1u, span.tid, 0});
        return;
      }
      case ItemClass::kApiEnter: {
        const ImportedApiCall& call = trace_.api_calls[parts_.launches[item.index]];
        wire::ApiKind kind = KindFromName(trace_.strings.Text(call.name));
        auto work = work_.find(Key(pid_, call.correlation));
        if (work != work_.end() && kind != wire::ApiKind::kGraph) {
          kind = work->second.first > 1 ? wire::ApiKind::kGraph : KindOf(work->second.second);
        }
        sender->Append(wire::ApiEnter{call.start_ns, call.correlation, call.tid,
                                      launch_nodes_[item.index], call.cbid, call.domain,
                                      static_cast<uint8_t>(kind)});
        return;
      }
      case ItemClass::kApiExit: {
        const ImportedApiCall& call = trace_.api_calls[parts_.launches[item.index]];
        sender->Append(wire::ApiExit{call.end_ns, call.correlation, call.tid});
        return;
      }
      case ItemClass::kActivity:
        SendActivity(trace_.activities[parts_.activities[item.index]], sender);
        return;
    }
  }

  static void SendActivity(const ImportedActivity& activity, Sender* sender) {
    switch (activity.kind) {
      case DeviceWork::kKernel: {
        wire::Kernel kernel{};
        kernel.start_ns = activity.start_ns;
        kernel.end_ns = activity.end_ns;
        kernel.correlation_id = activity.correlation;
        kernel.name_string = activity.name;
        kernel.device = activity.device;
        kernel.stream = activity.stream;
        for (size_t i = 0; i < 3; ++i) {
          kernel.grid[i] = activity.grid[i];
          kernel.block[i] = activity.block[i];
        }
        kernel.shared_memory_bytes = activity.shared_memory_bytes;
        kernel.registers_per_thread = activity.registers_per_thread;
        sender->Append(kernel);
        return;
      }
      case DeviceWork::kMemcpy: {
        wire::Memcpy memcpy{};
        memcpy.start_ns = activity.start_ns;
        memcpy.end_ns = activity.end_ns;
        memcpy.bytes = activity.bytes;
        memcpy.correlation_id = activity.correlation;
        memcpy.device = activity.device;
        memcpy.stream = activity.stream;
        memcpy.src_device = activity.device;
        memcpy.dst_device = activity.device;
        memcpy.copy_kind = activity.copy_kind;
        memcpy.src_kind = activity.src_kind;
        memcpy.dst_kind = activity.dst_kind;
        sender->Append(memcpy);
        return;
      }
      case DeviceWork::kMemset: {
        wire::Memset memset{};
        memset.start_ns = activity.start_ns;
        memset.end_ns = activity.end_ns;
        memset.bytes = activity.bytes;
        memset.correlation_id = activity.correlation;
        memset.device = activity.device;
        memset.stream = activity.stream;
        memset.value = activity.memset_value;
        sender->Append(memset);
        return;
      }
    }
  }

  const ImportedTrace& trace_;
  uint32_t pid_;
  const ProcessParts& parts_;
  const std::unordered_map<uint64_t, std::pair<uint32_t, DeviceWork>>& work_;
  ReplayStats* stats_;
  std::vector<std::pair<uint32_t, uint32_t>> path_nodes_;  // id - 1 -> (parent, name)
  std::unordered_map<uint64_t, uint32_t> path_ids_;
  std::vector<StackEvent> stack_events_;
  std::vector<uint32_t> launch_nodes_;  // per parts_.launches entry
};

}  // namespace

StatusOr<std::vector<std::unique_ptr<ProcessTrace>>> ReplayTrace(const ImportedTrace& trace,
                                                                 const AnalysisOptions& options,
                                                                 ReplayStats* stats) {
  AnalysisOptions whole_trace = options;
  whole_trace.reorder_window_ns = AnalysisOptions::kWholeTraceWindow;
  // The first API call of each (process, correlation id), and the process of each id.
  std::unordered_map<uint64_t, uint32_t> first_call;
  std::unordered_map<uint32_t, uint32_t> pid_of_correlation;
  std::map<uint32_t, uint64_t> calls_per_pid;
  first_call.reserve(trace.api_calls.size());
  pid_of_correlation.reserve(trace.api_calls.size());
  for (uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ImportedApiCall& call = trace.api_calls[i];
    ++calls_per_pid[call.pid];
    if (call.correlation == 0) continue;
    pid_of_correlation.try_emplace(call.correlation, call.pid);
    auto [it, inserted] = first_call.try_emplace(Key(call.pid, call.correlation), i);
    if (!inserted && call.start_ns < trace.api_calls[it->second].start_ns) it->second = i;
  }
  uint32_t default_pid = 0;
  uint64_t most_calls = 0;
  for (const auto& [pid, count] : calls_per_pid) {
    if (count > most_calls) {
      most_calls = count;
      default_pid = pid;
    }
  }
  if (calls_per_pid.empty() && !trace.ranges.empty()) default_pid = trace.ranges.front().pid;

  std::map<uint32_t, ProcessParts> processes;
  std::unordered_map<uint64_t, std::pair<uint32_t, DeviceWork>> work;  // key -> (count, kind)
  work.reserve(trace.activities.size());
  for (uint32_t i = 0; i < trace.activities.size(); ++i) {
    const ImportedActivity& activity = trace.activities[i];
    uint32_t pid = activity.pid;
    if (pid == 0) {
      auto known = pid_of_correlation.find(activity.correlation);
      pid = activity.correlation != 0 && known != pid_of_correlation.end() ? known->second
                                                                           : default_pid;
    }
    processes[pid].activities.push_back(i);
    if (activity.correlation != 0) {
      auto [it, inserted] =
          work.try_emplace(Key(pid, activity.correlation), std::make_pair(0u, activity.kind));
      ++it->second.first;
    }
  }
  for (uint32_t i = 0; i < trace.api_calls.size(); ++i) {
    const ImportedApiCall& call = trace.api_calls[i];
    if (call.correlation == 0) continue;
    if (first_call.at(Key(call.pid, call.correlation)) != i) continue;
    if (work.count(Key(call.pid, call.correlation)) == 0 &&
        !NamedLikeLaunch(trace.strings.Text(call.name))) {
      continue;
    }
    processes[call.pid].launches.push_back(i);
  }
  for (uint32_t i = 0; i < trace.ranges.size(); ++i)
    processes[trace.ranges[i].pid].ranges.push_back(i);
  for (uint32_t i = 0; i < trace.spans.size(); ++i)
    processes[trace.spans[i].pid].spans.push_back(i);

  std::vector<std::unique_ptr<ProcessTrace>> traces;
  for (const auto& [pid, parts] : processes) {
    auto process = std::make_unique<ProcessTrace>(whole_trace);
    ProcessReplay replay(trace, pid, parts, work, stats);
    GPUATTR_RETURN_IF_ERROR(replay.Run(process.get()));
    stats->launches += parts.launches.size();
    stats->activities += parts.activities.size();
    ++stats->processes;
    traces.push_back(std::move(process));
  }
  return traces;
}

}  // namespace gpuattr::collector
