// CategoryUnions: busy time by what ran (docs/attribution.md §Compute, communication and
// memory), as unions of activity intervals fed in start order: collective kernels, other kernels,
// copies and sets, and compute and communication together, whose lengths give the overlap,
// |communication ∩ compute| = |communication| + |compute| - |communication ∪ compute|.
//
// DeviceSweep keeps one per device; StepFold one over all devices, and gives each step instance
// its share of every merged interval as it closes.
//
// Plain value; not thread-safe. Intervals must come with non-decreasing starts (late activities
// are kept out by the callers).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_CATEGORY_UNIONS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_CATEGORY_UNIONS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "analysis/interval_union.h"
#include "analysis/process_analysis.h"

namespace gpuattr::collector {

// What a device activity counts as in CategoryBusy.
enum class WorkCategory : uint8_t { kCompute, kCommunication, kMemory };

class CategoryUnions {
 public:
  enum Union : size_t { kCompute, kCommunication, kMemory, kComputeOrCommunication, kUnions };
  using Lengths = std::array<uint64_t, kUnions>;

  // Adds [start, end) of `category`; calls closed(Union, const Interval&) for each merged
  // interval this closed.
  template <typename Closed>
  void Add(WorkCategory category, uint64_t start, uint64_t end, Closed&& closed) {
    const auto add = [&](Union which) {
      if (const auto interval = unions_[which].Add(start, end)) closed(which, *interval);
    };
    switch (category) {
      case WorkCategory::kCompute:
        add(kCompute);
        add(kComputeOrCommunication);
        break;
      case WorkCategory::kCommunication:
        add(kCommunication);
        add(kComputeOrCommunication);
        break;
      case WorkCategory::kMemory:
        add(kMemory);
        break;
    }
  }
  void Add(WorkCategory category, uint64_t start, uint64_t end) {
    Add(category, start, end, [](Union, const Interval&) {});
  }

  // Calls open(Union, const Interval&) for each union's open merged interval (at the end).
  template <typename Open>
  void ForEachOpen(Open&& open) const {
    for (size_t which = 0; which < kUnions; ++which) {
      if (!unions_[which].empty()) open(static_cast<Union>(which), unions_[which].current());
    }
  }

  Lengths Totals() const {
    Lengths totals{};
    for (size_t which = 0; which < kUnions; ++which) totals[which] = unions_[which].Total();
    return totals;
  }

  // The report's terms from the unions' lengths (over any one window of time).
  static CategoryBusy BusyOf(const Lengths& lengths) {
    CategoryBusy busy;
    busy.compute_ns = lengths[kCompute];
    busy.communication_ns = lengths[kCommunication];
    busy.memory_ns = lengths[kMemory];
    busy.communication_hidden_ns =
        lengths[kCompute] + lengths[kCommunication] - lengths[kComputeOrCommunication];
    busy.communication_exposed_ns = busy.communication_ns - busy.communication_hidden_ns;
    return busy;
  }

 private:
  std::array<IntervalUnion, kUnions> unions_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_CATEGORY_UNIONS_H_
