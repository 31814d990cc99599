#include "analysis/process_trace.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/activity_folder.h"
#include "analysis/kernel_family.h"
#include "analysis/phase.h"
#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"
#include "wire/codec.h"

namespace gpuattr::collector {

namespace {

// The reorder window: activities released in (key, arrival) order, the key being the start (for
// incomplete ones the latest timestamp at arrival, so they too wait for their launch). Activities
// arrive nearly in key order, so a calendar queue beats a heap: each lands at the end of the
// bucket of its key's ~1 ms slot, and a bucket is sorted once, when it is released, while a
// binary heap of the ~400,000 activities a 2 s window holds misses the cache at every level of
// every sift (docs/benchmarks.md §Collector ingest). Buckets are kept in a map, so keys from a
// hostile stream cost a sparse bucket each, never an array spanning them.
class ReorderWindow {
 public:
  // Copies (a deferred trace analyses a copy) must not share the push cache, which points into
  // the source's map.
  ReorderWindow() = default;
  ReorderWindow(const ReorderWindow& other) { *this = other; }
  ReorderWindow& operator=(const ReorderWindow& other) {
    buckets_ = other.buckets_;
    spare_items_.clear();
    size_ = other.size_;
    sequence_ = other.sequence_;
    last_bucket_ = nullptr;
    return *this;
  }

  void Push(const ActivityRecord& activity, uint64_t key) {
    const uint64_t slot = key >> kSlotShift;
    if (last_bucket_ == nullptr || last_slot_ != slot) {
      auto [it, created] = buckets_.try_emplace(slot);
      if (created && !spare_items_.empty()) {
        it->second.items = std::move(spare_items_.back());
        spare_items_.pop_back();
      }
      last_bucket_ = &it->second;
      last_slot_ = slot;
    }
    Bucket& bucket = *last_bucket_;
    bucket.items.push_back({activity, key, sequence_++});
    const size_t n = bucket.items.size();
    if (n - bucket.head >= 2 && bucket.items[n - 1] < bucket.items[n - 2]) bucket.sorted = false;
    ++size_;
  }

  size_t size() const { return size_; }

  // Hands every activity with key < watermark to `release`, in (key, arrival) order.
  template <typename Release>
  void ReleaseBelow(uint64_t watermark, Release&& release) {
    while (!buckets_.empty()) {
      auto first = buckets_.begin();
      Bucket& bucket = first->second;
      if (!bucket.sorted) {
        std::sort(bucket.items.begin() + static_cast<std::ptrdiff_t>(bucket.head),
                  bucket.items.end());
        bucket.sorted = true;
      }
      while (bucket.head < bucket.items.size() && bucket.items[bucket.head].key < watermark) {
        --size_;
        release(bucket.items[bucket.head++].activity);
      }
      if (bucket.head < bucket.items.size()) return;  // the rest is at or above the watermark
      if (last_bucket_ == &bucket) last_bucket_ = nullptr;
      if (spare_items_.size() < kSpareBuckets) {
        bucket.items.clear();  // keeps its capacity for the next bucket
        spare_items_.push_back(std::move(bucket.items));
      }
      buckets_.erase(first);
    }
  }

 private:
  static constexpr int kSlotShift = 20;  // 2^20 ns, about 1 ms of keys per bucket
  // Released buckets' storage, reused: a window's worth of allocating, growing and freeing
  // bucket vectors would cost more than the sorting. A bucket's capacity is its largest fill.
  static constexpr size_t kSpareBuckets = 64;
  struct Pending {
    ActivityRecord activity;
    uint64_t key = 0;
    uint64_t sequence = 0;
    bool operator<(const Pending& other) const {
      return key != other.key ? key < other.key : sequence < other.sequence;
    }
  };
  struct Bucket {
    std::vector<Pending> items;
    size_t head = 0;     // items before it were released
    bool sorted = true;  // items from head on are in order
  };
  std::map<uint64_t, Bucket> buckets_;  // by key >> kSlotShift
  size_t size_ = 0;
  uint64_t sequence_ = 0;
  Bucket* last_bucket_ = nullptr;  // the bucket of the latest push (map nodes do not move)
  uint64_t last_slot_ = 0;
  std::vector<std::vector<Pending>> spare_items_;
};

}  // namespace

struct ProcessTrace::State {
  TraceData data;
  AnalysisOptions options;
  bool streaming = false;
  std::unique_ptr<ActivityFolder> folder;   // created with the options
  std::optional<ProcessAnalysis> analysis;  // streaming: the fold's result, once ended
  ReorderWindow window;
  std::deque<std::pair<uint64_t, uint32_t>> launch_order;  // (enter_ns, correlation id)
  uint64_t released_start = 0;  // start of the last complete activity released
  bool released_any = false;

