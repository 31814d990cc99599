// ReorderWindow: activities come back in (key, arrival) order, only below the watermark, across
// buckets and after out-of-order pushes.
#include "analysis/reorder_window.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace gpuattr::collector::testing {
namespace {

ActivityRecord WithCorrelation(uint32_t correlation) {
  ActivityRecord activity;
  activity.correlation_id = correlation;
  return activity;
}

TEST_CASE("activities leave in key order, ties in arrival order, only below the watermark",
          "[unit][reorder_window]") {
  ReorderWindow window;
  const uint64_t kBucket = uint64_t{1} << 20;
  window.Push(WithCorrelation(1), 50);
  window.Push(WithCorrelation(2), 10);           // earlier key, later arrival
  window.Push(WithCorrelation(3), 3 * kBucket);  // another bucket
  window.Push(WithCorrelation(4), 10);           // a tie: after 2
  window.Push(WithCorrelation(5), kBucket + 1);  // between, pushed last
  CHECK(window.size() == 5);
  std::vector<uint32_t> released;
  auto release = [&](const ActivityRecord& activity) {
    released.push_back(activity.correlation_id);
  };
  window.ReleaseBelow(50, release);  // 50 itself stays
  CHECK(released == std::vector<uint32_t>{2, 4});
  CHECK(window.size() == 3);
  window.ReleaseBelow(2 * kBucket, release);
  CHECK(released == std::vector<uint32_t>{2, 4, 1, 5});
  window.Push(WithCorrelation(6), 7);  // below what was released: leaves at the next release
  window.ReleaseBelow(UINT64_MAX, release);
  CHECK(released == std::vector<uint32_t>{2, 4, 1, 5, 6, 3});
  CHECK(window.size() == 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
