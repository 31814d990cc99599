// Wire codec: every record type round-trips through MessageWriter -> MessageReader, and every
// kind of malformed datagram is rejected (by the reader and by ProcessTrace) without a crash.
#include <catch2/catch.hpp>
#include <random>

#include "analysis/process_trace.h"
#include "report_test_util.h"
#include "views/run_summary.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using wire::DecodeError;
using wire::RecordType;

template <typename Body>
Body Filled(uint8_t seed) {
  Body body;
  auto* bytes = reinterpret_cast<uint8_t*>(&body);
  for (size_t i = 0; i < sizeof(Body); ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return body;
}

template <typename Body>
void ExpectBody(const wire::RecordView& view, RecordType type, const Body& expected,
                uint16_t flags) {
  CHECK(view.type == type);
  CHECK(view.flags == flags);
  REQUIRE(view.body_bytes >= sizeof(Body));
  const Body got = view.As<Body>();
  CHECK(std::memcmp(&got, &expected, sizeof(Body)) == 0);
}

TEST_CASE("every record type round-trips through the codec", "[unit][wire]") {
  Message message;
  const auto hello = Filled<wire::Hello>(1);
  const auto path = Filled<wire::PathNode>(2);
  const auto thread = Filled<wire::ThreadName>(3);
  const auto push = Filled<wire::RangeEvent>(4);
  const auto pop = Filled<wire::RangeEvent>(5);
  const auto start = Filled<wire::RangeStart>(6);
  const auto end = Filled<wire::RangeEnd>(7);
  const auto mark = Filled<wire::Mark>(8);
  const auto enter = Filled<wire::ApiEnter>(9);
  const auto exit = Filled<wire::ApiExit>(10);
  const auto kernel = Filled<wire::Kernel>(11);
  const auto copy = Filled<wire::Memcpy>(12);
  const auto set = Filled<wire::Memset>(13);
  const auto created = Filled<wire::GraphNodeCreated>(14);
  const auto cloned = Filled<wire::GraphNodeCloned>(15);
  const auto cupti = Filled<wire::CuptiState>(16);
  const auto refusal = Filled<wire::Refusal>(17);
  const auto diagnostics = Filled<wire::Diagnostics>(18);
  const auto device = Filled<wire::Device>(19);
  const auto goodbye = Filled<wire::Goodbye>(20);
  message.Add(hello).Str(42, "forward \xE2\x9C\x93").Add(path).Add(thread);
  message.Push(push.timestamp_ns, push.tid, push.node).Pop(pop.timestamp_ns, pop.tid, pop.node);
  message.Add(start).Add(end).Add(mark).Add(enter, wire::kApiFlagNested).Add(exit).Add(kernel);
  message.Add(copy).Add(set).Add(created).Add(cloned).Add(cupti).Add(refusal).Add(diagnostics);
  message.Add(device).Add(goodbye);
  const std::vector<uint8_t> bytes = message.Bytes(99);

  wire::MessageReader reader;
  REQUIRE(reader.Open(bytes.data(), static_cast<uint32_t>(bytes.size())) == DecodeError::kNone);
  CHECK(reader.header().sequence == 99);
  CHECK(reader.header().record_count == 21);
  wire::RecordView view;
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kHello, hello, 0);
  REQUIRE(reader.Next(&view));
  CHECK(view.type == RecordType::kString);
  CHECK(view.As<wire::String>().id == 42);
  CHECK(view.StringText() == "forward \xE2\x9C\x93");
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kPathNode, path, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kThreadName, thread, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kRangePush, push, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kRangePop, pop, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kRangeStart, start, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kRangeEnd, end, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kMark, mark, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kApiEnter, enter, wire::kApiFlagNested);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kApiExit, exit, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kKernel, kernel, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kMemcpy, copy, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kMemset, set, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kGraphNodeCreated, created, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kGraphNodeCloned, cloned, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kCuptiState, cupti, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kRefusal, refusal, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kDiagnostics, diagnostics, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kDevice, device, 0);
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kGoodbye, goodbye, 0);
  CHECK_FALSE(reader.Next(&view));
}

