// IntervalUnion: the length of a union of intervals fed in start order, in O(1) memory.
//
// Every union the analysis computes is one of these (DESIGN §2: busy time is always a union,
// never a sum): per device, per stream, over all devices (the step rows' busy time) and per pass
// node. Activities leave the reorder window in start order, so the union is one open merged
// interval plus the total of those already closed; Add says when a merged interval closes, which
// is where a device's idle gap begins and where step rows take their share of busy time.
//
// Plain value; not thread-safe. Intervals must come with non-decreasing starts (an activity
// released out of order is `late` and is kept out of every union by its caller).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_INTERVAL_UNION_H_
#define GPUATTR_COLLECTOR_ANALYSIS_INTERVAL_UNION_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace gpuattr::collector {

using Interval = std::pair<uint64_t, uint64_t>;  // [first, second)

class IntervalUnion {
 public:
  // Adds [start, end); returns the merged interval this closed, if any. An interval starting at
  // or before the open one's end (touching included) extends it.
  std::optional<Interval> Add(uint64_t start, uint64_t end) {
    if (open_ && start <= current_.second) {
      current_.second = std::max(current_.second, end);
      return std::nullopt;
    }
    std::optional<Interval> closed;
    if (open_) {
      closed_ns_ += current_.second - current_.first;
      closed = current_;
    }
    current_ = {start, end};
    open_ = true;
    return closed;
  }

  // The union's length so far, the open interval included.
  uint64_t Total() const { return closed_ns_ + (open_ ? current_.second - current_.first : 0); }
  bool empty() const { return !open_; }
  // The open merged interval; meaningful unless empty().
  const Interval& current() const { return current_; }

 private:
  Interval current_{0, 0};
  bool open_ = false;
  uint64_t closed_ns_ = 0;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_INTERVAL_UNION_H_
