// TraceData: the decoded host side of one traced process's connection, as ProcessTrace keeps it.
//
// TraceBuilder (trace_builder.h) is the only writer: it applies validated wire records here on
// the ingest thread. The analysis (activity_folder.h and its fold units) reads it, const, and
// leaves in ProcessAnalysis everything a report says. Nothing here is trusted to be
// consistent: ids may be undefined, pops may not match pushes, activities may have no launch.
//
// Memory: device activities are not kept here (they wait in the reorder window, then fold), nor
// are launches (they wait in the LaunchJoin while in flight). Host-side records (graph nodes,
// strings, thread histories) are kept whole; closed ranges and pushes are dropped once folded.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_TRACE_DATA_H_
#define GPUATTR_COLLECTOR_ANALYSIS_TRACE_DATA_H_

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::collector {

struct PathNodeDef {
  uint32_t parent = 0;
  uint32_t name_string = 0;
  uint32_t domain_string = 0;
  bool operator==(const PathNodeDef&) const = default;
};

// One closed push/pop range on one thread: [start_ns, end_ns).
struct HostRange {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t tid = 0;
  uint32_t node = 0;  // the thread's path node while the range was open (the range itself)
};

struct OpenHostRange {
  uint64_t start_ns = 0;
  uint32_t node = 0;
  uint32_t history = 0;  // index of its entry in TraceData::history[tid]
  // false: pushed with kRangeFlagOpenBeforeWindow (open when a capture window began): on the
  // stack and in the history, but its pop makes no host_ranges instance (docs/attach.md).
  bool instance = true;
};

// One push/pop range of a thread's history, in push order: end_ns is kOpenEnd while open;
// parent is the index of the range open below it at the push (-1: none). Pushes of one thread
// arrive in time order, so starts ascend and "innermost range open at t" is a binary search
// followed by a walk up the parent links.
struct HistoryEntry {
  static constexpr uint64_t kOpenEnd = ~uint64_t{0};
  uint64_t start_ns = 0;
  uint64_t end_ns = kOpenEnd;
  uint32_t node = 0;
  int32_t parent = -1;
};

// A start/end range (process-wide; may end on another thread). Not part of any stack.
struct SpanRange {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t tid = 0;
  uint32_t name_string = 0;
  uint32_t domain_string = 0;
};

// A launch-like API call in flight, keyed by correlation id in LaunchJoin.
struct LaunchRecord {
  uint64_t enter_ns = 0;
  uint64_t exit_ns = 0;  // 0 until ApiExit arrived
  uint32_t tid = 0;
  uint32_t node = 0;  // launching thread's path node at ApiEnter; 0: no range open
  uint16_t cbid = 0;
  uint8_t domain = 0;    // wire::ApiDomain
  uint8_t kind = 0;      // wire::ApiKind
  bool matched = false;  // an activity joined it
};

enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

struct KernelShape {
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t shared_memory_bytes = 0;
  auto operator<=>(const KernelShape&) const = default;
};

// What a memcpy moved, kept beside its ActivityRecord while it waits in the reorder window
// (TraceData::copies): the record has no room for it.
struct CopyDetail {
  uint64_t bytes = 0;
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;   // CUpti_ActivityMemoryKind
  uint8_t dst_kind = 0;
};

// Slots of CopyDetail, one per memcpy in the reorder window: taken when the memcpy arrives,
// given back when it leaves the window (ProcessTrace), so memory is bounded by copies in flight.
class CopySlots {
 public:
  uint32_t Take(const CopyDetail& detail) {
    if (free_.empty()) {
      slots_.push_back(detail);
      return static_cast<uint32_t>(slots_.size() - 1);
    }
    const uint32_t slot = free_.back();
    free_.pop_back();
    slots_[slot] = detail;
    return slot;
  }
  // Null for a slot never taken (a record made without the builder).
  const CopyDetail* Find(uint32_t slot) const {
    return slot < slots_.size() ? &slots_[slot] : nullptr;
  }
  void Give(uint32_t slot) { free_.push_back(slot); }

 private:
  std::vector<CopyDetail> slots_;
  std::vector<uint32_t> free_;
};

// One device activity, 48 bytes. start = end = 0 (or end < start) means CUPTI had no timestamp:
// kept so its launch counts as matched, never counted as device time.
struct ActivityRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t graph_node_id = 0;
  uint32_t correlation_id = 0;
  uint32_t name_string = 0;  // kernels: mangled name; 0 otherwise
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t shape = 0;  // kernels: index into TraceData::shapes; memcpys: TraceData::copies slot
  ActivityKind kind = ActivityKind::kKernel;

  bool complete() const { return end_ns > start_ns || (end_ns == start_ns && start_ns != 0); }
  uint64_t duration_ns() const { return complete() ? end_ns - start_ns : 0; }
};
static_assert(sizeof(ActivityRecord) == 48, "keep activity records compact (see file comment)");

// What is known about a graph node id: where it was created and what it was cloned from.
struct GraphNodeInfo {
  bool created = false;
  uint32_t path_node = 0;  // capturing thread's path node at creation (valid when created)
  uint32_t tid = 0;
  uint64_t original_node = 0;  // 0 unless a GraphNodeCloned named this node as the clone
};

