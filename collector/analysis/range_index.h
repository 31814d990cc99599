// Instances of one NVTX range on the host timeline, indexed for the question the step fold asks
// for every activity (docs/attribution.md §Steps): which instances overlap [lo, hi] (a launch
// time is lo == hi; a merged busy interval is wider).
//
// A range closes after it is indexed (its pop arrives later), so each entry reads its end through
// a pointer to the history's end_ns, kOpenEnd while open. Open entries are kept apart and visited
// by every query; there are at most as many as ranges pushed and not yet popped. Closed entries
// are bucketed by length class, class c holding lengths below 2^c and at least 2^(c-1), each
// bucket sorted by start; a query visits only the classes in use (a bit set of them) and looks
// in bucket c only at starts in [lo - (2^c - 1), hi]. So
// one instance that lasted seconds (a thread preempted inside it) costs a query one more bucket,
// not a walk back over every short instance of those seconds, and a query costs the classes in
// use plus about twice the instances it visits. Queries arrive roughly in time order: each bucket
// remembers where the last one started and gallops from there.
//
// Not thread-safe; the fold owns one per range key.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_RANGE_INDEX_H_
#define GPUATTR_COLLECTOR_ANALYSIS_RANGE_INDEX_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/check.h"

namespace gpuattr::collector {

class RangeIndex {
 public:
  static constexpr uint64_t kOpenEnd = ~uint64_t{0};

  // `end_ns` must stay valid, hold kOpenEnd while the range is open and then an end at or after
  // `start_ns` (TraceData clamps every pop so).
  void Add(size_t id, uint64_t start_ns, const uint64_t* end_ns) {
    open_.push_back({start_ns, end_ns, id});
  }

  // Calls visit(id) for every instance with start_ns <= hi and end_ns >= lo (an open one's end
  // is kOpenEnd), each once, in no particular order.
  template <typename Visit>
  void ForEachOverlapping(uint64_t lo, uint64_t hi, Visit visit) {
    SettleOpen();
    for (const Entry& entry : open_) {
      if (entry.start_ns <= hi) visit(entry.id);
    }
    for (uint64_t rest = classes_in_use_; rest != 0; rest &= rest - 1) {
      VisitClass(static_cast<size_t>(std::countr_zero(rest)), lo, hi, visit);
    }
    if (longest_class_in_use_) VisitClass(kClasses - 1, lo, hi, visit);
  }

 private:
  struct Entry {
    uint64_t start_ns;
    const uint64_t* end_ns;
    size_t id;
  };
  struct Bucket {
    std::vector<Entry> entries;  // by start
    size_t cursor = 0;           // where the last query's scan began

    // Gallops from the cursor to the first entry starting at or after t.
    size_t FirstStartingAtOrAfter(uint64_t t) {
      const auto starts_before = [](const Entry& entry, uint64_t value) {
        return entry.start_ns < value;
      };
      size_t low = 0;
      size_t high = entries.size();
      const size_t at = std::min(cursor, entries.size());
      if (at < entries.size() && entries[at].start_ns < t) {
        low = at + 1;  // forward: the answer is past `at`
        for (size_t step = 1; low + step < entries.size(); step *= 2) {
          if (entries[low + step].start_ns >= t) {
            high = low + step;
            break;
          }
          low += step;
        }
      } else {
        high = at;  // backward: the answer is at or before `at`
        for (size_t step = 1; step <= high; step *= 2) {
          if (entries[high - step].start_ns < t) {
            low = high - step + 1;
            break;
          }
          high -= step;
        }
      }
      cursor = static_cast<size_t>(
          std::lower_bound(entries.begin() + static_cast<std::ptrdiff_t>(low),
                           entries.begin() + static_cast<std::ptrdiff_t>(high), t, starts_before) -
          entries.begin());
      return cursor;
    }
  };

  static constexpr size_t kClasses = 65;  // std::bit_width of a length: 0 (empty) to 64

  template <typename Visit>
  void VisitClass(size_t c, uint64_t lo, uint64_t hi, Visit& visit) {
    Bucket& bucket = buckets_[c];
    const uint64_t longest = c == kClasses - 1 ? ~uint64_t{0} : (uint64_t{1} << c) - 1;
    const uint64_t from = lo > longest ? lo - longest : 0;
    for (size_t i = bucket.FirstStartingAtOrAfter(from); i < bucket.entries.size(); ++i) {
      const Entry& entry = bucket.entries[i];
      if (entry.start_ns > hi) break;
      if (*entry.end_ns >= lo) visit(entry.id);
    }
  }

  // Moves the entries whose range closed since into their length's bucket. A batch can be every
  // range of the run (when activities are released at the end), so it is sorted and merged into
  // each bucket's tail rather than inserted entry by entry.
  void SettleOpen() {
    settled_.clear();
    size_t kept = 0;
    for (const Entry& entry : open_) {
      if (*entry.end_ns == kOpenEnd) {
        open_[kept++] = entry;
      } else {
        settled_.emplace_back(static_cast<size_t>(std::bit_width(*entry.end_ns - entry.start_ns)),
                              entry);
      }
    }
    open_.resize(kept);
    if (settled_.empty()) return;
    std::sort(settled_.begin(), settled_.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.start_ns < b.second.start_ns;
    });
    for (size_t i = 0; i < settled_.size();) {
      GPUATTR_DCHECK(settled_[i].first < kClasses);  // bit_width of a uint64_t is <= 64
      const size_t length_class = settled_[i].first;
      if (length_class == kClasses - 1) {
        longest_class_in_use_ = true;
      } else {
        classes_in_use_ |= uint64_t{1} << length_class;
      }
      std::vector<Entry>& entries = buckets_[length_class].entries;
      const auto old_end = static_cast<std::ptrdiff_t>(entries.size());
      for (const size_t bucket = settled_[i].first;
           i < settled_.size() && settled_[i].first == bucket; ++i) {
        entries.push_back(settled_[i].second);
      }
      // Ranges close roughly in start order, so the merge usually touches only the tail.
      const auto first_later = std::upper_bound(
          entries.begin(), entries.begin() + old_end, entries[old_end].start_ns,
          [](uint64_t start, const Entry& other) { return start < other.start_ns; });
      std::inplace_merge(first_later, entries.begin() + old_end, entries.end(),
                         [](const Entry& a, const Entry& b) { return a.start_ns < b.start_ns; });
    }
  }

  std::vector<Entry> open_;                        // in the order added
  std::vector<std::pair<size_t, Entry>> settled_;  // SettleOpen's scratch: (bucket, entry)
  std::array<Bucket, kClasses> buckets_;           // by std::bit_width(length)
  uint64_t classes_in_use_ = 0;                    // bit c: bucket c (below 64) holds entries
  bool longest_class_in_use_ = false;              // bucket 64 holds entries
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_RANGE_INDEX_H_
