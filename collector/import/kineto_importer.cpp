#include "import/kineto_importer.h"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/kernel_maps.h"
#include "analysis/module_fold.h"
#include "import/decimal_time.h"
#include "import/pytorch_model.h"
#include "wire/protocol.h"

namespace gpuattr::collector {
namespace {

namespace ondemand = simdjson::ondemand;

// Epoch nanoseconds of 2001-09-09: a trace clock beyond it is taken to be wall time.
constexpr uint64_t kWallClockFloorNs = 1'000'000'000'000'000'000ull;

enum class Category : uint8_t {
  kOther,
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kAnnotation,
  kOp,
  kFlow,
  kPythonFunction,  // with_stack / with_modules frames: modules and recompute frames are used
  kForwardBackwardFlow,
  kLegacyHost,    // the legacy autograd profiler's list: an event of pid "CPU functions"
  kLegacyDevice,  // ... and of pid "CUDA functions" (CUDA-event estimates, not device work)
};

Category CategoryOf(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return Category::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Category::kMemset;
  if (cat == "cuda_runtime" || cat == "Runtime") return Category::kRuntime;
  if (cat == "cuda_driver" || cat == "Driver") return Category::kDriver;
  if (cat == "user_annotation") return Category::kAnnotation;
  if (cat == "cpu_op" || cat == "Operator") return Category::kOp;
  if (cat == "ac2g" || cat == "async") return Category::kFlow;
  if (cat == "python_function") return Category::kPythonFunction;
  if (cat == "fwdbwd") return Category::kForwardBackwardFlow;
  return Category::kOther;
}

// The legacy list has no categories; its pid says which side an event is on.
Category LegacyCategoryOf(std::string_view pid_text) {
  if (pid_text == "CPU functions") return Category::kLegacyHost;
  if (pid_text == "CUDA functions") return Category::kLegacyDevice;
  return Category::kOther;
}

// CUpti_ActivityMemcpyKind from Kineto's name, "Memcpy HtoD (Pageable -> Device)".
uint8_t CopyKindOf(std::string_view name) {
  if (name.size() < 11 || name.substr(0, 7) != "Memcpy ") return 0;
  const std::string_view kind = name.substr(7, 4);
  if (kind == "HtoD") return 1;
  if (kind == "DtoH") return 2;
  if (kind == "DtoD") return 8;
  if (kind == "HtoH") return 9;
  if (kind == "PtoP") return 10;
  return 0;
}

constexpr std::string_view kBackwardOpPrefix = "autograd::engine::evaluate_function: ";

// A with_stack frame of non-reentrant checkpointing's recomputation:
// "torch/utils/checkpoint.py(1129): recompute_fn".
bool IsRecomputeFrame(std::string_view name) {
  return name.ends_with("): recompute_fn") && name.find("checkpoint.py(") != std::string_view::npos;
}

// CUpti_ActivityMemoryKind from one side of Kineto's "(Pageable -> Device)".
uint8_t MemoryKindOf(std::string_view kind) {
  if (kind == "Pageable") return 1;
  if (kind == "Pinned") return 2;
  if (kind == "Device") return 3;
  if (kind == "Array") return 4;
  if (kind == "Managed") return 5;
  return 0;
}

// The source and destination memory kinds of "Memcpy HtoD (Pageable -> Device)"; 0 unknown.
std::pair<uint8_t, uint8_t> MemoryKindsOf(std::string_view name) {
  const size_t open = name.find('(');
  const size_t arrow = name.find(" -> ", open == std::string_view::npos ? 0 : open);
  const size_t close = name.rfind(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos ||
      close == std::string_view::npos || close < arrow) {
    return {0, 0};
  }
  return {MemoryKindOf(name.substr(open + 1, arrow - open - 1)),
          MemoryKindOf(name.substr(arrow + 4, close - arrow - 4))};
}

std::optional<uint32_t> AsU32(std::optional<int64_t> value) {
  if (!value || *value < 0 || *value > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

// The readers of one field's value run for every field of every event (tens of millions of calls
// for 200 MB of JSON), so they are always inlined into the field loops.
// An integer; nullopt for any other value (get_int64 refuses strings, literals and fractions
// without consuming them).
[[gnu::always_inline]] inline std::optional<int64_t> ReadInt(ondemand::value& value) {
  int64_t out = 0;
  if (value.get_int64().get(out) != simdjson::SUCCESS) return std::nullopt;
  return out;
}

[[gnu::always_inline]] inline std::string_view ReadString(ondemand::value& value) {
  std::string_view out;
  if (value.get_string().get(out) != simdjson::SUCCESS) return {};
  return out;
}

[[gnu::always_inline]] inline std::string_view ReadNumberText(ondemand::value& value) {
  ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS || type != ondemand::json_type::number) return {};
  return value.raw_json_token();
}

// The fields of one event that matter here; views into the parser's buffers.
struct EventFields {
  std::string_view ph;
  std::string_view cat;
  std::string_view name;
  std::string_view ts;
  std::optional<uint64_t> ts_ns;  // ts parsed
  std::string_view dur;
  std::optional<int64_t> pid;
  std::optional<int64_t> tid;
  std::string_view pid_text;  // the pid when the file gives it as a string
  std::optional<int64_t> flow_id;
  std::optional<int64_t> correlation;
  std::optional<int64_t> device;
  std::optional<int64_t> stream;
  std::optional<int64_t> cbid;
  std::optional<int64_t> bytes;
  std::optional<int64_t> shared_memory;
  std::optional<int64_t> registers;
  std::optional<int64_t> sequence;  // cpu_op args "Sequence number"
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
};

// A flow endpoint or an event waiting for one: (pid, tid, ts) on the file's clock.
struct FlowKey {
  uint32_t pid;
  uint32_t tid;
  uint64_t ts_ns;
  bool operator==(const FlowKey&) const = default;
};
struct FlowKeyHash {
  size_t operator()(const FlowKey& key) const {
    return std::hash<uint64_t>{}(key.ts_ns * 0x9E3779B97F4A7C15ull ^
                                 (uint64_t{key.pid} << 32 | key.tid));
  }
};

class KinetoHandler : public TraceEventHandler {
 public:
  KinetoHandler(ImportedTrace* trace, const KinetoOptions& options)
      : trace_(trace), options_(options) {}

  Status OnEvent(std::string_view text) override {
    static_assert(simdjson::SIMDJSON_PADDING <= kEventPaddingBytes);
    ondemand::document document;
    if (parser_.iterate(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING)
            .get(document) != simdjson::SUCCESS) {
      return DataLossError("malformed JSON in an event");
    }
    ondemand::object object;
    if (document.get_object().get(object) != simdjson::SUCCESS) {
      return DataLossError("malformed JSON in an event");
    }
    EventFields fields;
    for (auto member : object) {
      // The field and its value by reference where the iterator built them: each copy of these
      // small structs is a store-forwarding stall (GCC copies them 16 bytes at a time).
      if (member.error() != simdjson::SUCCESS) return DataLossError("malformed JSON in an event");
      ondemand::field& field = member.value_unsafe();
      const ondemand::raw_json_string key = field.key();
      ondemand::value& value = field.value();
      if (key == "ph") {
        fields.ph = ReadString(value);
      } else if (key == "cat") {
        fields.cat = ReadString(value);
      } else if (key == "name") {
        fields.name = ReadString(value);
      } else if (key == "ts") {
        fields.ts = ReadNumberText(value);
      } else if (key == "dur") {
        fields.dur = ReadNumberText(value);
      } else if (key == "pid") {
        fields.pid = ReadId(value, &fields.pid_text);
      } else if (key == "tid") {
        fields.tid = ReadId(value, nullptr);
      } else if (key == "id") {
        fields.flow_id = ReadInt(value);
      } else if (key == "args") {
        if (!ReadArgs(value, &fields)) return DataLossError("malformed JSON in an event's args");
      }
    }
    if (!fields.ts.empty()) fields.ts_ns = MicrosecondsTextToNs(fields.ts);
    // The trace's start: its earliest timestamped event, used or not (metadata events have none
    // that means anything).
    if (fields.ts_ns && fields.ph != "M") earliest_ns_ = std::min(earliest_ns_, *fields.ts_ns);
    Apply(fields);
    return Status::Ok();
  }

  Status OnTopLevel(std::string_view key, std::string_view text) override {
    if (key == "distributedInfo") {
      if (auto rank = ParseRank(text)) trace_->rank = *rank;
    } else if (key == "baseTimeNanoseconds") {
      if (auto base = DecimalToScaledInteger(text, 0)) base_time_ns_ = *base;
    } else if (key == "deviceProperties") {
      ParseDevices(text);
    }
    return Status::Ok();
  }

  // After the last event: correlation ids from flows, and the wall clock.
  void Finish() {
    if (!pending_.empty() && !flows_.empty()) {
      std::unordered_map<FlowKey, uint32_t, FlowKeyHash> flow_ids;
      for (const auto& [key, id] : flows_) flow_ids.try_emplace(key, id);
      for (const Pending& pending : pending_) {
        auto flow = flow_ids.find(pending.key);
        if (flow == flow_ids.end()) continue;
        if (pending.activity) {
          trace_->activities[pending.index].correlation = flow->second;
        } else {
          trace_->api_calls[pending.index].correlation = flow->second;
        }
      }
    }
    if (legacy_events_ && !kineto_events_) {
      trace_->format = "autograd_legacy";
    } else {
      ApplyPyTorchModel(torch_, trace_);
    }
    if (base_time_ns_) {
      trace_->wall_clock = true;
      trace_->realtime_offset_ns = *base_time_ns_;
    } else if (min_time_ns_ >= kWallClockFloorNs && min_time_ns_ != kNoTime) {
      trace_->wall_clock = true;
    }
    if (trace_->wall_clock && earliest_ns_ != kNoTime) {
      trace_->started_realtime_ns = trace_->realtime_offset_ns + earliest_ns_;
    }
  }

 private:
  static constexpr uint64_t kNoTime = std::numeric_limits<uint64_t>::max();
  // Named pids and tids get ids from here up: above any Linux pid or tid (at most 2^22).
  static constexpr int64_t kFirstNamedId = int64_t{1} << 31;
  static constexpr size_t kMaxNamedIds = size_t{1} << 16;  // and each at most this long:
  static constexpr size_t kMaxNamedIdBytes = 256;
  static constexpr size_t kMaxDevices = 1024;

  struct Pending {
    FlowKey key;
    uint32_t index;
    bool activity;
  };

  // A pid or tid: a number, or a string (the 2021 schema writes tids as strings, the legacy list
  // writes "CPU functions" as its pid). A string of decimal digits is that number; any other
  // string is a name, given an id of its own from kFirstNamedId up (the same name, the same id;
  // memory bounded: past kMaxNamedIds names, or longer than kMaxNamedIdBytes, the event is
  // skipped). `text` (optional) receives the string.
  std::optional<int64_t> ReadId(ondemand::value& value, std::string_view* text) {
    if (const std::optional<int64_t> number = ReadInt(value)) return number;
    const std::string_view name = ReadString(value);  // empty: not a string either
    if (name.empty() || name.size() > kMaxNamedIdBytes) return std::nullopt;
    if (text != nullptr) *text = name;
    if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const std::optional<uint64_t> id = DecimalToScaledInteger(name, 0);
      if (!id || *id > uint64_t{std::numeric_limits<int64_t>::max()}) return std::nullopt;
      return static_cast<int64_t>(*id);
    }
    auto [named, inserted] = named_ids_.try_emplace(std::string(name), 0);
    if (inserted) {
      if (named_ids_.size() > kMaxNamedIds) {
        named_ids_.erase(named);
        return std::nullopt;
      }
      named->second = kFirstNamedId + static_cast<int64_t>(named_ids_.size()) - 1;
    }
    return named->second;
  }

  bool ReadArgs(ondemand::value& value, EventFields* fields) {
    ondemand::object args;
    if (value.get_object().get(args) != simdjson::SUCCESS) return true;  // not an object: ignored
    for (auto member : args) {
      if (member.error() != simdjson::SUCCESS) return false;
      ondemand::field& field = member.value_unsafe();  // by reference, as in OnEvent
      const ondemand::raw_json_string key = field.key();
      ondemand::value& arg = field.value();
      if (key == "correlation") {
        fields->correlation = ReadInt(arg);
      } else if (key == "device") {
        fields->device = ReadInt(arg);
      } else if (key == "stream") {
        fields->stream = ReadInt(arg);
      } else if (key == "cbid") {
        fields->cbid = ReadInt(arg);
      } else if (key == "bytes") {
        fields->bytes = ReadInt(arg);
      } else if (key == "shared memory") {
        fields->shared_memory = ReadInt(arg);
      } else if (key == "registers per thread") {
        fields->registers = ReadInt(arg);
      } else if (key == "Sequence number") {
        fields->sequence = ReadInt(arg);
      } else if (key == "grid") {
        if (!ReadTriple(arg, &fields->grid)) return false;
      } else if (key == "block") {
        if (!ReadTriple(arg, &fields->block)) return false;
      }
    }
    return true;
  }

  static bool ReadTriple(ondemand::value& value, std::array<uint32_t, 3>* out) {
    ondemand::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) return true;  // not an array: ignored
    size_t i = 0;
    for (auto element : array) {
      ondemand::value item;
      if (std::move(element).get(item) != simdjson::SUCCESS) return false;
      if (auto number = AsU32(ReadInt(item)); number && i < 3) (*out)[i] = *number;
      ++i;
    }
    return true;
  }

