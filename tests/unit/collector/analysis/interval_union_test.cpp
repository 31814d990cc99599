// IntervalUnion and Samples: the two accumulators every fold unit builds on.
#include "analysis/interval_union.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "analysis/samples.h"

namespace gpuattr::collector::testing {
namespace {

TEST_CASE("a union of intervals in start order merges overlaps and touching ends",
          "[unit][interval_union]") {
  IntervalUnion busy;
  CHECK(busy.empty());
  CHECK(busy.Total() == 0);
  CHECK_FALSE(busy.Add(100, 200));
  CHECK_FALSE(busy.Add(150, 180));  // inside
  CHECK_FALSE(busy.Add(200, 250));  // touching: one interval
  CHECK(busy.Total() == 150);
  const auto closed = busy.Add(300, 310);
  REQUIRE(closed);
  CHECK(closed->first == 100);
  CHECK(closed->second == 250);
  CHECK(busy.current() == Interval{300, 310});
  CHECK(busy.Total() == 160);
  CHECK_FALSE(busy.empty());
}

TEST_CASE("bounded samples keep count, total, min and max exact past the reservoir",
          "[unit][samples]") {
  Samples<uint64_t> samples;
  CHECK(samples.median() == 0);
  for (uint64_t v : {5, 1, 9, 3}) samples.Add(v);
  CHECK(samples.exact());
  CHECK(samples.median() == 3);  // the lower median of 1 3 5 9
  const DurationStats summary = samples.Summary();
  CHECK(summary.count == 4);
  CHECK(summary.total == 18);
  CHECK(summary.min == 1);
  CHECK(summary.max == 9);
  CHECK(summary.median_exact);

  Samples<uint64_t> many;
  const uint64_t n = Samples<uint64_t>::kExactSamples + 10;
  for (uint64_t i = 1; i <= n; ++i) many.Add(i);
  CHECK_FALSE(many.exact());
  CHECK(many.count() == n);
  CHECK(many.total() == n * (n + 1) / 2);
  CHECK(many.min() == 1);
  CHECK(many.max() == n);

  Samples<uint64_t> merged;
  merged.Merge(samples);
  merged.Merge(samples);
  CHECK(merged.count() == 8);
  CHECK(merged.total() == 36);
}

TEST_CASE("sums of hostile timestamps clamp instead of overflowing", "[unit][samples]") {
  Samples<int64_t> samples;
  samples.Add(INT64_MAX);
  samples.Add(1);
  CHECK(samples.total() == INT64_MAX);
  std::vector<uint64_t> none;
  CHECK(Summarize(none).count == 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
