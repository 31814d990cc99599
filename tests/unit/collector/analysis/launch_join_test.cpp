// LaunchJoin: matching by correlation id, the first ApiEnter of an id, expiry behind the window
// with its loss counts, captured launches, and a capture window's outside-the-window test.
#include "analysis/launch_join.h"

#include <catch2/catch.hpp>
#include <vector>

namespace gpuattr::collector::testing {
namespace {

wire::ApiEnter Enter(uint32_t correlation, uint64_t ts, uint32_t node = 0,
                     wire::ApiKind kind = wire::ApiKind::kKernel) {
  wire::ApiEnter enter{};
  enter.timestamp_ns = ts;
  enter.correlation_id = correlation;
  enter.tid = 1;
  enter.node = node;
  enter.kind = static_cast<uint8_t>(kind);
  return enter;
}

TEST_CASE("a launch is matched by correlation id and leaves after its one activity",
          "[unit][launch_join]") {
  LaunchJoin join(1000);
  join.Enter(Enter(5, 100, 11));
  join.Enter(Enter(5, 105, 0));  // the same id again (a driver call inside): not a second launch
  join.Exit(wire::ApiExit{120, 5, 1});
  join.Exit(wire::ApiExit{130, 6, 1});                    // no such launch
  join.Enter(Enter(0, 140));                              // no correlation id
  join.Enter(Enter(7, 150, 0, wire::ApiKind::kCapture));  // no device work
  CHECK(join.in_flight() == 1);
  CHECK(join.Match(0) == nullptr);
  CHECK(join.Match(9) == nullptr);
  const LaunchRecord* launch = join.Match(5);
  REQUIRE(launch != nullptr);
  CHECK(launch->enter_ns == 100);
  CHECK(launch->node == 11);
  CHECK(launch->exit_ns == 120);
  CHECK(launch->matched);
  std::vector<uint32_t> forgotten;
  join.Leave(5, [&](uint32_t id, const LaunchRecord&) { forgotten.push_back(id); });
  CHECK(forgotten == std::vector<uint32_t>{5});
  CHECK(join.in_flight() == 0);
  const LaunchCounts& counts = join.counts();
  CHECK(counts.launches_seen == 1);
  CHECK(counts.orphan_api_exits == 1);
  CHECK(counts.zero_correlation_launches == 1);
  CHECK(counts.unmatched_launches == 0);
}

TEST_CASE("launches expire behind the window, unmatched ones counted and captured ones not",
          "[unit][launch_join]") {
  LaunchJoin join(1000);
  join.Enter(Enter(1, 100));  // never runs
  join.Enter(Enter(2, 200));  // captured into a graph: never runs itself
  join.MarkCaptured(2);
  join.Enter(Enter(3, 300, 0, wire::ApiKind::kGraph));  // a graph launch: stays after its match
  REQUIRE(join.Match(3) != nullptr);
  join.Enter(Enter(4, 5000));
  std::vector<uint32_t> expired;
  auto forget = [&](uint32_t id, const LaunchRecord&) { expired.push_back(id); };
  join.Expire(1150, forget);  // 100 + 1000 < 1150: launch 1 only
  CHECK(expired == std::vector<uint32_t>{1});
  join.Expire(1400, forget);
  CHECK(expired == std::vector<uint32_t>{1, 2, 3});
  CHECK(join.counts().expired_launches == 2);    // 1 and 2: not matched before the end
  CHECK(join.counts().unmatched_launches == 1);  // 2 was captured
  join.Expire(LaunchJoin::kEverything, forget);  // the end: 4 is unmatched, not expired
  CHECK(expired == std::vector<uint32_t>{1, 2, 3, 4});
  CHECK(join.counts().expired_launches == 2);
  CHECK(join.counts().unmatched_launches == 2);
}

TEST_CASE("in a window's stream, ids outside the recorded launches are outside the window",
          "[unit][launch_join]") {
  LaunchJoin join(1000);
  CHECK(join.OutsideWindow(10));  // no launch recorded yet
  CHECK_FALSE(join.OutsideWindow(0));
  join.Enter(Enter(10, 100));
  join.Enter(Enter(20, 200));
  CHECK(join.OutsideWindow(9));
  CHECK_FALSE(join.OutsideWindow(15));
  CHECK(join.OutsideWindow(21));
}

}  // namespace
}  // namespace gpuattr::collector::testing
