#include "export/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::collector {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

// Appends `text` as a JSON string. Names reach the collector sanitised to valid UTF-8
// (process_trace.cpp), so only quotes, backslashes and control characters need escaping.
void AppendString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void AppendPath(std::string& out, const std::vector<std::string>& path) {
  out.push_back('[');
  for (size_t i = 0; i < path.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendString(out, path[i]);
  }
  out.push_back(']');
}

// Integer nanoseconds as microseconds with three decimals: exact.
void AppendMicros(std::string& out, uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out += text;
}

// `"pid":P,"tid":T,"ts":...` for an event on a thread track.
void AppendWhere(std::string& out, uint32_t pid, uint32_t tid, uint64_t ts_ns) {
  out += "\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
  AppendMicros(out, ts_ns);
}

const char* LaunchName(const LaunchRecord& launch) {
  switch (static_cast<wire::ApiKind>(launch.kind)) {
    case wire::ApiKind::kKernel:
      return "launch kernel";
    case wire::ApiKind::kGraph:
      return "launch graph";
    case wire::ApiKind::kMemcpy:
      return "memcpy";
    case wire::ApiKind::kMemset:
      return "memset";
    case wire::ApiKind::kCapture:
      break;
  }
  return "launch";
}

// Perfetto reads sort indices as int32: ranked processes sort by rank, unranked ones after
// every rank by pid (Linux pids stay below 2^22).
constexpr int64_t kUnrankedSortIndexBase = int64_t{1} << 30;

int64_t ProcessSortIndex(int32_t rank, uint32_t pid) {
  if (rank >= 0) return std::min<int64_t>(rank, kUnrankedSortIndexBase - 1);
  return kUnrankedSortIndexBase + std::min<int64_t>(pid, (int64_t{1} << 30) - 1);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(AtomicTextFile file) : file_(std::move(file)) {}

StatusOr<std::unique_ptr<ChromeTraceWriter>> ChromeTraceWriter::Create(const std::string& path,
                                                                       const std::string& generator,
                                                                       ExistingFile existing) {
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile file, AtomicTextFile::Create(path, existing));
  std::unique_ptr<ChromeTraceWriter> writer(new ChromeTraceWriter(std::move(file)));
  writer->buffer_ = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":";
  AppendString(writer->buffer_, generator);
  writer->buffer_ += ",\"clock\":\"CLOCK_MONOTONIC\"},\"traceEvents\":[\n";
  return writer;
}

void ChromeTraceWriter::BeginEvent() {
  if (!first_event_) buffer_ += ",\n";
  first_event_ = false;
}

void ChromeTraceWriter::Flush() {
  file_.Append(buffer_);
  buffer_.clear();
}

uint32_t ChromeTraceWriter::DeviceTid(uint32_t pid, uint32_t device, uint32_t stream) {
  auto& device_tids = tracks_[pid].device_tids;
  auto [it, inserted] = device_tids.try_emplace(
      {device, stream}, kDeviceTrackTidBase + static_cast<uint32_t>(device_tids.size()));
  return it->second;
}

void ChromeTraceWriter::RangeClosed(uint32_t pid, const HostRange& range,
                                    const std::vector<std::string>& path) {
  if (path.empty()) return;
  tracks_[pid].host_tids.insert(range.tid);
  BeginEvent();
  buffer_ += "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":";
  AppendString(buffer_, path.back());
  buffer_.push_back(',');
  AppendWhere(buffer_, pid, range.tid, range.start_ns);
  buffer_ += ",\"dur\":";
  AppendMicros(buffer_, range.end_ns - range.start_ns);
  buffer_ += ",\"args\":{\"path\":";
  AppendPath(buffer_, path);
  buffer_ += "}}";
  if (buffer_.size() >= kFlushBytes) Flush();
}