TEST_CASE("EncodeRecord produces what MessageWriter::Append does", "[unit][wire]") {
  const auto kernel = Filled<wire::Kernel>(3);
  uint8_t encoded[wire::PaddedRecordBytes(sizeof(wire::Kernel))];
  const uint32_t size = wire::EncodeRecord(encoded, RecordType::kKernel, kernel);
  std::vector<uint8_t> buffer(1024);
  wire::MessageWriter writer(buffer.data(), 1024);
  REQUIRE(writer.AppendEncoded(encoded, size));
  const uint32_t bytes = writer.Finish(0);
  wire::MessageReader reader;
  REQUIRE(reader.Open(buffer.data(), bytes) == DecodeError::kNone);
  wire::RecordView view;
  REQUIRE(reader.Next(&view));
  ExpectBody(view, RecordType::kKernel, kernel, 0);
}

TEST_CASE("a full writer refuses records instead of overflowing", "[unit][wire]") {
  std::vector<uint8_t> buffer(sizeof(wire::MessageHeader) + 40);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  CHECK(writer.Append(Filled<wire::RangeStart>(1)));  // 40 bytes
  CHECK_FALSE(writer.Append(Filled<wire::Device>(1)));
  CHECK(writer.record_count() == 1);
}

// A valid two-record message (Hello + Device) to corrupt.
std::vector<uint8_t> ValidMessage() {
  Message message;
  message.Add(MakeHello(7)).Add(wire::Device{0, 0});
  return message.Bytes(0);
}

template <typename T>
void Poke(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

constexpr size_t kHeader = sizeof(wire::MessageHeader);
constexpr size_t kHelloRecord = wire::PaddedRecordBytes(sizeof(wire::Hello));

DecodeError Decode(const std::vector<uint8_t>& bytes) {
  wire::MessageReader reader;
  const DecodeError error = reader.Open(bytes.data(), static_cast<uint32_t>(bytes.size()));
  wire::RecordView view;
  if (error != DecodeError::kNone) CHECK_FALSE(reader.Next(&view));
  return error;
}

// The reader's verdict, and ProcessTrace's: rejected whole, nothing applied.
void ExpectRejected(const std::vector<uint8_t>& bytes, DecodeError expected) {
  CHECK(Decode(bytes) == expected);
  ProcessTrace trace;
  const Status status = trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size()));
  CHECK(status.code() == StatusCode::kDataLoss);
  CHECK_FALSE(trace.has_hello());
}

