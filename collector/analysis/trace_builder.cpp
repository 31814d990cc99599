#include "analysis/trace_builder.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>

namespace gpuattr::collector {
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

}  // namespace

Status HelloStatus(const wire::Hello& hello) {
  switch (wire::CheckHello(hello)) {
    case wire::HelloError::kNone:
      return Status::Ok();
    case wire::HelloError::kBadMagic:
      return DataLossError("the Hello record has a bad magic");
    case wire::HelloError::kVersionMismatch:
      return DataLossError("the peer speaks wire protocol version " +
                           std::to_string(hello.protocol_version) + ", this collector " +
                           std::to_string(wire::kProtocolVersion));
    case wire::HelloError::kUnknownMode:
      return DataLossError("the Hello record has an unknown mode " + std::to_string(hello.mode));
  }
  return InternalError("a Hello check this collector does not know");
}

// Protocol checks that need the whole datagram before anything is applied: the first record of
// a connection is a valid Hello of a stream a trace reads (traced from the start, or a capture
// window: an armed registration is the daemon's to handle), and no Hello comes later.
Status TraceBuilder::CheckProtocol(wire::MessageReader& reader) const {
  wire::RecordView record;
  bool first = true;
  Status status;
  while (status.ok() && reader.Next(&record)) {
    if (record.type == wire::RecordType::kHello) {
      const auto hello = record.As<wire::Hello>();
      if (data_.hello || !first) {
        status = DataLossError("a Hello record after the first record");
      } else if (Status checked = HelloStatus(hello); !checked.ok()) {
        status = std::move(checked);
      } else if (hello.mode == static_cast<uint32_t>(wire::HelloMode::kArmed)) {
        status = DataLossError("an armed registration (Hello mode armed) is not a trace stream");
      }
    } else if (first && !data_.hello) {
      status = DataLossError("the connection's first record is not a Hello");
    }
    first = false;
  }
  if (status.ok() && first && !data_.hello) {
    status = DataLossError("the connection's first message has no records");
  }
  reader.Rewind();
  return status;
}

Status TraceBuilder::Consume(wire::MessageReader& reader) {
  GPUATTR_RETURN_IF_ERROR(CheckProtocol(reader));
  const uint64_t sequence = reader.header().sequence;
  if (data_.messages > 0 && sequence < data_.next_sequence) {
    ++data_.sequence_regressions;
  } else {
    data_.lost_messages += sequence - data_.next_sequence;
    data_.next_sequence = sequence + 1;
  }
  ++data_.messages;
  wire::RecordView record;
  while (reader.Next(&record)) Apply(record);
  return Status::Ok();
}

// Device activity times (start, end) only advance last_timestamp_ns; every other timestamp is
// the host's and advances both.
void TraceBuilder::SeeActivityTimestamp(uint64_t ns) {
  data_.last_timestamp_ns = std::max(data_.last_timestamp_ns, ns);
}

void TraceBuilder::SeeTimestamp(uint64_t ns) {
  SeeActivityTimestamp(ns);
  data_.last_host_timestamp_ns = std::max(data_.last_host_timestamp_ns, ns);
}

void TraceBuilder::Apply(const wire::RecordView& record) {
  using wire::RecordType;
  switch (record.type) {
    case RecordType::kString:
    case RecordType::kPathNode:
    case RecordType::kThreadName:
    case RecordType::kDevice:
      ApplyDefinition(record);
      break;
    case RecordType::kRangePush:
    case RecordType::kRangePop:
    case RecordType::kRangeStart:
    case RecordType::kRangeEnd:
    case RecordType::kMark:
    case RecordType::kValueMark:
    case RecordType::kApiEnter:
    case RecordType::kApiExit:
    case RecordType::kGraphNodeCreated:
    case RecordType::kGraphNodeCloned:
      ApplyHostEvent(record);
      break;
    case RecordType::kKernel:
    case RecordType::kMemcpy:
    case RecordType::kMemset:
      ApplyDeviceWork(record);
      break;
    case RecordType::kHello:
    case RecordType::kCuptiState:
    case RecordType::kRefusal:
    case RecordType::kDiagnostics:
    case RecordType::kGoodbye:
    case RecordType::kWindowBegin:
    case RecordType::kWindowEnd:
      ApplyState(record);
      break;
    default:
      ++data_.unknown_records;
      break;
  }
}

