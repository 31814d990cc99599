// AttachSession, without sockets or clocks: when windows are closed, given up and ended, what the
// timers say, and what the report and the reply are told.
#include "ingest/attach_session.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

namespace gpuattr::collector::testing {
namespace {

constexpr uint64_t kMs = 1'000'000;

wire::AttachRequest Request(uint64_t duration_ns, uint32_t steps = 0) {
  wire::AttachRequest request{};
  request.selector = static_cast<uint32_t>(wire::AttachSelector::kAll);
  request.duration_ns = duration_ns;
  request.steps = steps;
  return request;
}

AttachTimeouts Timeouts() { return {1000 * kMs, 50 * kMs}; }

std::unique_ptr<ProcessTrace> SomeTrace() { return std::make_unique<ProcessTrace>(); }

TEST_CASE("a duration window closes its duration after WindowBegin, then ends or is given up",
          "[unit][attach_session]") {
  AttachSession attach(7, 3, Request(100 * kMs), "", 10 * kMs, 123, Timeouts());
  attach.AddWindow(11, 500, 1, 1, 20 * kMs, "");
  CHECK(attach.NextDueNs() == 120 * kMs);  // open + duration, before any WindowBegin
  attach.WindowBegun(11, 30 * kMs, 40 * kMs);
  CHECK(attach.NextDueNs() == 130 * kMs);  // begin + duration
  CHECK(attach.Tick(129 * kMs).closes.empty());
  const AttachSession::Due due = attach.Tick(130 * kMs);
  REQUIRE(due.closes.size() == 1);
  CHECK(due.closes[0].connection_id == 11);
  CHECK(due.closes[0].window_id == 1);
  CHECK(due.closes[0].why == "its duration has passed");
  CHECK(attach.Tick(131 * kMs).closes.empty());  // sent once
  CHECK(attach.NextDueNs() == 180 * kMs);        // the close grace
  CHECK_FALSE(attach.done());

  SECTION("its WindowEnd comes") {
    attach.WindowEnded(11, SomeTrace(), "", 140 * kMs);
    CHECK(attach.done());
    CHECK(attach.windows_with_data() == 1);
    CHECK(attach.EndNotes().empty());
    CHECK_FALSE(attach.NextDueNs());
  }
  SECTION("no WindowEnd within the grace") {
    CHECK(attach.Tick(179 * kMs).give_ups.empty());
    const AttachSession::Due late = attach.Tick(180 * kMs);
    REQUIRE(late.give_ups.size() == 1);
    CHECK(late.give_ups[0].connection_id == 11);
    attach.WindowEnded(11, nullptr, late.give_ups[0].why, 180 * kMs);
    CHECK(attach.done());
    CHECK(attach.EndNotes() == "pid 500: no WindowEnd came within 50 ms of the close request");
  }
}

TEST_CASE("a begin time outside the open request and now is not believed",
          "[unit][attach_session]") {
  AttachSession attach(1, 3, Request(100 * kMs), "", 0, 0, Timeouts());
  attach.AddWindow(11, 500, 1, 1, 20 * kMs, "");
  attach.WindowBegun(11, 5 * kMs, 40 * kMs);  // before the open request
  CHECK(attach.NextDueNs() == 140 * kMs);     // now + duration
  attach.AddWindow(12, 501, 2, 1, 20 * kMs, "");
  attach.WindowBegun(12, 90 * kMs, 60 * kMs);  // after now
  CHECK(attach.windows()[1].close_due_ns == 160 * kMs);
}

TEST_CASE("a steps window waits for the attach timeout, and a client that leaves closes all",
          "[unit][attach_session]") {
  AttachSession attach(2, 3, Request(0, 5), "train_step", 10 * kMs, 0, Timeouts());
  attach.AddWindow(11, 500, 1, 1, 10 * kMs, "");
  attach.AddWindow(12, 501, 2, 3, 10 * kMs, "");
  CHECK(attach.NextDueNs() == 1010 * kMs);  // the request + the attach timeout
  SECTION("timeout") {
    const AttachSession::Due due = attach.Tick(1010 * kMs);
    REQUIRE(due.closes.size() == 2);
    CHECK(due.closes[1].why == "the attach timed out");
  }
  SECTION("the client goes away") {
    attach.WindowEnded(12, SomeTrace(), "", 40 * kMs);
    const std::vector<AttachSession::Close> closes = attach.ClientGone(50 * kMs);
    REQUIRE(closes.size() == 1);  // the ended window needs no close
    CHECK(closes[0].connection_id == 11);
    CHECK(closes[0].why == "the attach client went away");
    CHECK(attach.client_connection_id() == 0);
    CHECK(attach.ClientGone(60 * kMs).empty());
    attach.WindowEnded(11, nullptr, "the connection closed before the window began", 60 * kMs);
    CHECK(attach.done());
    CHECK(attach.windows_with_data() == 1);
    CHECK(attach.EndNotes() == "pid 500: the connection closed before the window began");
  }
}

TEST_CASE("a window whose open request could not be sent has ended with the reason",
          "[unit][attach_session]") {
  AttachSession attach(3, 3, Request(100 * kMs), "", 0, 0, Timeouts());
  attach.AddWindow(11, 500, 1, 1, 0, "broken pipe");
  CHECK(attach.done());
  CHECK(attach.EndNotes() == "pid 500: the open request could not be sent: broken pipe");
  CHECK_FALSE(attach.NextDueNs());
  AttachSession other(4, 3, Request(100 * kMs), "", 0, 0, Timeouts());
  other.AddWindow(11, 500, 1, 1, 0, "");
  const std::vector<AttachSession::Close> closes = other.CloseAll(5, "shutting down");
  REQUIRE(closes.size() == 1);
  CHECK(other.windows()[0].close_sent);
  other.WindowEnded(11, nullptr, "", 5);
  CHECK(other.EndNotes() == "pid 500: no window data");
}

}  // namespace
}  // namespace gpuattr::collector::testing
