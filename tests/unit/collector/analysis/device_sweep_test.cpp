// DeviceSweep: busy unions over streams, gaps and their classes, the largest gaps' host ranges,
// spans, tails and late activities.
#include "analysis/device_sweep.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

std::optional<std::string> NoName(uint32_t) { return std::nullopt; }

std::optional<std::vector<std::string>> NoRange(uint32_t, uint64_t) { return std::nullopt; }

TEST_CASE("device busy time is the union over streams, each stream's its own",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  sweep.Fold(trace.Kernel(100, 300, "k", 1), nullptr, false);
  sweep.Fold(trace.Copy(200, 400, 2), nullptr, false);
  sweep.Fold(trace.Kernel(250, 260, "k", 1), nullptr, true);  // late: sums only
  const std::vector<DeviceStats> devices = sweep.Finish(1000, NoRange, NoName);
  REQUIRE(devices.size() == 1);
  const DeviceStats& device = devices[0];
  CHECK(device.first_start_ns == 100);
  CHECK(device.last_end_ns == 400);
  CHECK(device.span_ns == 300);
  CHECK(device.busy_ns == 300);
  CHECK(device.idle_ns == 0);
  CHECK(device.tail_ns == 600);
  REQUIRE(device.streams.size() == 2);
  CHECK(device.streams[0].id == 1);
  CHECK(device.streams[0].busy_ns == 200);
  CHECK(device.streams[0].kernel_ns == 210);
  CHECK(device.streams[0].activities == 2);
  CHECK(device.streams[1].memcpy_ns == 200);
  CHECK_FALSE(device.name);
}

TEST_CASE("a gap is host_bound or dependency by the earliest launch of the work that ends it",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  const LaunchRecord early = trace.Launch(50, 1);  // before the gap began at 200
  const LaunchRecord late = trace.Launch(250, 2);  // after
  const LaunchRecord later = trace.Launch(700, 1);
  sweep.Fold(trace.Kernel(100, 200), &early, false);
  // Two activities start at 300, the gap's end: the earliest launch (early, 50) decides.
  sweep.Fold(trace.Kernel(300, 350), &late, false);
  sweep.Fold(trace.Kernel(300, 320, "k", 1), &early, false);
  sweep.Fold(trace.Kernel(800, 900), &later, false);     // host_bound gap [350, 800)
  sweep.Fold(trace.Kernel(1000, 1100), nullptr, false);  // unclassified [900, 1000)
  const std::vector<DeviceStats> devices = sweep.Finish(
      1100,
      [](uint32_t tid, uint64_t t) -> std::optional<std::vector<std::string>> {
        if (tid == 1 && t == 350) return std::vector<std::string>{"dataloader"};
        return std::nullopt;
      },
      [](uint32_t) -> std::optional<std::string> { return "sim GPU"; });
  REQUIRE(devices.size() == 1);
  const DeviceStats& device = devices[0];
  CHECK(device.dependency_ns == 100);
  CHECK(device.host_bound_ns == 450);
  CHECK(device.unclassified_ns == 100);
  CHECK(device.gaps == 3);
  CHECK(device.idle_ns == device.dependency_ns + device.host_bound_ns + device.unclassified_ns);
  CHECK(device.tail_ns == 0);
  CHECK(device.name == "sim GPU");
  REQUIRE(device.largest.size() == 3);
  CHECK(device.largest[0].start_ns == 350);
  CHECK(device.largest[0].kind == GapKind::kHostBound);
  CHECK(device.largest[0].launch_tid == 1u);
  CHECK(device.largest[0].host_range == std::vector<std::string>{"dataloader"});
  CHECK(device.largest[1].start_ns == 200);  // equal lengths: the earlier first
  CHECK(device.largest[1].kind == GapKind::kDependency);
  CHECK(device.largest[2].kind == GapKind::kUnknown);
  CHECK_FALSE(device.largest[2].launch_tid);
}

TEST_CASE("work launched exactly when the device went idle makes a host_bound gap",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  const LaunchRecord at_gap_start = trace.Launch(200, 1);
  sweep.Fold(trace.Kernel(100, 200), nullptr, false);
  sweep.Fold(trace.Kernel(260, 300), &at_gap_start, false);
  const std::vector<DeviceStats> devices = sweep.Finish(300, NoRange, NoName);
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].host_bound_ns == 60);
  CHECK(devices[0].dependency_ns == 0);
}

TEST_CASE("only the longest gaps are kept, and a device with only late work has no span",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  for (uint64_t i = 0; i < 10; ++i) {
    sweep.Fold(trace.Kernel(i * 1000, i * 1000 + 1000 - (i + 1) * 10), nullptr, false);
  }
  sweep.Fold(trace.Kernel(5, 6, "k", 0, 3), nullptr, true);
  const std::vector<DeviceStats> devices = sweep.Finish(0, NoRange, NoName);
  REQUIRE(devices.size() == 1);  // device 3 ran only a late activity
  CHECK(devices[0].gaps == 9);
  REQUIRE(devices[0].largest.size() == kLargestGaps);
  CHECK(devices[0].largest[0].end_ns - devices[0].largest[0].start_ns == 90);
  CHECK(devices[0].largest[4].end_ns - devices[0].largest[4].start_ns == 50);
}

}  // namespace
}  // namespace gpuattr::collector::testing