  void Release(const ActivityRecord& activity) {
    const LaunchRecord* launch = nullptr;
    auto it = activity.correlation_id != 0 ? data.launches.find(activity.correlation_id)
                                           : data.launches.end();
    if (it != data.launches.end()) {
      it->second.matched = true;
      launch = &it->second;
    } else if (OutsideWindow(activity.correlation_id)) {
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
      folder->ForgetLaunch(it->first, it->second);
      data.launches.erase(it);
    }
  }

  // docs/attach.md §What a window's report covers: in a window stream, an activity whose launch
  // was not recorded and whose correlation id lies below the first or above the last launch
  // recorded so far ran for a launch before or after the window. Decided at release with the
  // launches known then: an activity released before any launch arrived is outside. Id 0 names
  // no launch at all and stays an orphan.
  bool OutsideWindow(uint32_t correlation_id) const {
    if (!data.window_stream() || correlation_id == 0) return false;
    return data.first_launch_correlation == 0 || correlation_id < data.first_launch_correlation ||
           correlation_id > data.last_launch_correlation;
  }

  void DropLaunch(std::unordered_map<uint32_t, LaunchRecord>::iterator it) {
    if (!it->second.matched && !data.captured_correlations.contains(it->first)) {
      ++data.unmatched_launches;
    }
    data.captured_correlations.erase(it->first);
    folder->ForgetLaunch(it->first, it->second);
    data.launches.erase(it);
  }

  // Releases every activity starting below `watermark`, then expires launches it passed by
  // the window.
  void ReleaseBelow(uint64_t watermark) {
    window.ReleaseBelow(watermark, [this](const ActivityRecord& activity) { Release(activity); });
    while (!launch_order.empty() &&
           (watermark == std::numeric_limits<uint64_t>::max() ||
            launch_order.front().first + options.reorder_window_ns < watermark)) {
      const auto [enter, correlation] = launch_order.front();
      launch_order.pop_front();
      auto it = data.launches.find(correlation);
      if (it == data.launches.end() || it->second.enter_ns != enter) continue;
      if (watermark != std::numeric_limits<uint64_t>::max() && !it->second.matched) {
        ++data.expired_launches;
      }
      DropLaunch(it);
    }
  }

  void Advance() {
    if (!streaming || data.last_timestamp_ns < options.reorder_window_ns) return;
    ReleaseBelow(data.last_timestamp_ns - options.reorder_window_ns);
    DropFoldedHostRecords();
  }