struct TraceData {
  std::optional<wire::Hello> hello;
  std::optional<wire::Goodbye> goodbye;
  // A capture window's stream (Hello.mode kWindow, docs/attach.md): its first WindowBegin and
  // WindowEnd. WindowEnd ends the stream as Goodbye ends a traced one.
  std::optional<wire::WindowBegin> window_begin;
  uint16_t window_begin_flags = 0;  // its record flags (wire::kWindowBeginFlag*)
  std::optional<wire::WindowEnd> window_end;
  std::optional<wire::CuptiState> cupti_state;
  std::optional<wire::Diagnostics> diagnostics;  // the latest (cumulative) one
  std::vector<wire::Refusal> refusals;
  bool finished = false;
  // When the connection closed, on the shim's clock (CLOCK_MONOTONIC of the same host); empty
  // when not known (a replayed stream file). With last_timestamp_ns it bounds what a stream cut
  // before Goodbye may have lost.
  std::optional<uint64_t> closed_ns;

  std::unordered_map<uint32_t, std::string> strings;  // valid UTF-8 (sanitised on receipt)
  std::unordered_map<uint32_t, PathNodeDef> path_nodes;
  std::map<uint32_t, uint32_t> thread_names;  // tid -> string id
  std::map<uint32_t, uint32_t> device_names;  // device -> string id
  // Bumped by every String and PathNode record, and by those that changed an id already defined
  // (a well-formed stream never does): name caches restart when a name they read changed
  // (path_names.h).
  uint64_t definitions = 0;
  uint64_t redefinitions = 0;

  // Push/pop ranges. The containers that grow with every range for the whole connection are
  // deques: a vector's reallocation would copy all of them at once and stall ingest for
  // milliseconds late in a long run, long enough for the shim's socket to overflow.
  std::unordered_map<uint32_t, std::vector<OpenHostRange>> open_stacks;  // per tid
  // Closed instances in closing order, and instance pushes, (tid, history index) in arrival
  // order. A streaming trace drops from the front what its fold consumed; *_dropped count those,
  // so the n-th ever is at [n - *_dropped].
  std::deque<HostRange> host_ranges;
  uint64_t host_ranges_dropped = 0;
  std::unordered_map<uint32_t, std::deque<HistoryEntry>> history;  // per tid, push order
  std::deque<std::pair<uint32_t, uint32_t>> pushes;
  uint64_t pushes_dropped = 0;
  std::optional<uint32_t> main_tid;  // tid of the earliest RangePush seen
  uint64_t main_tid_first_push_ns = 0;

  // Start/end ranges and marks.
  std::unordered_map<uint64_t, SpanRange> open_spans;  // by range id
  std::vector<SpanRange> spans;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> marks;  // (name, domain) -> count
  // ValueMarks (marks with a count, on their thread's path) not yet folded, in arrival order: the
  // fold takes them once the watermark passed them, when every range they fell in is known.
  std::deque<wire::ValueMark> value_marks;

  // Device activity and graphs (launches in flight live in LaunchJoin).
  std::vector<KernelShape> shapes;
  CopySlots copies;  // memcpys in the reorder window
  std::map<KernelShape, uint32_t> shape_index;
  std::unordered_map<uint64_t, GraphNodeInfo> graph_nodes;
  uint64_t activities_seen = 0;  // device activity records received
  // The smallest correlation id of any launch (ApiEnter) received; 0 before the first. Device
  // work below it without a launch was launched before the capture began.
  uint32_t min_launch_correlation = 0;

  // Stream bookkeeping and collector-side counts of irregularities.
  uint64_t messages = 0;
  uint64_t next_sequence = 0;
  uint64_t lost_messages = 0;           // sequence gaps
  uint64_t sequence_regressions = 0;    // a sequence number at or below one already seen
  uint64_t last_timestamp_ns = 0;       // the latest timestamp of any kind seen on this connection
  uint64_t last_host_timestamp_ns = 0;  // the same, device activity times left out
  uint64_t unmatched_pops = 0;          // a pop whose range was not open on that thread
  uint64_t implicitly_closed = 0;       // ranges closed because an outer range was popped first
  uint64_t unclosed_ranges = 0;         // push/pop and start/end ranges still open at Finish
                                        // (traced streams; a window's are no instances, no loss)
  // History entries that Finish closed at the stream's last timestamp: their real end is
  // unknown, so the step fold makes no row of them (an interrupted step is not a step).
  std::unordered_set<const HistoryEntry*> closed_at_stream_end;
  uint64_t unmatched_range_ends = 0;
  uint64_t unknown_records = 0;  // record types this collector does not know (skipped)

  bool window_stream() const {
    return hello && hello->mode == static_cast<uint32_t>(wire::HelloMode::kWindow);
  }
};

// Appended to a string that arrived at the wire's length limit (wire::kMaxStringBytes, 4096
// bytes): the shim and the import cut longer names there.
inline constexpr const char* kCutStringMark = "…[cut at 4096 bytes]";
static_assert(wire::kMaxStringBytes == 4096, "kCutStringMark names the limit");

// The name of an interned string, or "<unknown:ID>" when it was never defined.
inline std::string StringOr(const TraceData& data, uint32_t id) {
  auto it = data.strings.find(id);
  if (it != data.strings.end()) return it->second;
  return "<unknown:" + std::to_string(id) + ">";
}

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_TRACE_DATA_H_
