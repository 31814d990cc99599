// LaunchJoin: launches in flight, joined to device activities by correlation id at release
// (docs/architecture.md §Streaming analysis, "Join at release").
//
// A launch (ApiEnter) waits here until its activity leaves the reorder window: kernel, memcpy
// and memset launches leave on their first match; graph launches stay until the watermark passes
// their enter time by the window (their N activities share the id), as do launches never
// matched, which are then counted unmatched (unless captured into a graph: those never run
// themselves) and, when the stream had not ended, expired. ApiExit completes a launch in flight
// with its exit time. In a capture window's stream, an activity without a launch whose id lies
// outside the launches recorded so far ran for a launch before or after the window.
//
// Single-threaded, owned by one ProcessTrace. Memory: the launches in flight.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_LAUNCH_JOIN_H_
#define GPUATTR_COLLECTOR_ANALYSIS_LAUNCH_JOIN_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/trace_data.h"
#include "wire/protocol.h"

namespace gpuattr::collector {

// What the join counted, for the report's totals and loss.
struct LaunchCounts {
  uint64_t launches_seen = 0;       // distinct launches ever entered
  uint64_t unmatched_launches = 0;  // launches that left without a match
  uint64_t expired_launches = 0;    // unmatched launches the window dropped before the end
  uint64_t orphan_api_exits = 0;    // ApiExit with no launch in flight
  uint64_t zero_correlation_launches = 0;
  // The lowest and highest correlation id of the launches recorded (0: none): a window's
  // launches, everything between them (docs/attach.md §What a window's report covers).
  uint32_t first_correlation = 0;
  uint32_t last_correlation = 0;
};

class LaunchJoin {
 public:
  static constexpr uint64_t kEverything = std::numeric_limits<uint64_t>::max();

  // `window_ns`: how long after its enter time a launch may still be matched.
  explicit LaunchJoin(uint64_t window_ns) : window_ns_(window_ns) {}
  LaunchJoin(const LaunchJoin&) = delete;
  LaunchJoin& operator=(const LaunchJoin&) = delete;

  // A launch-like API call entered. Capture calls (no device work) are ignored; a second
  // ApiEnter of an id in flight is not a second launch.
  void Enter(const wire::ApiEnter& enter);
  void Exit(const wire::ApiExit& exit);
  // A graph node was created by the launch `correlation_id`: captured, it never runs itself.
  void MarkCaptured(uint32_t correlation_id) { captured_.insert(correlation_id); }

  // The launch of `correlation_id` in flight, marked matched; null when none (id 0 included).
  const LaunchRecord* Match(uint32_t correlation_id);
  // A window stream's activity without a launch: whether its id lies outside the launches
  // recorded so far (before any was recorded, every id does). Id 0 names no launch: never.
  bool OutsideWindow(uint32_t correlation_id) const;
  // The matched launch of a kernel, memcpy or memset leaves (`forget` is told).
  template <typename Forget>
  void Leave(uint32_t correlation_id, Forget&& forget) {
    auto it = launches_.find(correlation_id);
    if (it == launches_.end()) return;
    forget(it->first, it->second);
    launches_.erase(it);
  }
  // Launches the watermark passed by the window leave (kEverything: all, at the end), each told
  // to `forget`.
  template <typename Forget>
  void Expire(uint64_t watermark, Forget&& forget) {
    while (!order_.empty() &&
           (watermark == kEverything || order_.front().first + window_ns_ < watermark)) {
      const auto [enter, correlation] = order_.front();
      order_.pop_front();
      auto it = launches_.find(correlation);
      if (it == launches_.end() || it->second.enter_ns != enter) continue;
      if (watermark != kEverything && !it->second.matched) ++counts_.expired_launches;
      if (!it->second.matched && !captured_.contains(it->first)) ++counts_.unmatched_launches;
      captured_.erase(it->first);
      forget(it->first, it->second);
      launches_.erase(it);
    }
  }

  size_t in_flight() const { return launches_.size(); }
  const LaunchCounts& counts() const { return counts_; }

 private:
  const uint64_t window_ns_;
  std::unordered_map<uint32_t, LaunchRecord> launches_;  // by correlation id
  std::deque<std::pair<uint64_t, uint32_t>> order_;      // (enter_ns, correlation id)
  std::unordered_set<uint32_t> captured_;                // launches recorded into a graph
  // Smallest and largest correlation id of the launches recorded so far (0: none yet).
  LaunchCounts counts_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_LAUNCH_JOIN_H_