void ChromeTraceWriter::LaunchDone(uint32_t pid, uint32_t correlation_id,
                                   const LaunchRecord& launch) {
  tracks_[pid].host_tids.insert(launch.tid);
  const uint64_t end = std::max(launch.exit_ns, launch.enter_ns);
  BeginEvent();
  buffer_ += "{\"ph\":\"X\",\"cat\":\"gpu\",\"name\":";
  AppendString(buffer_, LaunchName(launch));
  buffer_.push_back(',');
  AppendWhere(buffer_, pid, launch.tid, launch.enter_ns);
  buffer_ += ",\"dur\":";
  AppendMicros(buffer_, end - launch.enter_ns);
  buffer_ +=
      ",\"args\":{\"correlation_id\":" + std::to_string(correlation_id) +
      ",\"cbid\":" + std::to_string(launch.cbid) + ",\"domain\":\"" +
      (launch.domain == static_cast<uint8_t>(wire::ApiDomain::kDriver) ? "driver" : "runtime") +
      "\",\"matched\":" + (launch.matched ? "true" : "false") +
      ",\"exit_seen\":" + (launch.exit_ns != 0 ? "true" : "false") + "}}";
  if (buffer_.size() >= kFlushBytes) Flush();
}

void ChromeTraceWriter::ActivityReleased(const ObservedActivity& observed) {
  const ActivityRecord& activity = *observed.activity;
  const uint32_t tid = DeviceTid(observed.pid, activity.device, activity.stream);
  const char* kind = activity.kind == ActivityKind::kKernel   ? "kernel"
                     : activity.kind == ActivityKind::kMemcpy ? "memcpy"
                                                              : "memset";
  BeginEvent();
  buffer_ += "{\"ph\":\"X\",\"cat\":\"gpu\",\"name\":";
  AppendString(buffer_, observed.kernel_name ? *observed.kernel_name : std::string(kind));
  buffer_.push_back(',');
  AppendWhere(buffer_, observed.pid, tid, activity.start_ns);
  buffer_ += ",\"dur\":";
  AppendMicros(buffer_, activity.end_ns - activity.start_ns);
  buffer_ += ",\"args\":{\"kind\":\"";
  buffer_ += kind;
  buffer_ += "\",\"family\":";
  AppendString(buffer_, observed.family ? *observed.family : "[" + std::string(kind) + "]");
  buffer_ += ",\"path\":";
  AppendPath(buffer_, *observed.path);
  buffer_ += ",\"attribution\":\"";
  buffer_ += AttributionKindName(observed.attribution);
  buffer_ += "\"";
  if (observed.reason) {
    buffer_ += ",\"reason\":";
    AppendString(buffer_, observed.reason);
  }
  buffer_ += ",\"correlation_id\":" + std::to_string(activity.correlation_id);
  if (activity.graph_node_id != 0) {
    buffer_ += ",\"graph_node\":" + std::to_string(activity.graph_node_id);
  }
  buffer_ += ",\"device\":" + std::to_string(activity.device) +
             ",\"stream\":" + std::to_string(activity.stream) + "}}";
  if (observed.launch) {
    // The arrow leaves its launch slice at the slice's start and enters the device slice at its
    // start, all three in category "gpu": Chrome DevTools pairs flow events by category, name
    // and id, and binds each only to a slice of the same timestamp and category; catapult and
    // Perfetto drop an arrow that ends before it starts (a slice's middle could: a short kernel
    // inside a long launch call).
    const LaunchRecord& launch = *observed.launch;
    const std::string id = std::to_string(next_flow_id_++);
    BeginEvent();
    buffer_ += "{\"ph\":\"s\",\"cat\":\"gpu\",\"name\":\"launch\",\"id\":" + id + ",";
    AppendWhere(buffer_, observed.pid, launch.tid, launch.enter_ns);
    buffer_ += "}";
    BeginEvent();
    buffer_ += "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"gpu\",\"name\":\"launch\",\"id\":" + id + ",";
    AppendWhere(buffer_, observed.pid, tid, activity.start_ns);
    buffer_ += "}";
  }
  if (buffer_.size() >= kFlushBytes) Flush();
}