void TraceBuilder::ApplyDefinition(const wire::RecordView& record) {
  switch (record.type) {
    case wire::RecordType::kString: {
      const auto header = record.As<wire::String>();
      if (header.id != 0) {
        std::string text = SanitizeUtf8(record.StringText());
        // The wire carries at most kMaxStringBytes of a name: one that long was (very likely)
        // cut, and says so rather than pass for the whole name.
        if (record.StringText().size() == wire::kMaxStringBytes) text += kCutStringMark;
        auto [known, added] = data_.strings.try_emplace(header.id);
        if (!added && known->second != text) ++data_.redefinitions;
        known->second = std::move(text);
      }
      ++data_.definitions;
      break;
    }
    case wire::RecordType::kPathNode: {
      const auto node = record.As<wire::PathNode>();
      if (node.id != 0) {
        const PathNodeDef def{node.parent, node.name_string, node.domain_string};
        auto [known, added] = data_.path_nodes.try_emplace(node.id, def);
        if (!added && !(known->second == def)) {
          ++data_.redefinitions;
          known->second = def;
        }
      }
      ++data_.definitions;
      break;
    }
    case wire::RecordType::kThreadName: {
      const auto name = record.As<wire::ThreadName>();
      data_.thread_names[name.tid] = name.name_string;
      break;
    }
    case wire::RecordType::kDevice: {
      const auto device = record.As<wire::Device>();
      data_.device_names[device.device] = device.name_string;
      break;
    }
    default:
      break;
  }
}

void TraceBuilder::ApplyHostEvent(const wire::RecordView& record) {
  switch (record.type) {
    case wire::RecordType::kRangePush: {
      const auto event = record.As<wire::RangeEvent>();
      SeeTimestamp(event.timestamp_ns);
      PushRange(event, record.flags);
      break;
    }
    case wire::RecordType::kRangePop: {
      const auto event = record.As<wire::RangeEvent>();
      SeeTimestamp(event.timestamp_ns);
      PopRange(event);
      break;
    }
    case wire::RecordType::kRangeStart: {
      const auto start = record.As<wire::RangeStart>();
      SeeTimestamp(start.timestamp_ns);
      data_.open_spans[start.range_id] = {start.timestamp_ns, 0, start.tid, start.name_string,
                                          start.domain_string};
      break;
    }
    case wire::RecordType::kRangeEnd: {
      const auto end = record.As<wire::RangeEnd>();
      SeeTimestamp(end.timestamp_ns);
      auto it = data_.open_spans.find(end.range_id);
      if (it == data_.open_spans.end()) {
        ++data_.unmatched_range_ends;
        break;
      }
      it->second.end_ns = std::max(end.timestamp_ns, it->second.start_ns);
      data_.spans.push_back(it->second);
      data_.open_spans.erase(it);
      break;
    }
    case wire::RecordType::kMark: {
      const auto mark = record.As<wire::Mark>();
      SeeTimestamp(mark.timestamp_ns);
      ++data_.marks[{mark.name_string, mark.domain_string}];
      break;
    }
    case wire::RecordType::kValueMark: {
      const auto mark = record.As<wire::ValueMark>();
      SeeTimestamp(mark.timestamp_ns);
      data_.value_marks.push_back(mark);
      break;
    }
    case wire::RecordType::kApiEnter: {
      const auto enter = record.As<wire::ApiEnter>();
      SeeTimestamp(enter.timestamp_ns);
      if (enter.correlation_id != 0 && (data_.min_launch_correlation == 0 ||
                                        enter.correlation_id < data_.min_launch_correlation)) {
        data_.min_launch_correlation = enter.correlation_id;
      }
      launches_.Enter(enter);
      break;
    }
    case wire::RecordType::kApiExit: {
      const auto exit = record.As<wire::ApiExit>();
      SeeTimestamp(exit.timestamp_ns);
      launches_.Exit(exit);
      break;
    }
    case wire::RecordType::kGraphNodeCreated: {
      const auto created = record.As<wire::GraphNodeCreated>();
      SeeTimestamp(created.timestamp_ns);
      GraphNodeInfo& info = data_.graph_nodes[created.graph_node_id];
      info.created = true;
      info.path_node = created.node;
      info.tid = created.tid;
      if (created.correlation_id != 0) launches_.MarkCaptured(created.correlation_id);
      break;
    }
    case wire::RecordType::kGraphNodeCloned: {
      const auto cloned = record.As<wire::GraphNodeCloned>();
      SeeTimestamp(cloned.timestamp_ns);
      if (cloned.graph_node_id != cloned.original_graph_node_id) {
        data_.graph_nodes[cloned.graph_node_id].original_node = cloned.original_graph_node_id;
      }
      break;
    }
    default:
      break;
  }
}

