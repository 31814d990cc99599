// RangeIndex (collector/analysis/range_index.h): every query visits exactly the instances a
// brute-force scan finds, while ranges close between queries, lengths span nanoseconds to
// seconds and queries wander back and forth in time as released activities do.
#include "analysis/range_index.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace gpuattr::collector {
namespace {

constexpr uint64_t kOpen = RangeIndex::kOpenEnd;

struct Range {
  uint64_t start = 0;
  uint64_t end = kOpen;  // what the index reads through its pointer
  uint64_t closes_at = 0;
};

std::vector<size_t> Visited(RangeIndex& index, uint64_t lo, uint64_t hi) {
  std::vector<size_t> ids;
  index.ForEachOverlapping(lo, hi, [&](size_t id) { ids.push_back(id); });
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<size_t> BruteForce(const std::deque<Range>& ranges, uint64_t lo, uint64_t hi) {
  std::vector<size_t> ids;
  for (size_t id = 0; id < ranges.size(); ++id) {
    if (ranges[id].start <= hi && ranges[id].end >= lo) ids.push_back(id);
  }
  return ids;
}

TEST_CASE("RangeIndex visits open ranges, and closed ones while they overlap", "[unit][steps]") {
  std::deque<Range> ranges = {{100, kOpen}, {150, kOpen}, {400, 420}};
  RangeIndex index;
  for (size_t id = 0; id < ranges.size(); ++id) index.Add(id, ranges[id].start, &ranges[id].end);

  CHECK(Visited(index, 50, 99).empty());
  CHECK(Visited(index, 120, 120) == std::vector<size_t>{0});
  CHECK(Visited(index, 410, 410) == std::vector<size_t>{0, 1, 2});
  ranges[0].end = 200;  // closes after it was indexed
  CHECK(Visited(index, 200, 200) == std::vector<size_t>{0, 1});
  CHECK(Visited(index, 201, 399) == std::vector<size_t>{1});
  CHECK(Visited(index, 0, kOpen) == std::vector<size_t>{0, 1, 2});
  CHECK(Visited(index, 421, kOpen) == std::vector<size_t>{1});
}

TEST_CASE("RangeIndex finds instances of the shortest and the longest length classes",
          "[unit][steps]") {
  // Length 0 is class 0; a length of 2^63 or more is class 64, past the bit set's word.
  std::deque<Range> ranges = {{10, 10}, {20, 20 + (uint64_t{1} << 63)}, {30, 35}};
  RangeIndex index;
  for (size_t id = 0; id < ranges.size(); ++id) index.Add(id, ranges[id].start, &ranges[id].end);
  CHECK(Visited(index, 10, 10) == std::vector<size_t>{0});
  CHECK(Visited(index, 32, 32) == std::vector<size_t>{1, 2});
  CHECK(Visited(index, uint64_t{1} << 62, uint64_t{1} << 62) == std::vector<size_t>{1});
  CHECK(Visited(index, 0, kOpen) == std::vector<size_t>{0, 1, 2});
}

TEST_CASE("RangeIndex agrees with a brute-force scan on nested ranges of many threads",
          "[unit][steps]") {
  std::mt19937_64 random(20261201);
  std::deque<Range> ranges;
  RangeIndex index;
  // 16 threads, each a stack of nested ranges; lengths from 0 ns to about a second, rarely long
  // (a thread preempted inside its range), so buckets differ by orders of magnitude.
  std::vector<uint64_t> clock(16, 0);
  std::vector<std::vector<size_t>> stacks(16);
  uint64_t now = 0;
  size_t queries = 0;
  for (int step = 0; step < 20000; ++step) {
    const size_t thread = random() % clock.size();
    clock[thread] = std::max(clock[thread], now) + random() % 50;
    now = std::max(now, clock[thread]);
    std::vector<size_t>& stack = stacks[thread];
    if (stack.size() < 4 && random() % 2 == 0) {
      const uint64_t length = random() % 100 == 0 ? random() % 1'000'000'000 : random() % 2000;
      const size_t id = ranges.size();
      ranges.push_back({clock[thread], kOpen, clock[thread] + length});
      index.Add(id, ranges[id].start, &ranges[id].end);
      stack.push_back(id);
    } else if (!stack.empty()) {
      // Pops close the innermost range, at or after every range pushed inside it closed.
      Range& range = ranges[stack.back()];
      range.end = std::max(range.closes_at, clock[thread]);
      clock[thread] = range.end;
      stack.pop_back();
    }
    if (step % 7 != 0) continue;
    // Queries mostly near the present, sometimes far back, sometimes wide.
    const uint64_t back = random() % 8 == 0 ? random() % (now + 1) : random() % 5000;
    const uint64_t lo = now > back ? now - back : 0;
    const uint64_t hi = random() % 4 == 0 ? lo + random() % 100000 : lo;
    REQUIRE(Visited(index, lo, hi) == BruteForce(ranges, lo, hi));
    ++queries;
  }
  CHECK(queries > 2000);
  CHECK(Visited(index, 0, kOpen).size() == ranges.size());
}

}  // namespace
}  // namespace gpuattr::collector
