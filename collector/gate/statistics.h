// The statistics behind `gpuattr gate`'s noise handling (docs/gate.md §Noise): the lower median
// and the Mann–Whitney U test of two independent samples of per-step values. Pure functions; any
// thread; no state.
//
// The U test needs no distributional assumption: under H0 (both samples drawn from one
// continuous distribution) every interleaving of the pooled ranks is equally likely. The p-value
// is exact (the permutation distribution of U, by dynamic programming) when there are no ties and
// both samples have at most kExactLimit values; otherwise it uses the normal approximation with
// the tie correction of the variance and a continuity correction of 0.5.
#ifndef GPUATTR_COLLECTOR_GATE_STATISTICS_H_
#define GPUATTR_COLLECTOR_GATE_STATISTICS_H_

#include <cstddef>
#include <optional>
#include <vector>

namespace gpuattr::collector {

inline constexpr size_t kExactLimit = 50;

// The alternative hypothesis, about `current` relative to `baseline`.
enum class Alternative { kGreater, kLess, kTwoSided };

struct UTest {
  double u = 0;        // pairs (baseline b, current c) with c > b, ties counting 1/2
  double p_value = 1;  // P(a U at least this extreme | H0) for the alternative
  bool exact = false;  // from the exact permutation distribution
};

// The lower median (an observed value); nullopt for an empty sample.
std::optional<double> LowerMedian(std::vector<double> values);

// The U test of `current` against `baseline`; both must be non-empty.
UTest MannWhitneyU(const std::vector<double>& baseline, const std::vector<double>& current,
                   Alternative alternative);

// The smallest p-value the test can give for these sample sizes (all of one sample above all of
// the other, no ties): when it exceeds α, the test can never reject and must not be relied on.
double SmallestPValue(size_t baseline_size, size_t current_size, Alternative alternative);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_GATE_STATISTICS_H_
