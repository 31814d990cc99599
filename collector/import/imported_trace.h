// ImportedTrace: what an importer (Kineto JSON, Nsight Systems SQLite) extracted from one input
// file, as compact per-event structs, before it becomes wire records (trace_replay.h).
//
// An importer fills one ImportedTrace per file on the main thread and hands it to ReplayTrace.
// Every name is an id into `strings` (1-based, deduplicated); times are integer nanoseconds on
// the file's own clock. Nothing is trusted to be consistent: intervals may not nest, correlation
// ids may be missing (0) or repeated, pids may be unknown (0 for device activity whose process
// the file does not say).
#ifndef GPUATTR_COLLECTOR_IMPORT_IMPORTED_TRACE_H_
#define GPUATTR_COLLECTOR_IMPORT_IMPORTED_TRACE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuattr::collector {

// Interned strings: id 0 is "none", whose text is empty; ids are dense from 1.
class StringTable {
 public:
  uint32_t Intern(std::string_view text);
  // Empty for 0 (a name a file did not give: an nsys nameId that StringIds lacks) and for an id
  // this table never gave.
  const std::string& Text(uint32_t id) const {
    static const std::string kNone;
    return id == 0 || id > texts_.size() ? kNone : texts_[id - 1];
  }
  uint32_t size() const { return static_cast<uint32_t>(texts_.size()); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;  // no copy to look up
};

// Where a range comes from: the file, or the PyTorch model (pytorch_model.h), whose ranges nest
// outside the file's ranges of the same interval. A context range is a copy of a range open
// elsewhere: it gives the ranges and launches inside it their path, and is no range of its own
// (trace_replay.h sends no record of it; no host instance).
enum class RangeOrigin : uint8_t { kFile, kModel, kModelContext };

// A host range: push/pop on its thread (Kineto annotations, NVTX push/pop), or a process-wide
// start/end range (NVTX start/end) when it sits in ImportedTrace::spans.
struct ImportedRange {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t name = 0;
  RangeOrigin origin = RangeOrigin::kFile;
};

// What the PyTorch model found in a Kineto file (capture.source.pytorch).
struct PyTorchCounts {
  uint64_t module_ranges = 0;     // `nn.Module: …` events kept as ranges
  uint64_t recompute_frames = 0;  // torch/utils/checkpoint.py … recompute_fn frames kept
  uint64_t backward_ops = 0;      // top-level backward ops in processes with modules
  uint64_t linked_by_flow = 0;
  uint64_t linked_by_sequence = 0;
  uint64_t unlinked = 0;  // backward_ops - linked_*: their time is backward_unlinked
};

// A host API call carrying a correlation id (runtime or driver). Only those that launch device
// work, or are named like a launch, become ApiEnter/ApiExit records.
struct ImportedApiCall {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t correlation = 0;  // 0: unknown
  uint32_t name = 0;
  uint16_t cbid = 0;
  uint8_t domain = 0;  // wire::ApiDomain
};

enum class DeviceWork : uint8_t { kKernel, kMemcpy, kMemset };

struct ImportedActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t pid = 0;          // 0: unknown, taken from the launch with the same correlation id
  uint32_t correlation = 0;  // 0: unknown
  uint32_t name = 0;         // kernels: the kernel's name
  uint32_t device = 0;
  uint32_t stream = 0;
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t shared_memory_bytes = 0;
  uint32_t registers_per_thread = 0;
  DeviceWork kind = DeviceWork::kKernel;
  uint8_t copy_kind = 0;  // memcpy: CUpti_ActivityMemcpyKind, 0 unknown
  uint8_t src_kind = 0;   // memcpy: CUpti_ActivityMemoryKind of the source, 0 unknown
  uint8_t dst_kind = 0;   // ... and of the destination
  uint32_t memset_value = 0;
};

// A device's name as the file gives it (Kineto's deviceProperties, Nsight's TARGET_INFO_GPU).
struct ImportedDevice {
  uint32_t device = 0;
  uint32_t name = 0;
};

struct ImportedTrace {
  std::string path;
  // "kineto" | "autograd_legacy" (the legacy autograd profiler's event list, host ranges only)
  // | "nsys".
  std::string format;
  int32_t rank = -1;  // from the file (distributedInfo.rank), -1 when it does not say
  // Whether trace times map to wall time: then realtime = realtime_offset_ns + trace time.
  bool wall_clock = false;
  uint64_t realtime_offset_ns = 0;
  // The wall time the trace began (its earliest event; Nsight: the session's start), when known.
  std::optional<uint64_t> started_realtime_ns;
  StringTable strings;
  std::vector<ImportedRange> ranges;  // push/pop, per thread
  std::vector<ImportedRange> spans;   // start/end, process-wide
  std::vector<ImportedApiCall> api_calls;
  std::vector<ImportedActivity> activities;
  std::vector<ImportedDevice> devices;
  std::optional<PyTorchCounts> pytorch;  // Kineto files (not the legacy list); empty otherwise
  // Events the importer read but could not use (malformed fields), for the diagnostics line.
  uint64_t skipped_events = 0;
  // Well-formed events of kinds the importer does not use, by category (the event's `cat`;
  // kNoCategory without one). Past kMaxUnusedCategories keys, new categories count under
  // kOtherCategories.
  std::map<std::string, uint64_t, std::less<>> unused_events;
  static constexpr size_t kMaxUnusedCategories = 64;
  static constexpr size_t kMaxCategoryBytes = 128;  // a longer `cat` counts under kOtherCategories
  static constexpr const char* kNoCategory = "(no category)";
  static constexpr const char* kOtherCategories = "(other categories)";

  void CountUnused(std::string_view category);
  // Whether any event became a range, a launch or device work.
  bool empty() const {
    return ranges.empty() && spans.empty() && api_calls.empty() && activities.empty();
  }
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_IMPORTED_TRACE_H_
