// TraceBuilder: the protocol checks that refuse a datagram whole, the push/pop stack with its
// irregularities, names made valid UTF-8, redefinitions counted, and the end of a traced and of a
// window stream.
#include "analysis/trace_builder.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

struct Builder {
  TraceData data;
  LaunchJoin launches{1000};
  ReorderWindow window;
  TraceBuilder builder{data, launches, window};
  uint64_t sequence = 0;

  Status Consume(Message& message) {
    std::vector<uint8_t> bytes = message.Bytes(sequence++);
    wire::MessageReader reader;
    REQUIRE(reader.Open(bytes.data(), static_cast<uint32_t>(bytes.size())) ==
            wire::DecodeError::kNone);
    return builder.Consume(reader);
  }
};

TEST_CASE("a datagram that breaks the protocol is refused whole", "[unit][trace_builder]") {
  Builder b;
  Message no_hello;
  no_hello.Str(1, "x");
  CHECK(b.Consume(no_hello).code() == StatusCode::kDataLoss);
  CHECK(b.data.strings.empty());
  Message armed;
  armed.Add(wire::MakeHello(wire::HelloMode::kArmed, 5));
  CHECK(b.Consume(armed).code() == StatusCode::kDataLoss);
  wire::Hello old = wire::MakeHello(wire::HelloMode::kTraced, 5);
  old.protocol_version = wire::kProtocolVersion + 1;
  CHECK(HelloStatus(old).message() ==
        "the peer speaks wire protocol version " + std::to_string(wire::kProtocolVersion + 1) +
            ", this collector " + std::to_string(wire::kProtocolVersion));
  Message good;
  good.Add(wire::MakeHello(wire::HelloMode::kTraced, 5)).Str(1, "x");
  REQUIRE(b.Consume(good).ok());
  CHECK(b.data.strings.at(1) == "x");
  Message again;
  again.Str(2, "y").Add(wire::MakeHello(wire::HelloMode::kTraced, 5));
  CHECK(b.Consume(again).code() == StatusCode::kDataLoss);
  CHECK(b.data.strings.count(2) == 0);  // nothing of it applied
  CHECK(b.data.messages == 1);
}

TEST_CASE("a definition that changes a defined name is counted: name caches restart on it",
          "[unit][trace_builder]") {
  Builder b;
  Message m;
  m.Add(wire::MakeHello(wire::HelloMode::kTraced, 5));
  m.Str(1, "forward").Str(2, "backward").Add(MakeNode(7, 0, 1));
  m.Str(1, "forward").Add(MakeNode(7, 0, 1));  // the same again: no change
  REQUIRE(b.Consume(m).ok());
  CHECK(b.data.definitions == 5);
  CHECK(b.data.redefinitions == 0);
  Message changed;
  changed.Str(1, "loss").Add(MakeNode(7, 0, 2));
  REQUIRE(b.Consume(changed).ok());
  CHECK(b.data.strings.at(1) == "loss");
  CHECK(b.data.path_nodes.at(7).name_string == 2);
  CHECK(b.data.redefinitions == 2);
}

TEST_CASE("a pop closes its range and the ranges pushed above it, and strange pops are counted",
          "[unit][trace_builder]") {
  Builder b;
  Message m;
  m.Add(wire::MakeHello(wire::HelloMode::kTraced, 5));
  m.Str(1, std::string("bad\xff", 4));
  m.Push(10, 1, 100).Push(20, 1, 101).Push(30, 1, 102);
  m.Pop(40, 1, 101);  // closes 102 with it
  m.Pop(45, 1, 999);  // not open
  m.Pop(50, 2, 100);  // nothing open on tid 2
  m.Push(60, 1, 103);
  REQUIRE(b.Consume(m).ok());
  CHECK(b.data.strings.at(1) == "bad\xEF\xBF\xBD");
  CHECK(b.data.implicitly_closed == 1);
  CHECK(b.data.unmatched_pops == 2);
  REQUIRE(b.data.host_ranges.size() == 2);
  CHECK(b.data.host_ranges[0].node == 102);  // innermost first
  CHECK(b.data.host_ranges[1].node == 101);
  CHECK(b.data.main_tid == 1u);
  b.builder.Finish(std::nullopt);
  CHECK(b.data.finished);
  CHECK(b.data.unclosed_ranges == 2);               // 100 and 103
  CHECK(b.data.history.at(1).back().end_ns == 60);  // at the last timestamp
}

TEST_CASE("a window stream's open ranges end after it: neither instances nor loss",
          "[unit][trace_builder]") {
  Builder b;
  Message m;
  m.Add(wire::MakeHello(wire::HelloMode::kWindow, 5)).Push(10, 1, 100);
  m.Add(wire::ApiEnter{}).Add(MakeKernel(7, 20, 30));
  REQUIRE(b.Consume(m).ok());
  b.builder.Finish(std::nullopt);
  CHECK(b.data.unclosed_ranges == 0);
  CHECK(b.data.host_ranges.empty());
  CHECK(b.data.history.at(1).back().end_ns == HistoryEntry::kOpenEnd);
  CHECK(b.launches.counts().zero_correlation_launches == 1);
  CHECK(b.window.size() == 1);
  CHECK(b.data.activities_seen == 1);
}

}  // namespace
}  // namespace gpuattr::collector::testing
