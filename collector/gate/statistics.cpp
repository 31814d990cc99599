// LowerMedian, MannWhitneyU and SmallestPValue (statistics.h).
#include "gate/statistics.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuattr::collector {
namespace {

// P(U >= u_min) under H0 for sample sizes n (baseline) and m (current), no ties; U counts the
// pairs where the current value is larger. Built up by the last (largest) value of the pooled
// sample: a current value there adds n to U, a baseline value adds 0. prob[i][j][u] is kept for
// one i at a time (rows i-1 and i), so memory is O(m · n · m).
double ExactUpperTail(size_t n, size_t m, double u_min) {
  const size_t max_u = n * m;
  std::vector<std::vector<double>> previous(m + 1), current(m + 1);
  for (size_t i = 0; i <= n; ++i) {
    for (size_t j = 0; j <= m; ++j) {
      std::vector<double>& cell = current[j];
      cell.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        cell[0] = 1.0;
        continue;
      }
      const double share_current = static_cast<double>(j) / static_cast<double>(i + j);
      const std::vector<double>& from_current = current[j - 1];  // (i, j-1): U shifted by i
      const std::vector<double>& from_baseline = previous[j];    // (i-1, j): U unchanged
      for (size_t u = 0; u < cell.size(); ++u) {
        double p = 0;
        if (u >= i && u - i < from_current.size()) p += share_current * from_current[u - i];
        if (u < from_baseline.size()) p += (1.0 - share_current) * from_baseline[u];
        cell[u] = p;
      }
    }
    std::swap(previous, current);
  }
  const std::vector<double>& distribution = previous[m];
  double tail = 0;
  for (size_t u = 0; u <= max_u; ++u) {
    if (static_cast<double>(u) >= u_min - 1e-9) tail += distribution[u];
  }
  return std::min(1.0, tail);
}

double NormalUpperTail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

std::optional<double> LowerMedian(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const size_t middle = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                   values.end());
  return values[middle];
}

UTest MannWhitneyU(const std::vector<double>& baseline, const std::vector<double>& current,
                   Alternative alternative) {
  const size_t n = baseline.size();
  const size_t m = current.size();
  UTest result;
  if (n == 0 || m == 0) return result;
  // Midranks of the pooled sample; tie groups feed the variance correction.
  std::vector<std::pair<double, bool>> pooled;  // (value, is current)
  pooled.reserve(n + m);
  for (double v : baseline) pooled.emplace_back(v, false);
  for (double v : current) pooled.emplace_back(v, true);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_current = 0;
  double tie_term = 0;  // sum of t^3 - t over tie groups
  for (size_t start = 0; start < pooled.size();) {
    size_t end = start + 1;
    while (end < pooled.size() && pooled[end].first == pooled[start].first) ++end;
    const double midrank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2.0;
    for (size_t k = start; k < end; ++k) {
      if (pooled[k].second) rank_sum_current += midrank;
    }
    const double t = static_cast<double>(end - start);
    tie_term += t * t * t - t;
    start = end;
  }
  const double dn = static_cast<double>(n);
  const double dm = static_cast<double>(m);
  result.u = rank_sum_current - dm * (dm + 1) / 2.0;
  const double u_low = dn * dm - result.u;  // the U of the opposite direction

  if (tie_term == 0 && n <= kExactLimit && m <= kExactLimit) {
    result.exact = true;
    const double greater = ExactUpperTail(n, m, result.u);
    const double less = ExactUpperTail(n, m, u_low);  // symmetric distribution of U
    switch (alternative) {
      case Alternative::kGreater:
        result.p_value = greater;
        break;
      case Alternative::kLess:
        result.p_value = less;
        break;
      case Alternative::kTwoSided:
        result.p_value = std::min(1.0, 2 * std::min(greater, less));
        break;
    }
    return result;
  }
  const double total = dn + dm;
  const double mean = dn * dm / 2.0;
  const double variance = dn * dm / 12.0 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) {  // every value equal: no evidence either way
    result.p_value = 1;
    return result;
  }
  const double sd = std::sqrt(variance);
  const double greater = NormalUpperTail((result.u - mean - 0.5) / sd);
  const double less = NormalUpperTail((mean - result.u - 0.5) / sd);
  switch (alternative) {
    case Alternative::kGreater:
      result.p_value = std::min(1.0, greater);
      break;
    case Alternative::kLess:
      result.p_value = std::min(1.0, less);
      break;
    case Alternative::kTwoSided:
      result.p_value = std::min(1.0, 2 * std::min(greater, less));
      break;
  }
  return result;
}

double SmallestPValue(size_t baseline_size, size_t current_size, Alternative alternative) {
  // The most extreme arrangement in the alternative's direction (kTwoSided: either one).
  const bool current_low = alternative == Alternative::kLess;
  std::vector<double> baseline(baseline_size), current(current_size);
  for (size_t i = 0; i < baseline_size; ++i) {
    baseline[i] = static_cast<double>(current_low ? current_size + i : i);
  }
  for (size_t j = 0; j < current_size; ++j) {
    current[j] = static_cast<double>(current_low ? j : baseline_size + j);
  }
  return MannWhitneyU(baseline, current, alternative).p_value;
}

}  // namespace gpuattr::collector