void TraceBuilder::ApplyDeviceWork(const wire::RecordView& record) {
  switch (record.type) {
    case wire::RecordType::kKernel: {
      const auto kernel = record.As<wire::Kernel>();
      AddActivity({kernel.start_ns, kernel.end_ns, kernel.graph_node_id, kernel.correlation_id,
                   kernel.name_string, kernel.device, kernel.stream, InternShape(kernel),
                   ActivityKind::kKernel});
      break;
    }
    case wire::RecordType::kMemcpy: {
      const auto copy = record.As<wire::Memcpy>();
      const uint32_t slot =
          data_.copies.Take({copy.bytes, copy.copy_kind, copy.src_kind, copy.dst_kind});
      AddActivity({copy.start_ns, copy.end_ns, copy.graph_node_id, copy.correlation_id, 0,
                   copy.device, copy.stream, slot, ActivityKind::kMemcpy});
      break;
    }
    case wire::RecordType::kMemset: {
      const auto set = record.As<wire::Memset>();
      AddActivity({set.start_ns, set.end_ns, set.graph_node_id, set.correlation_id, 0, set.device,
                   set.stream, 0, ActivityKind::kMemset});
      break;
    }
    default:
      break;
  }
}

void TraceBuilder::ApplyState(const wire::RecordView& record) {
  switch (record.type) {
    case wire::RecordType::kHello:
      data_.hello = record.As<wire::Hello>();
      SeeTimestamp(data_.hello->monotonic_ns);
      break;
    case wire::RecordType::kCuptiState:
      data_.cupti_state = record.As<wire::CuptiState>();
      break;
    case wire::RecordType::kRefusal:
      data_.refusals.push_back(record.As<wire::Refusal>());
      break;
    case wire::RecordType::kDiagnostics:
      data_.diagnostics = record.As<wire::Diagnostics>();
      break;
    case wire::RecordType::kGoodbye:
      data_.goodbye = record.As<wire::Goodbye>();
      SeeTimestamp(data_.goodbye->timestamp_ns);
      break;
    case wire::RecordType::kWindowBegin: {
      const auto begin = record.As<wire::WindowBegin>();
      SeeTimestamp(begin.timestamp_ns);
      if (!data_.window_begin) {
        data_.window_begin = begin;
        data_.window_begin_flags = record.flags;
      }
      break;
    }
    case wire::RecordType::kWindowEnd: {
      const auto end = record.As<wire::WindowEnd>();
      SeeTimestamp(end.timestamp_ns);
      if (!data_.window_end) data_.window_end = end;
      break;
    }
    default:
      break;
  }
}