TEST_CASE("malformed datagrams are rejected with the right error", "[unit][wire]") {
  SECTION("short header") {
    std::vector<uint8_t> bytes = ValidMessage();
    bytes.resize(kHeader - 1);
    ExpectRejected(bytes, DecodeError::kShortHeader);
    ExpectRejected({}, DecodeError::kShortHeader);
  }
  SECTION("bad magic") {
    std::vector<uint8_t> bytes = ValidMessage();
    Poke<uint32_t>(bytes, 0, 0xdeadbeef);
    ExpectRejected(bytes, DecodeError::kBadMagic);
  }
  SECTION("version mismatch") {
    std::vector<uint8_t> bytes = ValidMessage();
    Poke<uint16_t>(bytes, 4, wire::kProtocolVersion + 1);
    ExpectRejected(bytes, DecodeError::kVersionMismatch);
  }
  SECTION("header size too small or past the datagram") {
    std::vector<uint8_t> bytes = ValidMessage();
    Poke<uint16_t>(bytes, 6, 8);
    ExpectRejected(bytes, DecodeError::kBadHeaderSize);
    Poke<uint16_t>(bytes, 6, 0xffff);
    ExpectRejected(bytes, DecodeError::kBadHeaderSize);
  }
  SECTION("payload length differs from what was received") {
    std::vector<uint8_t> bytes = ValidMessage();
    bytes.resize(bytes.size() - 8);
    ExpectRejected(bytes, DecodeError::kPayloadMismatch);
    std::vector<uint8_t> longer = ValidMessage();
    longer.resize(longer.size() + 8, 0);
    ExpectRejected(longer, DecodeError::kPayloadMismatch);
  }
  SECTION("record size not a multiple of 8, below 8, or beyond the payload") {
    std::vector<uint8_t> bytes = ValidMessage();
    Poke<uint32_t>(bytes, kHeader + 4, kHelloRecord + 4);
    ExpectRejected(bytes, DecodeError::kBadRecordSize);
    Poke<uint32_t>(bytes, kHeader + 4, 0);
    ExpectRejected(bytes, DecodeError::kBadRecordSize);
    Poke<uint32_t>(bytes, kHeader + 4, 4096);
    ExpectRejected(bytes, DecodeError::kBadRecordSize);
  }
  SECTION("a payload tail shorter than a record header") {
    std::vector<uint8_t> bytes = ValidMessage();
    bytes.resize(bytes.size() + 4, 0);
    Poke<uint32_t>(bytes, 16, static_cast<uint32_t>(bytes.size() - kHeader));
    ExpectRejected(bytes, DecodeError::kBadRecordSize);
  }
  SECTION("known record shorter than its body") {
    Message message;
    message.Add(MakeHello(7)).Add(wire::Device{0, 0});
    std::vector<uint8_t> bytes = message.Bytes(0);
    // Turn the 16-byte Device record into a Kernel (80-byte body).
    Poke<uint16_t>(bytes, kHeader + kHelloRecord, static_cast<uint16_t>(RecordType::kKernel));
    ExpectRejected(bytes, DecodeError::kShortBody);
  }
  SECTION("string longer than its record or than the limit") {
    Message message;
    message.Add(MakeHello(7)).Str(1, "abc");
    std::vector<uint8_t> bytes = message.Bytes(0);
    const size_t length_at = kHeader + kHelloRecord + sizeof(wire::RecordHeader) + 4;
    Poke<uint32_t>(bytes, length_at, 9);
    ExpectRejected(bytes, DecodeError::kBadString);
    Poke<uint32_t>(bytes, length_at, wire::kMaxStringBytes + 1);
    ExpectRejected(bytes, DecodeError::kBadString);
  }
  SECTION("record count mismatch") {
    std::vector<uint8_t> bytes = ValidMessage();
    Poke<uint32_t>(bytes, 20, 3);
    ExpectRejected(bytes, DecodeError::kRecordCountMismatch);
  }
}

TEST_CASE("unknown record types are skipped by size", "[unit][wire]") {
  std::vector<uint8_t> bytes = ValidMessage();
  Poke<uint16_t>(bytes, kHeader + kHelloRecord, 999);
  REQUIRE(Decode(bytes) == DecodeError::kNone);
  ProcessTrace trace;
  REQUIRE(trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size())).ok());
  CHECK(trace.pid() == 7);
}

TEST_CASE("random corruption never crashes the reader or the trace", "[unit][wire]") {
  Message message;
  message.Add(MakeHello(7)).Str(1, "kernel").Add(MakeKernel(1, 10, 20, 7, 1));
  message.Add(MakeLaunch(1, 5, 1, 0)).Push(1, 1, 3).Add(MakeNode(3, 3, 1)).Add(CuptiOk());
  message.Add(MakeGraphNode(9, 1, 3)).Add(MakeClone(9, 9)).Add(MakeKernel(1, 30, 40, 7, 1, 9));
  const std::vector<uint8_t> valid = message.Bytes(0);
  std::mt19937 random(1234);
  int accepted = 0;
  int rejected = 0;
  for (int round = 0; round < 5000; ++round) {
    std::vector<uint8_t> bytes = valid;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    if (random() % 8 == 0) bytes.resize(random() % (bytes.size() + 1));
    ProcessTrace trace;
    const Status status = trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size()));
    if (status.ok()) {
      ++accepted;
      trace.Finish();
      // Whatever was accepted must analyse, render and serialise (strictly: valid UTF-8).
      const nlohmann::json report = ReportFor({&trace});
      CHECK(report["processes"].size() == (trace.has_hello() ? 1u : 0u));
      CHECK_FALSE(RenderSummary(report).empty());
      CHECK_FALSE(report.dump().empty());
    } else {
      ++rejected;
      CHECK(status.code() == StatusCode::kDataLoss);
      CHECK_FALSE(trace.has_hello());
    }
  }
  CHECK(accepted + rejected == 5000);
  CHECK(rejected > 0);
  CHECK(accepted > 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
