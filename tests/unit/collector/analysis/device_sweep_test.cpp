// DeviceSweep: busy unions over streams, gaps and their classes, the largest gaps' host ranges,
// spans, tails, late activities, per-stream idle and the compute / communication / memory
// unions.
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
  sweep.Fold(trace.Kernel(100, 300, "k", 1), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Copy(200, 400, 2), nullptr, false, WorkCategory::kMemory);
  sweep.Fold(trace.Kernel(250, 260, "k", 1), nullptr, true,
             WorkCategory::kCompute);  // late: sums only
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
  CHECK(device.streams[0].span_ns == 200);
  CHECK(device.streams[0].idle_ns == 0);
  CHECK_FALSE(device.name);
}

TEST_CASE("each stream's idle time is its own span less its own busy time",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  sweep.Fold(trace.Kernel(100, 150, "k", 1), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(120, 400, "k", 2), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(300, 320, "k", 1), nullptr, false, WorkCategory::kCompute);
  const std::vector<DeviceStats> devices = sweep.Finish(400, NoRange, NoName);
  REQUIRE(devices.size() == 1);
  const DeviceStats& device = devices[0];
  CHECK(device.idle_ns == 0);  // stream 2 covers the device's span
  REQUIRE(device.streams.size() == 2);
  CHECK(device.streams[0].span_ns == 220);
  CHECK(device.streams[0].busy_ns == 70);
  CHECK(device.streams[0].idle_ns == 150);
  CHECK(device.streams[1].idle_ns == 0);
}

TEST_CASE("communication is split into what compute hid and what it left exposed",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  // compute [100, 300) and [500, 600); an all-reduce [250, 550) on another stream, so 50 + 50
  // of its 300 ns run under compute; a copy [700, 720) overlaps nothing.
  sweep.Fold(trace.Kernel(100, 300, "gemm", 1), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(250, 550, "nccl", 2), nullptr, false, WorkCategory::kCommunication);
  sweep.Fold(trace.Kernel(500, 600, "gemm", 1), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Copy(700, 720, 1), nullptr, false, WorkCategory::kMemory);
  // Late work joins no union.
  sweep.Fold(trace.Kernel(260, 900, "nccl", 2), nullptr, true, WorkCategory::kCommunication);
  const std::vector<DeviceStats> devices = sweep.Finish(720, NoRange, NoName);
  REQUIRE(devices.size() == 1);
  const CategoryBusy& categories = devices[0].categories;
  CHECK(categories.compute_ns == 300);
  CHECK(categories.communication_ns == 300);
  CHECK(categories.memory_ns == 20);
  CHECK(categories.communication_hidden_ns == 100);
  CHECK(categories.communication_exposed_ns == 200);
  // Exposed communication is what it added to the compute's busy time.
  CHECK(devices[0].busy_ns ==
        categories.compute_ns + categories.communication_exposed_ns + categories.memory_ns);
}

TEST_CASE("a gap is host_bound or dependency by the earliest launch of the work that ends it",
          "[unit][device_sweep]") {
  TraceFixture trace;
  DeviceSweep sweep;
  const LaunchRecord early = trace.Launch(50, 1);  // before the gap began at 200
  const LaunchRecord late = trace.Launch(250, 2);  // after
  const LaunchRecord later = trace.Launch(700, 1);
  sweep.Fold(trace.Kernel(100, 200), &early, false, WorkCategory::kCompute);
  // Two activities start at 300, the gap's end: the earliest launch (early, 50) decides.
  sweep.Fold(trace.Kernel(300, 350), &late, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(300, 320, "k", 1), &early, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(800, 900), &later, false,
             WorkCategory::kCompute);  // host_bound gap [350, 800)
  sweep.Fold(trace.Kernel(1000, 1100), nullptr, false,
             WorkCategory::kCompute);  // unclassified [900, 1000)
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
  sweep.Fold(trace.Kernel(100, 200), nullptr, false, WorkCategory::kCompute);
  sweep.Fold(trace.Kernel(260, 300), &at_gap_start, false, WorkCategory::kCompute);
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
    sweep.Fold(trace.Kernel(i * 1000, i * 1000 + 1000 - (i + 1) * 10), nullptr, false,
               WorkCategory::kCompute);
  }
  sweep.Fold(trace.Kernel(5, 6, "k", 0, 3), nullptr, true, WorkCategory::kCompute);
  const std::vector<DeviceStats> devices = sweep.Finish(0, NoRange, NoName);
  REQUIRE(devices.size() == 1);  // device 3 ran only a late activity
  CHECK(devices[0].gaps == 9);
  REQUIRE(devices[0].largest.size() == kLargestGaps);
  CHECK(devices[0].largest[0].end_ns - devices[0].largest[0].start_ns == 90);
  CHECK(devices[0].largest[4].end_ns - devices[0].largest[4].start_ns == 50);
}

}  // namespace
}  // namespace gpuattr::collector::testing
