// The Mann–Whitney U test: exact values for small samples, ties, the smallest reachable p-value,
// and its false-alarm and detection rates on simulated noise (the numbers docs/gate.md quotes).
#include "gate/statistics.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <vector>

namespace gpuattr::collector::testing {
namespace {

// One step's device time in the simulator's noise model: the sum of kernels of the given
// durations, each drawn uniformly within ±jitter (tests/simgpu/README.md, op `jitter`).
double SimulatedStep(std::mt19937_64& rng, const std::vector<double>& kernels, double scale,
                     double jitter) {
  std::uniform_real_distribution<double> draw(-jitter, jitter);
  double sum = 0;
  for (double us : kernels) sum += us * scale * (1 + draw(rng));
  return sum;
}

std::vector<double> Sample(std::mt19937_64& rng, size_t steps, double scale) {
  const std::vector<double> forward = {300, 120, 80};  // tests/scenarios/gate_baseline.json
  std::vector<double> out;
  for (size_t i = 0; i < steps; ++i) out.push_back(SimulatedStep(rng, forward, scale, 0.1));
  return out;
}

TEST_CASE("U test: exact p-values of small samples", "[unit][gate]") {
  // All 3 current values above all 3 baseline values: 1 arrangement of C(6,3) = 20.
  const UTest all_above = MannWhitneyU({1, 2, 3}, {4, 5, 6}, Alternative::kGreater);
  CHECK(all_above.exact);
  CHECK(all_above.u == 9);
  CHECK(all_above.p_value == Approx(1.0 / 20));
  CHECK(MannWhitneyU({1, 2, 3}, {4, 5, 6}, Alternative::kLess).p_value == Approx(1.0));
  CHECK(MannWhitneyU({1, 2, 3}, {4, 5, 6}, Alternative::kTwoSided).p_value == Approx(2.0 / 20));
  // U = 8 (one swap): arrangements with U >= 8 are 2 of 20.
  CHECK(MannWhitneyU({1, 2, 4}, {3, 5, 6}, Alternative::kGreater).p_value == Approx(2.0 / 20));
  CHECK(SmallestPValue(3, 3, Alternative::kGreater) == Approx(0.05));
  CHECK(SmallestPValue(2, 2, Alternative::kLess) == Approx(1.0 / 6));
  CHECK(SmallestPValue(24, 24, Alternative::kGreater) < 1e-12);
}

TEST_CASE("U test: ties use the normal approximation with the tie correction", "[unit][gate]") {
  const UTest tied = MannWhitneyU({1, 1, 2, 2}, {2, 2, 3, 3}, Alternative::kGreater);
  CHECK_FALSE(tied.exact);
  CHECK(tied.u == 14);  // 3, 3 beat all 4; each 2 beats two 1s and ties two 2s
  CHECK(tied.p_value < 0.05);
  CHECK(MannWhitneyU({5, 5, 5}, {5, 5, 5}, Alternative::kGreater).p_value == 1);
  // Large samples take the approximation too, and it agrees with the exact tail.
  std::mt19937_64 rng(3);
  const std::vector<double> a = Sample(rng, 40, 1.0), b = Sample(rng, 40, 1.03);
  const UTest exact = MannWhitneyU(a, b, Alternative::kGreater);
  std::vector<double> a_big = a, b_big = b;
  a_big.insert(a_big.end(), a.begin(), a.begin() + 11);  // 51 values: beyond kExactLimit
  CHECK(exact.exact);
  CHECK_FALSE(MannWhitneyU(a_big, b, Alternative::kGreater).exact);
}

TEST_CASE("U test: false-alarm and detection rates on 1000 simulated pairs", "[unit][gate]") {
  constexpr int kPairs = 1000;
  constexpr double kAlpha = 0.01;
  std::mt19937_64 rng(20240601);
  int false_alarms = 0;
  int detected = 0;
  for (int i = 0; i < kPairs; ++i) {
    const std::vector<double> base = Sample(rng, 24, 1.0);
    const std::vector<double> same = Sample(rng, 24, 1.0);
    const std::vector<double> slow = Sample(rng, 24, 1.1);
    false_alarms += MannWhitneyU(base, same, Alternative::kGreater).p_value <= kAlpha ? 1 : 0;
    detected += MannWhitneyU(base, slow, Alternative::kGreater).p_value <= kAlpha ? 1 : 0;
  }
  std::printf(
      "U test at alpha %.2f on %d simulated pairs of 24 steps: false alarms %d, "
      "10 %% slowdowns detected %d\n",
      kAlpha, kPairs, false_alarms, detected);
  // Binomial(1000, 0.01): mean 10, sd 3.1; 25 is ~5 sd out. The exact test is never above α.
  CHECK(false_alarms <= 25);
  CHECK(detected >= 990);
}

TEST_CASE("lower median is an observed value", "[unit][gate]") {
  CHECK(*LowerMedian({4, 1, 3, 2}) == 2);
  CHECK(*LowerMedian({5, 1, 3}) == 3);
  CHECK_FALSE(LowerMedian({}).has_value());
}

}  // namespace
}  // namespace gpuattr::collector::testing