  // Streaming: closed ranges and pushes the fold has consumed are not read again.
  void DropFoldedHostRecords() {
    for (const uint64_t folded = folder->folded_host_ranges(); data.host_ranges_dropped < folded;
         ++data.host_ranges_dropped) {
      data.host_ranges.pop_front();
    }
    for (const uint64_t folded = folder->folded_pushes(); data.pushes_dropped < folded;
         ++data.pushes_dropped) {
      data.pushes.pop_front();
    }
  }
};

namespace {

// Names travel as raw bytes; the report is JSON, which must be valid UTF-8. Invalid sequences
// become U+FFFD here so that nothing downstream (nlohmann's dump throws on them) can fail.
std::string SanitizeUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    size_t length = 0;
    uint32_t min_code = 0;
    if (c < 0x80) {
      length = 1;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2;
      min_code = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3;
      min_code = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4;
      min_code = 0x10000;
    }
    bool valid = length > 0 && i + length <= in.size();
    uint32_t code = length == 1 ? c : (c & (0x7F >> length));
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(in[i + k]);
      if ((next & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (next & 0x3F);
    }
    if (valid && length > 1) {
      valid = code >= min_code && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    }
    if (valid && c != 0) {
      out.append(in.substr(i, length));
      i += length;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

// Device activity times (start, end) only advance last_timestamp_ns; every other timestamp is
// the host's and advances both.
void SeeActivityTimestamp(TraceData& data, uint64_t ns) {
  data.last_timestamp_ns = std::max(data.last_timestamp_ns, ns);
}

void SeeTimestamp(TraceData& data, uint64_t ns) {
  SeeActivityTimestamp(data, ns);
  data.last_host_timestamp_ns = std::max(data.last_host_timestamp_ns, ns);
}

// A push flagged kRangeFlagOpenBeforeWindow joins the stack and the history (launches under it
// attribute, the main thread's stack is known) but is no instance: not in `pushes` (no step
// row) and its pop adds no host range.
void PushRange(TraceData& data, const wire::RangeEvent& event, uint16_t flags) {
  const bool instance = (flags & wire::kRangeFlagOpenBeforeWindow) == 0;
  auto& stack = data.open_stacks[event.tid];
  auto& history = data.history[event.tid];
  const int32_t parent = stack.empty() ? -1 : static_cast<int32_t>(stack.back().history);
  const auto index = static_cast<uint32_t>(history.size());
  history.push_back({event.timestamp_ns, HistoryEntry::kOpenEnd, event.node, parent});
  if (instance) data.pushes.emplace_back(event.tid, index);
  stack.push_back({event.timestamp_ns, event.node, index, instance});
  if (!data.main_tid || event.timestamp_ns < data.main_tid_first_push_ns) {
    data.main_tid = event.tid;
    data.main_tid_first_push_ns = event.timestamp_ns;
  }
}

// Closes the innermost open range of `event.node` on the thread. Ranges above it (pushed later,
// never popped) close with it: NVTX stacks cannot outlive their parent.
void PopRange(TraceData& data, const wire::RangeEvent& event) {
  auto stack_it = data.open_stacks.find(event.tid);
  if (stack_it == data.open_stacks.end() || stack_it->second.empty()) {
    ++data.unmatched_pops;
    return;
  }
  auto& stack = stack_it->second;
  auto match = std::find_if(stack.rbegin(), stack.rend(),
                            [&](const OpenHostRange& open) { return open.node == event.node; });
  if (match == stack.rend()) {
    ++data.unmatched_pops;
    return;
  }
  const size_t keep = static_cast<size_t>(stack.rend() - match) - 1;
  data.implicitly_closed += stack.size() - keep - 1;
  for (size_t i = stack.size(); i-- > keep;) {
    const uint64_t end = std::max(event.timestamp_ns, stack[i].start_ns);
    if (stack[i].instance) {
      data.host_ranges.push_back({stack[i].start_ns, end, event.tid, stack[i].node});
    }
    data.history[event.tid][stack[i].history].end_ns = end;
  }
  stack.resize(keep);
}

void AddApiEnter(TraceData& data, const wire::ApiEnter& enter, uint16_t flags,
                 std::deque<std::pair<uint64_t, uint32_t>>* launch_order) {
  if (enter.kind == static_cast<uint8_t>(wire::ApiKind::kCapture)) return;  // no device work
  if (enter.correlation_id == 0) {
    ++data.zero_correlation_launches;
    return;
  }
  const bool nested = (flags & wire::kApiFlagNested) != 0;
  auto [it, inserted] = data.launches.try_emplace(enter.correlation_id);
  if (inserted) {
    ++data.launches_seen;
    launch_order->emplace_back(enter.timestamp_ns, enter.correlation_id);
    if (data.first_launch_correlation == 0 ||
        enter.correlation_id < data.first_launch_correlation) {
      data.first_launch_correlation = enter.correlation_id;
    }
    data.last_launch_correlation = std::max(data.last_launch_correlation, enter.correlation_id);
  }
  // A nested driver call shares its runtime call's correlation id: the outer call is the launch.
  if (!inserted && (nested || !it->second.nested)) return;
  LaunchRecord& launch = it->second;
  launch.enter_ns = enter.timestamp_ns;
  launch.tid = enter.tid;
  launch.node = enter.node;
  launch.cbid = enter.cbid;
  launch.domain = enter.domain;
  launch.kind = enter.kind;
  launch.nested = nested;
}

}  // namespace

namespace {

uint32_t InternShape(TraceData& data, const wire::Kernel& kernel) {
  KernelShape shape;
  std::copy(std::begin(kernel.grid), std::end(kernel.grid), shape.grid.begin());
  std::copy(std::begin(kernel.block), std::end(kernel.block), shape.block.begin());
  shape.shared_memory_bytes = kernel.shared_memory_bytes;
  auto [it, inserted] =
      data.shape_index.try_emplace(shape, static_cast<uint32_t>(data.shapes.size()));
  if (inserted) data.shapes.push_back(shape);
  return it->second;
}

}  // namespace

void ProcessTrace::AddActivity(const ActivityRecord& record) {
  TraceData& data = state_->data;
  SeeActivityTimestamp(data, record.end_ns);
  ++data.activities_seen;
  state_->window.Push(record, record.complete() ? record.start_ns : data.last_timestamp_ns);
}

void ProcessTrace::Apply(const wire::RecordView& record) {
  TraceData& data = state_->data;
  using wire::RecordType;
  switch (record.type) {
    case RecordType::kHello:
      data.hello = record.As<wire::Hello>();
      SeeTimestamp(data, data.hello->monotonic_ns);
      break;
    case RecordType::kString: {
      const auto header = record.As<wire::String>();
      if (header.id != 0) data.strings[header.id] = SanitizeUtf8(record.StringText());
      ++data.definitions;
      break;
    }
    case RecordType::kPathNode: {
      const auto node = record.As<wire::PathNode>();
      if (node.id != 0)
        data.path_nodes[node.id] = {node.parent, node.name_string, node.domain_string};
      ++data.definitions;
      break;
    }
    case RecordType::kThreadName: {
      const auto name = record.As<wire::ThreadName>();
      data.thread_names[name.tid] = name.name_string;
      break;
    }
    case RecordType::kRangePush: {
      const auto event = record.As<wire::RangeEvent>();
      SeeTimestamp(data, event.timestamp_ns);
      PushRange(data, event, record.flags);
      break;
    }
    case RecordType::kRangePop: {
      const auto event = record.As<wire::RangeEvent>();
      SeeTimestamp(data, event.timestamp_ns);
      PopRange(data, event);
      break;
    }
    case RecordType::kRangeStart: {
      const auto start = record.As<wire::RangeStart>();
      SeeTimestamp(data, start.timestamp_ns);
      data.open_spans[start.range_id] = {start.timestamp_ns, 0, start.tid, start.name_string,
                                         start.domain_string};
      break;
    }
    case RecordType::kRangeEnd: {
      const auto end = record.As<wire::RangeEnd>();
      SeeTimestamp(data, end.timestamp_ns);
      auto it = data.open_spans.find(end.range_id);
      if (it == data.open_spans.end()) {
        ++data.unmatched_range_ends;
        break;
      }
      it->second.end_ns = std::max(end.timestamp_ns, it->second.start_ns);
      data.spans.push_back(it->second);
      data.open_spans.erase(it);
      break;
    }
    case RecordType::kMark: {
      const auto mark = record.As<wire::Mark>();
      SeeTimestamp(data, mark.timestamp_ns);
      ++data.marks[{mark.name_string, mark.domain_string}];
      break;
    }
    case RecordType::kApiEnter: {
      const auto enter = record.As<wire::ApiEnter>();
      SeeTimestamp(data, enter.timestamp_ns);
      AddApiEnter(data, enter, record.flags, &state_->launch_order);
      break;
    }
    case RecordType::kApiExit: {
      const auto exit = record.As<wire::ApiExit>();
      SeeTimestamp(data, exit.timestamp_ns);
      auto it = data.launches.find(exit.correlation_id);
      if (it == data.launches.end()) {
        ++data.orphan_api_exits;
      } else {
        it->second.exit_ns = std::max(it->second.exit_ns, exit.timestamp_ns);
      }
      break;
    }
    case RecordType::kKernel: {
      const auto kernel = record.As<wire::Kernel>();
      AddActivity({kernel.start_ns, kernel.end_ns, kernel.graph_node_id, kernel.correlation_id,
                   kernel.name_string, kernel.device, kernel.stream, InternShape(data, kernel),
                   ActivityKind::kKernel});
      break;
    }
    case RecordType::kMemcpy: {
      const auto copy = record.As<wire::Memcpy>();
      AddActivity({copy.start_ns, copy.end_ns, copy.graph_node_id, copy.correlation_id, 0,
                   copy.device, copy.stream, 0, ActivityKind::kMemcpy});
      break;
    }
    case RecordType::kMemset: {
      const auto set = record.As<wire::Memset>();
      AddActivity({set.start_ns, set.end_ns, set.graph_node_id, set.correlation_id, 0, set.device,
                   set.stream, 0, ActivityKind::kMemset});
      break;
    }
    case RecordType::kGraphNodeCreated: {
      const auto created = record.As<wire::GraphNodeCreated>();
      SeeTimestamp(data, created.timestamp_ns);
      GraphNodeInfo& info = data.graph_nodes[created.graph_node_id];
      info.created = true;
      info.path_node = created.node;
      info.tid = created.tid;
      if (created.correlation_id != 0) data.captured_correlations.insert(created.correlation_id);
      break;
    }
    case RecordType::kGraphNodeCloned: {
      const auto cloned = record.As<wire::GraphNodeCloned>();
      SeeTimestamp(data, cloned.timestamp_ns);
      if (cloned.graph_node_id != cloned.original_graph_node_id) {
        data.graph_nodes[cloned.graph_node_id].original_node = cloned.original_graph_node_id;
      }
      break;
    }
    case RecordType::kCuptiState:
      data.cupti_state = record.As<wire::CuptiState>();
      break;
    case RecordType::kRefusal:
      data.refusals.push_back(record.As<wire::Refusal>());
      break;
    case RecordType::kDiagnostics:
      data.diagnostics = record.As<wire::Diagnostics>();
      break;
    case RecordType::kDevice: {
      const auto device = record.As<wire::Device>();
      data.device_names[device.device] = device.name_string;
      break;
    }
    case RecordType::kGoodbye:
      data.goodbye = record.As<wire::Goodbye>();
      SeeTimestamp(data, data.goodbye->timestamp_ns);
      break;
    case RecordType::kWindowBegin: {
      const auto begin = record.As<wire::WindowBegin>();
      SeeTimestamp(data, begin.timestamp_ns);
      if (!data.window_begin) data.window_begin = begin;
      break;
    }
    case RecordType::kWindowEnd: {
      const auto end = record.As<wire::WindowEnd>();
      SeeTimestamp(data, end.timestamp_ns);
      if (!data.window_end) data.window_end = end;
      break;
    }
    default:
      ++data.unknown_records;
      break;
  }
}

namespace {

// Protocol checks that need the whole datagram before anything is applied: the first record of
// a connection is a valid Hello of a stream a trace reads (traced from the start, or a capture
// window: an armed registration is the daemon's to handle), and no Hello comes later.
Status CheckProtocol(const TraceData& data, const uint8_t* bytes, uint32_t size) {
  wire::MessageReader reader;
  if (reader.Open(bytes, size) != wire::DecodeError::kNone) {
    return InternalError("a datagram that validated once failed to validate again");
  }
  wire::RecordView record;
  bool first = true;
  while (reader.Next(&record)) {
    if (record.type == wire::RecordType::kHello) {
      if (data.hello || !first) return DataLossError("a Hello record after the first record");
      const auto hello = record.As<wire::Hello>();
      if (std::memcmp(hello.magic, wire::kHelloMagic, sizeof(hello.magic)) != 0) {
        return DataLossError("the Hello record has a bad magic");
      }
      if (hello.protocol_version != wire::kProtocolVersion) {
        return DataLossError("the peer speaks wire protocol version " +
                             std::to_string(hello.protocol_version) + ", this collector " +
                             std::to_string(wire::kProtocolVersion));
      }
      if (hello.mode == static_cast<uint32_t>(wire::HelloMode::kArmed)) {
        return DataLossError("an armed registration (Hello mode armed) is not a trace stream");
      }
      if (hello.mode != static_cast<uint32_t>(wire::HelloMode::kTraced) &&
          hello.mode != static_cast<uint32_t>(wire::HelloMode::kWindow)) {
        return DataLossError("the Hello record has an unknown mode " + std::to_string(hello.mode));
      }
    } else if (first && !data.hello) {
      return DataLossError("the connection's first record is not a Hello");
    }
    first = false;
  }
  if (first && !data.hello) return DataLossError("the connection's first message has no records");
  return Status::Ok();
}

}  // namespace

ProcessTrace::ProcessTrace() : state_(std::make_unique<State>()) {}

ProcessTrace::ProcessTrace(AnalysisOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->streaming = true;
  state_->folder = std::make_unique<ActivityFolder>(state_->data, state_->options);
}
ProcessTrace::~ProcessTrace() = default;

Status ProcessTrace::ConsumeMessage(const uint8_t* data, uint32_t size) {
  TraceData& trace = state_->data;
  if (trace.finished) return FailedPreconditionError("a message after the connection finished");
  wire::MessageReader reader;
  const wire::DecodeError error = reader.Open(data, size);
  if (error != wire::DecodeError::kNone) {
    return DataLossError(std::string("malformed message: ") + wire::DecodeErrorName(error));
  }
  GPUATTR_RETURN_IF_ERROR(CheckProtocol(trace, data, size));

  const uint64_t sequence = reader.header().sequence;
  if (trace.messages > 0 && sequence < trace.next_sequence) {
    ++trace.sequence_regressions;
  } else {
    trace.lost_messages += sequence - trace.next_sequence;
    trace.next_sequence = sequence + 1;
  }
  ++trace.messages;

  wire::RecordView record;
  while (reader.Next(&record)) Apply(record);
  state_->Advance();
  return Status::Ok();
}

void ProcessTrace::Finish() {
  TraceData& data = state_->data;
  if (data.finished) return;
  data.finished = true;
  if (data.window_stream()) {
    // A window ends while ranges are open (the training loop's, a step's): their ends are after
    // the window, so they are not instances and not loss. They stay open in the history.
    data.open_stacks.clear();
    data.open_spans.clear();
    return;
  }
  for (auto& [tid, stack] : data.open_stacks) {
    for (size_t i = stack.size(); i-- > 0;) {
      data.host_ranges.push_back({stack[i].start_ns,
                                  std::max(stack[i].start_ns, data.last_timestamp_ns), tid,
                                  stack[i].node});
      ++data.unclosed_ranges;
    }
    for (size_t i = 0; i < stack.size(); ++i) {
      data.history[tid][stack[i].history].end_ns =
          std::max(stack[i].start_ns, data.last_timestamp_ns);
    }
    stack.clear();
  }
  for (auto& [id, span] : data.open_spans) {
    span.end_ns = std::max(span.start_ns, data.last_timestamp_ns);
    data.spans.push_back(span);
    ++data.unclosed_ranges;
  }
  data.open_spans.clear();
}

bool ProcessTrace::has_hello() const { return state_->data.hello.has_value(); }

uint32_t ProcessTrace::pid() const { return state_->data.hello ? state_->data.hello->pid : 0; }

ProcessAnalysis ProcessTrace::TakeAnalysis(const AnalysisOptions& options) const {
  State& state = *state_;
  if (!state.streaming) {
    // Deferred: analyse a copy, so the trace can be analysed again with other options.
    State copy;
    copy.data = state.data;
    copy.window = state.window;
    copy.launch_order = state.launch_order;
    copy.options = options;
    copy.folder = std::make_unique<ActivityFolder>(copy.data, copy.options);
    copy.ReleaseBelow(std::numeric_limits<uint64_t>::max());
    return copy.folder->Finish();
  }
  // Streaming: the fold ends once; a second report reuses its result.
  if (!state.analysis) {
    state.ReleaseBelow(std::numeric_limits<uint64_t>::max());
    state.analysis = state.folder->Finish();
    // Its per-instance step state is in the analysis now; nothing more can be released.
    if (state.data.finished) state.folder.reset();
  }
  return *state.analysis;
}

size_t ProcessTrace::host_records_held() const {
  return state_->data.host_ranges.size() + state_->data.pushes.size();
}

size_t ProcessTrace::in_flight() const {
  return state_->window.size() + state_->data.launches.size();
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
