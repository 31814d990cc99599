// The CUPTI multiplexer's record knowledge (cupti/mux_records.h): correlation ids by kind, and
// every time field of a known kind moved onto a side's clock, CUPTI's "unknown" (0) kept.
#include "cupti/mux_records.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace gpuattr::inject {
namespace {

TEST_CASE("a record's correlation id is read by its kind, and kinds without one say so",
          "[cupti][mux]") {
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.correlationId = 41;
  uint32_t correlation = 0;
  CHECK(CorrelationOf(reinterpret_cast<CUpti_Activity*>(&kernel), &correlation));
  CHECK(correlation == 41);
  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.correlationId = 42;
  CHECK(CorrelationOf(reinterpret_cast<CUpti_Activity*>(&set), &correlation));
  CHECK(correlation == 42);
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.correlationId = 43;
  CHECK(CorrelationOf(reinterpret_cast<CUpti_Activity*>(&api), &correlation));
  CHECK(correlation == 43);
  CUpti_ActivityMarker2 marker{};
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  CHECK_FALSE(CorrelationOf(reinterpret_cast<CUpti_Activity*>(&marker), &correlation));
}

TEST_CASE("times move onto a side's clock by offset or by rate, and unknown times stay 0",
          "[cupti][mux]") {
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = 1'000;
  kernel.end = 1'500;
  kernel.completed = 1'500;
  kernel.queued = 0;  // CUPTI_TIMESTAMP_UNKNOWN
  kernel.submitted = 900;

  ClockMap identity;
  MapRecordTimes(reinterpret_cast<CUpti_Activity*>(&kernel), identity);
  CHECK(kernel.start == 1'000);

  ClockMap offset;
  offset.identity = false;
  offset.anchor_ours = 2'000;
  offset.anchor_theirs = 1'000'002'000;
  MapRecordTimes(reinterpret_cast<CUpti_Activity*>(&kernel), offset);
  CHECK(kernel.start == 1'000'001'000);
  CHECK(kernel.end == 1'000'001'500);
  CHECK(kernel.completed == 1'000'001'500);
  CHECK(kernel.queued == 0);
  CHECK(kernel.submitted == 1'000'000'900);

  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.start = 3'000;
  copy.end = 5'000;
  ClockMap ticks;  // a clock that runs twice as fast, anchored at (1000, 10)
  ticks.identity = false;
  ticks.anchor_ours = 1'000;
  ticks.anchor_theirs = 10;
  ticks.rate = 2.0;
  MapRecordTimes(reinterpret_cast<CUpti_Activity*>(&copy), ticks);
  CHECK(copy.start == 4'010);
  CHECK(copy.end == 8'010);
}

}  // namespace
}  // namespace gpuattr::inject