// A push flagged kRangeFlagOpenBeforeWindow joins the stack and the history (launches under it
// attribute, the main thread's stack is known) but is no instance: not in `pushes` (no step row)
// and its pop adds no host range.
void TraceBuilder::PushRange(const wire::RangeEvent& event, uint16_t flags) {
  const bool instance = (flags & wire::kRangeFlagOpenBeforeWindow) == 0;
  auto& stack = data_.open_stacks[event.tid];
  auto& history = data_.history[event.tid];
  const int32_t parent = stack.empty() ? -1 : static_cast<int32_t>(stack.back().history);
  const auto index = static_cast<uint32_t>(history.size());
  history.push_back({event.timestamp_ns, HistoryEntry::kOpenEnd, event.node, parent});
  if (instance) data_.pushes.emplace_back(event.tid, index);
  stack.push_back({event.timestamp_ns, event.node, index, instance});
  if (!data_.main_tid || event.timestamp_ns < data_.main_tid_first_push_ns) {
    data_.main_tid = event.tid;
    data_.main_tid_first_push_ns = event.timestamp_ns;
  }
}

// Closes the innermost open range of `event.node` on the thread. Ranges above it (pushed later,
// never popped) close with it: NVTX stacks cannot outlive their parent.
void TraceBuilder::PopRange(const wire::RangeEvent& event) {
  auto stack_it = data_.open_stacks.find(event.tid);
  if (stack_it == data_.open_stacks.end() || stack_it->second.empty()) {
    ++data_.unmatched_pops;
    return;
  }
  auto& stack = stack_it->second;
  auto match = std::find_if(stack.rbegin(), stack.rend(),
                            [&](const OpenHostRange& open) { return open.node == event.node; });
  if (match == stack.rend()) {
    ++data_.unmatched_pops;
    return;
  }
  const size_t keep = static_cast<size_t>(stack.rend() - match) - 1;
  data_.implicitly_closed += stack.size() - keep - 1;
  for (size_t i = stack.size(); i-- > keep;) {
    const uint64_t end = std::max(event.timestamp_ns, stack[i].start_ns);
    if (stack[i].instance) {
      data_.host_ranges.push_back({stack[i].start_ns, end, event.tid, stack[i].node});
    }
    data_.history[event.tid][stack[i].history].end_ns = end;
  }
  stack.resize(keep);
}

void TraceBuilder::AddActivity(const ActivityRecord& activity) {
  SeeActivityTimestamp(activity.end_ns);
  ++data_.activities_seen;
  window_.Push(activity, activity.complete() ? activity.start_ns : data_.last_timestamp_ns);
}

uint32_t TraceBuilder::InternShape(const wire::Kernel& kernel) {
  KernelShape shape;
  std::copy(std::begin(kernel.grid), std::end(kernel.grid), shape.grid.begin());
  std::copy(std::begin(kernel.block), std::end(kernel.block), shape.block.begin());
  shape.shared_memory_bytes = kernel.shared_memory_bytes;
  auto [it, inserted] =
      data_.shape_index.try_emplace(shape, static_cast<uint32_t>(data_.shapes.size()));
  if (inserted) data_.shapes.push_back(shape);
  return it->second;
}

void TraceBuilder::Finish(std::optional<uint64_t> closed_ns) {
  data_.finished = true;
  data_.closed_ns = closed_ns;
  if (data_.window_stream()) {
    // A window ends while ranges are open (the training loop's, a step's): their ends are after
    // the window, so they are not instances and not loss. They stay open in the history.
    data_.open_stacks.clear();
    data_.open_spans.clear();
    return;
  }
  for (auto& [tid, stack] : data_.open_stacks) {
    for (size_t i = stack.size(); i-- > 0;) {
      data_.host_ranges.push_back({stack[i].start_ns,
                                   std::max(stack[i].start_ns, data_.last_timestamp_ns), tid,
                                   stack[i].node});
      ++data_.unclosed_ranges;
    }
    for (size_t i = 0; i < stack.size(); ++i) {
      HistoryEntry& entry = data_.history[tid][stack[i].history];
      entry.end_ns = std::max(stack[i].start_ns, data_.last_timestamp_ns);
      data_.closed_at_stream_end.insert(&entry);
    }
    stack.clear();
  }
  for (auto& [id, span] : data_.open_spans) {
    span.end_ns = std::max(span.start_ns, data_.last_timestamp_ns);
    data_.spans.push_back(span);
    ++data_.unclosed_ranges;
  }
  data_.open_spans.clear();
}

}  // namespace gpuattr::collector
