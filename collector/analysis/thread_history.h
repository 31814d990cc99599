// ThreadHistory: "which range was open on thread T at time t", read from the threads' push/pop
// histories as they stand (TraceData::history, push order).
//
// Attribution rule 2 (inheritance from the main thread), a gap's host range, the phase the main
// thread was in at an unattributed launch and the step a backward thread's launch is in all ask it.
// Ranges of one thread nest (a stack), so the innermost one open at t is the last range pushed at
// or before t or one of its ancestors: a binary search, then a walk up the parent links until a
// range still contains t. Ranges with node 0 name no path and are skipped.
//
// Reads TraceData, const; single-threaded, on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_THREAD_HISTORY_H_
#define GPUATTR_COLLECTOR_ANALYSIS_THREAD_HISTORY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "analysis/trace_data.h"

namespace gpuattr::collector {

class ThreadHistory {
 public:
  explicit ThreadHistory(const TraceData& data) : data_(data) {}

  // The path node innermost-open on `tid` at `t` ([start, end) contains t), 0 when none.
  uint32_t InnermostAt(uint32_t tid, uint64_t t) const {
    auto it = data_.history.find(tid);
    if (it == data_.history.end()) return 0;
    const auto& entries = it->second;
    int64_t i = LastPushAtOrBefore(entries, t);
    while (i >= 0) {
      const HistoryEntry& entry = entries[static_cast<size_t>(i)];
      if (entry.end_ns > t && entry.node != 0) return entry.node;
      i = entry.parent;
    }
    return 0;
  }

  // The start of the instance of `node`'s range open on `tid` at `t`; empty when none is.
  std::optional<uint64_t> StartOfOpen(uint32_t tid, uint64_t t, uint32_t node) const {
    auto it = data_.history.find(tid);
    if (it == data_.history.end()) return std::nullopt;
    const auto& entries = it->second;
    for (int64_t i = LastPushAtOrBefore(entries, t); i >= 0;) {
      const HistoryEntry& entry = entries[static_cast<size_t>(i)];
      if (entry.end_ns > t && entry.node == node) return entry.start_ns;
      i = entry.parent;
    }
    return std::nullopt;
  }

  // The start of the outermost range open on `tid` at `t` (the step, on the main thread), named or
  // not; empty when none is open.
  std::optional<uint64_t> OutermostStartAt(uint32_t tid, uint64_t t) const {
    auto it = data_.history.find(tid);
    if (it == data_.history.end()) return std::nullopt;
    const auto& entries = it->second;
    int64_t i = LastPushAtOrBefore(entries, t);
    std::optional<uint64_t> outermost;
    while (i >= 0) {
      const HistoryEntry& entry = entries[static_cast<size_t>(i)];
      if (entry.end_ns > t) outermost = entry.start_ns;
      i = entry.parent;
    }
    return outermost;
  }

 private:
  // Index of the last entry pushed at or before t; -1 when none.
  static int64_t LastPushAtOrBefore(const std::deque<HistoryEntry>& entries, uint64_t t) {
    auto after =
        std::upper_bound(entries.begin(), entries.end(), t,
                         [](uint64_t value, const HistoryEntry& e) { return value < e.start_ns; });
    return static_cast<int64_t>(after - entries.begin()) - 1;
  }

  const TraceData& data_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_THREAD_HISTORY_H_