void ChromeTraceWriter::ProcessFinished(const TraceData& data, const ProcessAnalysis&) {
  if (!data.hello) return;
  const uint32_t pid = data.hello->pid;
  const int32_t rank = data.hello->rank;
  Tracks& tracks = tracks_[pid];
  const std::string pid_text = std::to_string(pid);

  // NVTX start/end ranges: async slices of the process (they need not nest on one thread).
  for (const SpanRange& span : data.spans) {
    const std::string id = std::to_string(next_span_id_++);
    const std::string name = StringOr(data, span.name_string);
    for (const char phase : {'b', 'e'}) {
      BeginEvent();
      buffer_ += "{\"ph\":\"";
      buffer_.push_back(phase);
      buffer_ += "\",\"cat\":\"nvtx_span\",\"name\":";
      AppendString(buffer_, name);
      buffer_ += ",\"id\":" + id + ",\"pid\":" + pid_text + ",\"tid\":" + std::to_string(span.tid) +
                 ",\"ts\":";
      AppendMicros(buffer_, phase == 'b' ? span.start_ns : span.end_ns);
      buffer_ += "}";
    }
    if (buffer_.size() >= kFlushBytes) Flush();
  }

  auto metadata = [&](const char* name, uint32_t tid, const std::string& args) {
    BeginEvent();
    buffer_ += "{\"ph\":\"M\",\"name\":\"";
    buffer_ += name;
    buffer_ +=
        "\",\"pid\":" + pid_text + ",\"tid\":" + std::to_string(tid) + ",\"args\":{" + args + "}}";
  };
  std::string label = data.hello->exe_string ? Basename(StringOr(data, data.hello->exe_string))
                                             : std::string("process");
  // Viewers add the pid (and a thread's tid) themselves; the rank is ours to say.
  if (rank >= 0) label += " rank " + std::to_string(rank);
  std::string name_arg = "\"name\":";
  AppendString(name_arg, label);
  metadata("process_name", 0, name_arg);
  if (rank >= 0) metadata("process_labels", 0, "\"labels\":\"rank " + std::to_string(rank) + "\"");
  metadata("process_sort_index", 0,
           "\"sort_index\":" + std::to_string(ProcessSortIndex(rank, pid)));

  // Host threads first (main thread on top), then the streams by device and stream.
  for (const auto& [tid, name] : data.thread_names) tracks.host_tids.insert(tid);
  int64_t order = 0;
  auto thread_metadata = [&](uint32_t tid, const std::string& thread_label, int64_t sort) {
    std::string arg = "\"name\":";
    AppendString(arg, thread_label);
    metadata("thread_name", tid, arg);
    metadata("thread_sort_index", tid, "\"sort_index\":" + std::to_string(sort));
  };
  std::vector<uint32_t> host(tracks.host_tids.begin(), tracks.host_tids.end());
  std::stable_partition(host.begin(), host.end(),
                        [&](uint32_t tid) { return data.main_tid && tid == *data.main_tid; });
  for (const uint32_t tid : host) {
    auto name = data.thread_names.find(tid);
    const std::string thread =
        name != data.thread_names.end() ? StringOr(data, name->second) : std::string("thread");
    thread_metadata(tid, thread, order++);
  }
  for (const auto& [key, tid] : tracks.device_tids) {
    const auto [device, stream] = key;
    // The stream first: viewers cut long track names at the end.
    std::string track = "stream " + std::to_string(stream) + " (GPU " + std::to_string(device);
    if (auto name = data.device_names.find(device); name != data.device_names.end()) {
      track += ", " + StringOr(data, name->second);
    }
    track += ")";
    thread_metadata(tid, track, order++);
  }
  tracks_.erase(pid);
  Flush();
}

Status ChromeTraceWriter::Commit() {
  buffer_ += "\n]}\n";
  Flush();
  return file_.Commit();
}

}  // namespace gpuattr::collector
