// ReorderWindow: the analysis's sorter (docs/architecture.md §Streaming analysis). Device
// activities arrive late and out of order (CUPTI delivers buffers within its flush period, in no
// order); the window holds them and hands those below the watermark (the latest timestamp of the
// connection minus the window) to the join, in (key, arrival) order, so every fold sees them in
// start order.
//
// Activities are released in (key, arrival) order, the key being the start (for
// incomplete ones the latest timestamp at arrival, so they too wait for their launch). Activities
// arrive nearly in key order, so a calendar queue beats a heap: each lands at the end of the
// bucket of its key's ~1 ms slot, and a bucket is sorted once, when it is released, while a
// binary heap of the ~400,000 activities a 2 s window holds misses the cache at every level of
// every sift (docs/benchmarks.md §Collector ingest). Buckets are kept in a map, so keys from a
// hostile stream cost a sparse bucket each, never an array spanning them.
//
// Single-threaded, owned by one ProcessTrace.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_REORDER_WINDOW_H_
#define GPUATTR_COLLECTOR_ANALYSIS_REORDER_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "analysis/trace_data.h"

namespace gpuattr::collector {

class ReorderWindow {
 public:
  ReorderWindow() = default;
  ReorderWindow(const ReorderWindow&) = delete;
  ReorderWindow& operator=(const ReorderWindow&) = delete;

  // Adds an activity under `key` (its start; for one without timestamps the latest timestamp
  // at its arrival).
  void Push(const ActivityRecord& activity, uint64_t key) {
    const uint64_t slot = key >> kSlotShift;
    if (last_bucket_ == nullptr || last_slot_ != slot) {
      auto [it, created] = buckets_.try_emplace(slot);
      if (created && !spare_items_.empty()) {
        it->second.items = std::move(spare_items_.back());
        spare_items_.pop_back();
      }
      last_bucket_ = &it->second;
      last_slot_ = slot;
    }
    Bucket& bucket = *last_bucket_;
    bucket.items.push_back({activity, key, sequence_++});
    const size_t n = bucket.items.size();
    if (n - bucket.head >= 2 && bucket.items[n - 1] < bucket.items[n - 2]) bucket.sorted = false;
    ++size_;
  }

  size_t size() const { return size_; }

  // Hands every activity with key < watermark to `release`, in (key, arrival) order.
  template <typename Release>
  void ReleaseBelow(uint64_t watermark, Release&& release) {
    while (!buckets_.empty()) {
      auto first = buckets_.begin();
      Bucket& bucket = first->second;
      if (!bucket.sorted) {
        std::sort(bucket.items.begin() + static_cast<std::ptrdiff_t>(bucket.head),
                  bucket.items.end());
        bucket.sorted = true;
      }
      while (bucket.head < bucket.items.size() && bucket.items[bucket.head].key < watermark) {
        --size_;
        release(bucket.items[bucket.head++].activity);
      }
      if (bucket.head < bucket.items.size()) return;  // the rest is at or above the watermark
      if (last_bucket_ == &bucket) last_bucket_ = nullptr;
      if (spare_items_.size() < kSpareBuckets) {
        bucket.items.clear();  // keeps its capacity for the next bucket
        spare_items_.push_back(std::move(bucket.items));
      }
      buckets_.erase(first);
    }
  }

 private:
  static constexpr int kSlotShift = 20;  // 2^20 ns, about 1 ms of keys per bucket
  // Released buckets' storage, reused: a window's worth of allocating, growing and freeing
  // bucket vectors would cost more than the sorting. A bucket's capacity is its largest fill.
  static constexpr size_t kSpareBuckets = 64;
  struct Pending {
    ActivityRecord activity;
    uint64_t key = 0;
    uint64_t sequence = 0;
    bool operator<(const Pending& other) const {
      return key != other.key ? key < other.key : sequence < other.sequence;
    }
  };
  struct Bucket {
    std::vector<Pending> items;
    size_t head = 0;     // items before it were released
    bool sorted = true;  // items from head on are in order
  };
  std::map<uint64_t, Bucket> buckets_;  // by key >> kSlotShift
  size_t size_ = 0;
  uint64_t sequence_ = 0;
  Bucket* last_bucket_ = nullptr;  // the bucket of the latest push (map nodes do not move)
  uint64_t last_slot_ = 0;
  std::vector<std::vector<Pending>> spare_items_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_REORDER_WINDOW_H_
