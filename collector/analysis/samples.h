// Bounded samples of one statistic (a family's launch costs, a pass's host durations) and the
// summaries the report prints of them.
//
// Samples<T> keeps every sample up to kExactSamples, then a uniform reservoir of that many
// (Vitter's algorithm R with a fixed seed, so a report is reproducible): memory stays bounded
// however long the run, count, total, min and max stay exact, and median_exact says whether the
// median is the exact one (docs/attribution.md §Kernel families, §Passes).
//
// SampleSummary is what the report says of a Samples, and all that merging reports can read back:
// exact count, total, min and max, and the median, which only the samples themselves give. A
// union of several summaries keeps the exact four and loses the median (the median of a union is
// no function of its parts' medians), so a summary over several processes says the same whether
// it was merged from their analyses or from their reports (docs/attribution.md §Kernel families).
//
// Plain values; not thread-safe. Used by the fold units on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_SAMPLES_H_
#define GPUATTR_COLLECTOR_ANALYSIS_SAMPLES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

namespace gpuattr::collector {

struct DurationStats {
  uint64_t count = 0;
  uint64_t total = 0;
  uint64_t min = 0;
  uint64_t median = 0;  // the lower median: always an observed duration
  uint64_t max = 0;
  bool median_exact = true;  // false: the median of a uniform sample (Samples below)
};

template <typename T>
class Samples {
 public:
  static constexpr size_t kExactSamples = 65536;

  // Timestamps come from the wire: a hostile or broken stream can make sums overflow, which must
  // clamp rather than be undefined.
  static T SaturatingAdd(T a, T b) {
    T sum;
    if (!__builtin_add_overflow(a, b, &sum)) return sum;
    return b > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
  }

  void Add(T value) {
    if (count_ == 0) {
      min_ = max_ = value;
    } else {
      min_ = std::min(min_, value);
      max_ = std::max(max_, value);
    }
    ++count_;
    total_ = SaturatingAdd(total_, value);
    if (kept_.size() < kExactSamples) {
      kept_.push_back(value);
      return;
    }
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG (Knuth MMIX)
    const uint64_t slot = (rng_ >> 11) % count_;
    if (slot < kept_.size()) kept_[static_cast<size_t>(slot)] = value;
  }
  // Adds `other`'s samples as if they had been added here one by one; its exact count, total,
  // min and max carry over (a merged reservoir is a sample, and says so).
  void Merge(const Samples& other) {
    if (other.count_ == 0) return;
    const T min = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    const T max = count_ == 0 ? other.max_ : std::max(max_, other.max_);
    const uint64_t count = count_ + other.count_;
    const T total = SaturatingAdd(total_, other.total_);
    for (T value : other.kept_) Add(value);
    count_ = count;
    total_ = total;
    min_ = min;
    max_ = max;
  }

  uint64_t count() const { return count_; }
  T total() const { return total_; }
  T min() const { return min_; }
  T max() const { return max_; }
  bool exact() const { return count_ == kept_.size(); }
  // The lower median of the kept samples (an observed value); 0 without samples.
  T median() const {
    if (kept_.empty()) return 0;
    std::vector<T> sorted = kept_;
    auto middle = sorted.begin() + static_cast<std::ptrdiff_t>((sorted.size() - 1) / 2);
    std::nth_element(sorted.begin(), middle, sorted.end());
    return *middle;
  }
  // count, total, min, lower median, max and whether the median is exact.
  DurationStats Summary() const {
    return {count(),
            static_cast<uint64_t>(total()),
            static_cast<uint64_t>(min()),
            static_cast<uint64_t>(median()),
            static_cast<uint64_t>(max()),
            exact()};
  }

 private:
  std::vector<T> kept_;
  uint64_t count_ = 0;
  T total_ = 0;
  T min_ = 0;
  T max_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ULL;
};

template <typename T>
struct SampleSummary {
  uint64_t count = 0;
  T total = 0;  // saturating, like Samples::total
  T min = 0;
  T max = 0;
  std::optional<T> median;           // the lower median; empty for a union of several summaries
  std::optional<bool> median_exact;  // with the median: Samples::exact

  static SampleSummary Of(const Samples<T>& samples) {
    SampleSummary summary;
    summary.count = samples.count();
    summary.total = samples.total();
    summary.min = samples.min();
    summary.max = samples.max();
    if (samples.count() > 0) {
      summary.median = samples.median();
      summary.median_exact = samples.exact();
    }
    return summary;
  }
  // The union with `other`: exact count, total, min and max; the median survives only when one
  // side has no samples.
  void Merge(const SampleSummary& other) {
    if (other.count == 0) return;
    if (count == 0) {
      *this = other;
      return;
    }
    count += other.count;
    total = Samples<T>::SaturatingAdd(total, other.total);
    min = std::min(min, other.min);
    max = std::max(max, other.max);
    median.reset();
    median_exact.reset();
  }
};

// Lower median, min, max and total of `durations` (reordered). Empty input -> count 0.
inline DurationStats Summarize(std::vector<uint64_t>& durations) {
  DurationStats stats;
  if (durations.empty()) return stats;
  std::sort(durations.begin(), durations.end());
  stats.count = durations.size();
  stats.total = std::accumulate(durations.begin(), durations.end(), uint64_t{0});
  stats.min = durations.front();
  stats.max = durations.back();
  stats.median = durations[(durations.size() - 1) / 2];
  return stats;
}

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_SAMPLES_H_
