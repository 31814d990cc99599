// A TraceData built by hand for the fold units' tests: strings, path nodes, and per-thread
// push/pop histories, without the wire. Ranges are given in push order per thread with their
// end (HistoryEntry::kOpenEnd: still open); parents follow from nesting, as the decoder links
// them.
#ifndef GPUATTR_TESTS_UNIT_COLLECTOR_ANALYSIS_TRACE_FIXTURE_H_
#define GPUATTR_TESTS_UNIT_COLLECTOR_ANALYSIS_TRACE_FIXTURE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/samples.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector::testing {

class TraceFixture {
 public:
  // Interns `text` (the same text, the same id).
  uint32_t Str(const std::string& text) {
    for (const auto& [id, known] : data.strings) {
      if (known == text) return id;
    }
    const uint32_t id = next_string_++;
    data.strings[id] = text;
    ++data.definitions;
    return id;
  }

  // The path node of `names` (outermost first), defining every prefix.
  uint32_t Node(const std::vector<std::string>& names) {
    uint32_t parent = 0;
    for (const std::string& name : names) {
      const uint32_t name_id = Str(name);
      auto known = nodes_.find({parent, name_id});
      if (known != nodes_.end()) {
        parent = known->second;
        continue;
      }
      const uint32_t id = next_node_++;
      data.path_nodes[id] = {parent, name_id, 0};
      ++data.definitions;
      nodes_[{parent, name_id}] = id;
      parent = id;
    }
    return parent;
  }

  // A push/pop range of `tid` on `names`' node, [start, end); pushed after every range given for
  // `tid` so far. Closed ranges also become host_ranges instances (in call order). The first
  // thread to push is the main thread.
  void Range(uint32_t tid, const std::vector<std::string>& names, uint64_t start,
             uint64_t end = HistoryEntry::kOpenEnd) {
    auto& history = data.history[tid];
    int32_t parent = -1;
    for (int64_t i = static_cast<int64_t>(history.size()) - 1; i >= 0; --i) {
      const HistoryEntry& entry = history[static_cast<size_t>(i)];
      if (entry.start_ns <= start && entry.end_ns > start) {
        parent = static_cast<int32_t>(i);
        break;
      }
    }
    const uint32_t node = Node(names);
    data.pushes.emplace_back(tid, static_cast<uint32_t>(history.size()));
    history.push_back({start, end, node, parent});
    if (end != HistoryEntry::kOpenEnd) data.host_ranges.push_back({start, end, tid, node});
    if (!data.main_tid) data.main_tid = tid;
  }

  // A launch entered at `enter_ns` on `tid` with `names` open there (empty: none).
  LaunchRecord Launch(uint64_t enter_ns, uint32_t tid, const std::vector<std::string>& names = {},
                      uint64_t exit_ns = 0) {
    LaunchRecord launch;
    launch.enter_ns = enter_ns;
    launch.exit_ns = exit_ns;
    launch.tid = tid;
    launch.node = names.empty() ? 0 : Node(names);
    return launch;
  }

  // A kernel named `name` (interned) on `device`/`stream`, shape 0.
  ActivityRecord Kernel(uint64_t start, uint64_t end, const std::string& name = "k",
                        uint32_t stream = 0, uint32_t device = 0) {
    if (data.shapes.empty()) data.shapes.push_back({});
    ActivityRecord kernel;
    kernel.start_ns = start;
    kernel.end_ns = end;
    kernel.name_string = Str(name);
    kernel.device = device;
    kernel.stream = stream;
    kernel.kind = ActivityKind::kKernel;
    return kernel;
  }

  ActivityRecord Copy(uint64_t start, uint64_t end, uint32_t stream = 0, uint32_t device = 0) {
    ActivityRecord copy;
    copy.start_ns = start;
    copy.end_ns = end;
    copy.device = device;
    copy.stream = stream;
    copy.kind = ActivityKind::kMemcpy;
    return copy;
  }

  // The closed ranges' host durations by node, as the host-range fold would have them.
  std::map<uint32_t, Samples<uint64_t>> HostDurations() const {
    std::map<uint32_t, Samples<uint64_t>> durations;
    for (const HostRange& range : data.host_ranges) {
      durations[range.node].Add(range.end_ns - range.start_ns);
    }
    return durations;
  }

  TraceData data;

 private:
  uint32_t next_string_ = 1;
  uint32_t next_node_ = 100;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> nodes_;  // (parent, name) -> node
};

}  // namespace gpuattr::collector::testing

#endif  // GPUATTR_TESTS_UNIT_COLLECTOR_ANALYSIS_TRACE_FIXTURE_H_