  static std::optional<int32_t> ParseRank(std::string_view text) {
    if (text.size() > (size_t{1} << 20)) return std::nullopt;
    ondemand::parser parser;
    simdjson::padded_string padded(text);
    ondemand::document document;
    if (parser.iterate(padded).get(document) != simdjson::SUCCESS) return std::nullopt;
    ondemand::object object;
    if (document.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
    for (auto member : object) {
      ondemand::field field;
      if (std::move(member).get(field) != simdjson::SUCCESS) return std::nullopt;
      if (field.key() != "rank") continue;
      ondemand::value value = field.value();
      const std::optional<int64_t> rank = ReadInt(value);
      if (rank && *rank >= 0 && *rank <= std::numeric_limits<int32_t>::max()) {
        return static_cast<int32_t>(*rank);
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  // deviceProperties: [{"id": N, "name": TEXT, ...}, ...]; entries without both, or with an
  // empty name, name no device. A malformed member ends the list where it is.
  void ParseDevices(std::string_view text) {
    if (text.size() > (size_t{1} << 20)) return;
    ondemand::parser parser;
    simdjson::padded_string padded(text);
    ondemand::document document;
    ondemand::array devices;
    if (parser.iterate(padded).get(document) != simdjson::SUCCESS ||
        document.get_array().get(devices) != simdjson::SUCCESS) {
      return;
    }
    for (auto element : devices) {
      ondemand::object device;
      if (std::move(element).get_object().get(device) != simdjson::SUCCESS) return;
      std::optional<uint32_t> id;
      std::string_view name;
      for (auto member : device) {
        ondemand::field field;
        if (std::move(member).get(field) != simdjson::SUCCESS) return;
        ondemand::value value = field.value();
        if (field.key() == "id") {
          id = AsU32(ReadInt(value));
        } else if (field.key() == "name") {
          name = ReadString(value);
        }
      }
      if (id && !name.empty() && trace_->devices.size() < kMaxDevices) {
        trace_->devices.push_back({*id, trace_->strings.Intern(name)});
      }
    }
  }

  void Skip() { ++trace_->skipped_events; }

  void SeeTime(uint64_t ns) { min_time_ns_ = std::min(min_time_ns_, ns); }

  void Unused(const EventFields& fields) { trace_->CountUnused(fields.cat); }

  // Whether a host event of `category` named `name` becomes a range.
  bool KeptAsRange(Category category, std::string_view name) {
    // A compiled graph's call (Inductor's record_function) is a range: `gpuattr import
    // --kernel-maps` places its launches by the graph's map, and without one it names them.
    if (category == Category::kOp) {
      return options_.op_ranges || name.starts_with("ProfilerStep#") ||
             name.starts_with(kProfilerGraphRangePrefix);
    }
    if (category != Category::kPythonFunction) return true;
    if (name.starts_with(kModuleRangePrefix)) return options_.modules;
    if (!IsRecomputeFrame(name)) return false;
    ++torch_.recompute_frames;
    return true;
  }

  // A cpu_op the PyTorch model reads (pytorch_model.h): a backward op, or one with a sequence
  // number.
  void NoteTorchOp(const EventFields& fields, uint32_t pid, uint32_t tid, uint64_t start,
                   uint64_t end) {
    const TorchOp op{start, end, pid, tid,
                     fields.sequence && *fields.sequence >= 0 ? *fields.sequence : -1};
    if (fields.name.starts_with(kBackwardOpPrefix)) {
      torch_.backward_ops.push_back(op);
    } else if (op.sequence >= 0) {
      torch_.sequenced_ops.push_back(op);
    }
  }

  void AddForwardBackwardFlow(const EventFields& fields) {
    const bool start = fields.ph == "s";
    if (!start && fields.ph != "f") return Unused(fields);
    const auto pid = AsU32(fields.pid);
    const auto tid = AsU32(fields.tid);
    const auto ts = fields.ts_ns;
    const auto id = AsU32(fields.flow_id);
    if (!pid || !tid || !ts || !id) return Skip();
    (start ? torch_.flow_starts : torch_.flow_finishes).push_back({*ts, *pid, *tid, *id});
  }

  void Apply(const EventFields& fields) {
    const Category category =
        fields.cat.empty() ? LegacyCategoryOf(fields.pid_text) : CategoryOf(fields.cat);
    if (category == Category::kLegacyHost || category == Category::kLegacyDevice) {
      legacy_events_ = true;
    }
    if (category == Category::kOther || category == Category::kLegacyDevice) return Unused(fields);
    if (category == Category::kFlow) {
      if (fields.ph != "s" && fields.ph != "f" && fields.ph != "t") return Unused(fields);
      const auto pid = AsU32(fields.pid);
      const auto tid = AsU32(fields.tid);
      const auto ts = fields.ts_ns;
      const auto id = AsU32(fields.flow_id);
      if (!pid || !tid || !ts || !id || *id == 0) return Skip();
      kineto_events_ = true;
      flows_.emplace_back(FlowKey{*pid, *tid, *ts}, *id);
      return;
    }
    if (category == Category::kForwardBackwardFlow) return AddForwardBackwardFlow(fields);
    if (fields.ph != "X") return Unused(fields);
    const std::optional<uint64_t> start = fields.ts_ns;
    const std::optional<uint64_t> duration =
        fields.dur.empty() ? std::optional<uint64_t>(0) : MicrosecondsTextToNs(fields.dur);
    if (!start || !duration || *start > kNoTime - *duration) return Skip();
    const uint64_t end = *start + *duration;
    std::optional<uint32_t> correlation;
    if (fields.correlation) {
      correlation = AsU32(fields.correlation);
      if (!correlation) return Skip();
    }
    switch (category) {
      case Category::kKernel:
      case Category::kMemcpy:
      case Category::kMemset: {
        const auto device = AsU32(fields.device ? fields.device : fields.pid);
        const auto stream = AsU32(fields.stream ? fields.stream : fields.tid);
        if (!device || !stream) return Skip();
        ImportedActivity activity;
        activity.start_ns = *start;
        activity.end_ns = end;
        activity.correlation = correlation.value_or(0);
        activity.device = *device;
        activity.stream = *stream;
        activity.bytes =
            fields.bytes && *fields.bytes > 0 ? static_cast<uint64_t>(*fields.bytes) : 0;
        if (category == Category::kKernel) {
          activity.kind = DeviceWork::kKernel;
          activity.name = trace_->strings.Intern(fields.name);
          activity.grid = fields.grid;
          activity.block = fields.block;
          activity.shared_memory_bytes = AsU32(fields.shared_memory).value_or(0);
          activity.registers_per_thread = AsU32(fields.registers).value_or(0);
        } else if (category == Category::kMemcpy) {
          activity.kind = DeviceWork::kMemcpy;
          activity.copy_kind = CopyKindOf(fields.name);
          std::tie(activity.src_kind, activity.dst_kind) = MemoryKindsOf(fields.name);
        } else {
          activity.kind = DeviceWork::kMemset;
        }
        kineto_events_ = true;
        if (!correlation) {
          const auto pid = AsU32(fields.pid);
          const auto tid = AsU32(fields.tid);
          if (pid && tid) {
            pending_.push_back({FlowKey{*pid, *tid, *start},
                                static_cast<uint32_t>(trace_->activities.size()), true});
          }
        }
        SeeTime(*start);
        trace_->activities.push_back(activity);
        return;
      }
      case Category::kRuntime:
      case Category::kDriver: {
        const auto pid = AsU32(fields.pid);
        const auto tid = AsU32(fields.tid);
        if (!pid || !tid) return Skip();
        ImportedApiCall call;
        call.start_ns = *start;
        call.end_ns = end;
        call.pid = *pid;
        call.tid = *tid;
        call.correlation = correlation.value_or(0);
        call.name = trace_->strings.Intern(fields.name);
        call.cbid = static_cast<uint16_t>(std::min<uint32_t>(AsU32(fields.cbid).value_or(0),
                                                             std::numeric_limits<uint16_t>::max()));
        call.domain = static_cast<uint8_t>(
            category == Category::kDriver ? wire::ApiDomain::kDriver : wire::ApiDomain::kRuntime);
        kineto_events_ = true;
        if (!correlation) {
          pending_.push_back({FlowKey{*pid, *tid, *start},
                              static_cast<uint32_t>(trace_->api_calls.size()), false});
        }
        SeeTime(*start);
        trace_->api_calls.push_back(call);
        return;
      }
      case Category::kAnnotation:
      case Category::kOp:
      case Category::kPythonFunction:
      case Category::kLegacyHost: {
        const auto pid = AsU32(fields.pid);
        const auto tid = AsU32(fields.tid);
        if (category == Category::kOp && pid && tid) NoteTorchOp(fields, *pid, *tid, *start, end);
        if (!KeptAsRange(category, fields.name)) return Unused(fields);
        if (!pid || !tid) return Skip();
        if (category != Category::kLegacyHost) kineto_events_ = true;
        SeeTime(*start);
        trace_->ranges.push_back({*start, end, *pid, *tid, trace_->strings.Intern(fields.name)});
        return;
      }
      case Category::kOther:
      case Category::kFlow:
      case Category::kForwardBackwardFlow:
      case Category::kLegacyDevice:
        return;
    }
  }

  ImportedTrace* trace_;
  KinetoOptions options_;
  ondemand::parser parser_;
  // Flow endpoints in file order; indexed only when some event lacks args.correlation (rare:
  // today's Kineto writes the id in args on both sides).
  std::vector<std::pair<FlowKey, uint32_t>> flows_;
  std::vector<Pending> pending_;
  std::optional<uint64_t> base_time_ns_;
  uint64_t min_time_ns_ = kNoTime;  // of the events used
  uint64_t earliest_ns_ = kNoTime;  // of every event with a timestamp
  // Ids of pids and tids the file names with strings (ReadId).
  std::unordered_map<std::string, int64_t> named_ids_;
  TorchEvents torch_;           // what the PyTorch model reads
  bool legacy_events_ = false;  // an event of the legacy autograd profiler's list was seen
  bool kineto_events_ = false;  // an event with a Kineto category was used
};

}  // namespace

StatusOr<ImportedTrace> ImportKineto(ByteSource* source, const std::string& path,
                                     const KinetoOptions& options, uint64_t* json_bytes) {
  ImportedTrace trace;
  trace.path = path;
  trace.format = "kineto";
  KinetoHandler handler(&trace, options);
  Status status = SplitTraceEvents(source, &handler, json_bytes);
  if (!status.ok()) return DataLossError(path + ": " + status.message());
  handler.Finish();
  return trace;
}

StatusOr<ImportedTrace> ImportKinetoFile(const std::string& path, const KinetoOptions& options,
                                         uint64_t* json_bytes) {
  GPUATTR_ASSIGN_OR_RETURN(std::unique_ptr<GzipFileSource> source, GzipFileSource::Open(path));
  return ImportKineto(source.get(), path, options, json_bytes);
}

}  // namespace gpuattr::collector
