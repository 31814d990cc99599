#include "runtime/thread_ring.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

struct Drained {
  std::vector<wire::RangeEvent> events;
  std::vector<wire::RecordType> types;
};

Drained DrainAll(SpscRing& ring) {
  Drained out;
  ring.Drain(ring.PublishedPosition(), [&](const uint8_t* record, uint32_t size) {
    wire::RecordHeader header;
    std::memcpy(&header, record, sizeof(header));
    REQUIRE(header.size == size);
    out.types.push_back(static_cast<wire::RecordType>(header.type));
    wire::RangeEvent event;
    std::memcpy(&event, record + sizeof(header), sizeof(event));
    out.events.push_back(event);
  });
  return out;
}

constexpr uint32_t kRecordBytes = wire::PaddedRecordBytes(sizeof(wire::RangeEvent));  // 24

TEST_CASE("a ring hands records to the consumer in order, unchanged", "[ring]") {
  alignas(8) uint8_t storage[256];
  SpscRing ring;
  ring.Init(storage, sizeof(storage));
  REQUIRE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{10, 7, 1}));
  REQUIRE(ring.Push(wire::RecordType::kRangePop, wire::RangeEvent{20, 7, 1}));
  const Drained out = DrainAll(ring);
  REQUIRE(out.types ==
          std::vector<wire::RecordType>{wire::RecordType::kRangePush, wire::RecordType::kRangePop});
  CHECK(out.events[0].timestamp_ns == 10);
  CHECK(out.events[1].timestamp_ns == 20);
  CHECK(out.events[1].tid == 7);
  CHECK(ring.Empty());
  CHECK(ring.dropped() == 0);
}

int g_fill_mark_signals = 0;
void CountFillMarkSignal() { ++g_fill_mark_signals; }

TEST_CASE("a ring signals once when it passes half full, and again after a drain", "[ring]") {
  alignas(8) uint8_t storage[256];
  SpscRing ring;
  g_fill_mark_signals = 0;
  ring.Init(storage, sizeof(storage), &CountFillMarkSignal);
  const auto push = [&] {
    return ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{1, 7, 1});
  };
  for (int i = 0; i < 5; ++i) REQUIRE(push());  // 120 bytes of 256: below the mark
  CHECK(g_fill_mark_signals == 0);
  REQUIRE(push());  // 144 bytes: past it
  CHECK(g_fill_mark_signals == 1);
  REQUIRE(push());
  CHECK(g_fill_mark_signals == 1);  // once until the consumer drains
  CHECK(DrainAll(ring).events.size() == 7);
  for (int i = 0; i < 4; ++i) REQUIRE(push());  // 96 bytes and a 16-byte skip marker: 112
  CHECK(g_fill_mark_signals == 1);
  REQUIRE(push());
  CHECK(g_fill_mark_signals == 2);
  ring.DiscardAll();
  for (int i = 0; i < 6; ++i) REQUIRE(push());
  CHECK(g_fill_mark_signals == 3);
}

TEST_CASE("a ring wraps around with a skip marker the consumer never sees", "[ring]") {
  alignas(8) uint8_t storage[256];
  SpscRing ring;
  ring.Init(storage, sizeof(storage));
  uint64_t next = 0;
  uint64_t expected = 0;
  // 256 / 24 leaves a 16-byte tail each lap, so the laps exercise the skip marker.
  for (int lap = 0; lap < 20; ++lap) {
    for (int i = 0; i < 7; ++i) {
      REQUIRE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{next++, 1, 2}));
    }
    const Drained out = DrainAll(ring);
    REQUIRE(out.events.size() == 7);
    for (const wire::RangeEvent& event : out.events) CHECK(event.timestamp_ns == expected++);
    for (wire::RecordType type : out.types) CHECK(type == wire::RecordType::kRangePush);
  }
  CHECK(ring.dropped() == 0);
}

TEST_CASE("a full ring drops and counts new records and keeps the old ones", "[ring]") {
  alignas(8) uint8_t storage[256];
  SpscRing ring;
  ring.Init(storage, sizeof(storage));
  const uint32_t fits = 256 / kRecordBytes;  // 10
  for (uint32_t i = 0; i < fits; ++i) {
    REQUIRE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{i, 1, 1}));
  }
  CHECK_FALSE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{99, 1, 1}));
  CHECK_FALSE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{100, 1, 1}));
  CHECK(ring.dropped() == 2);
  const Drained out = DrainAll(ring);
  REQUIRE(out.events.size() == fits);
  CHECK(out.events.back().timestamp_ns == fits - 1);
  // Space is back once drained.
  CHECK(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{101, 1, 1}));
}

TEST_CASE("a drain up to a snapshot leaves later records for the next drain", "[ring]") {
  alignas(8) uint8_t storage[256];
  SpscRing ring;
  ring.Init(storage, sizeof(storage));
  REQUIRE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{1, 1, 1}));
  const uint64_t snapshot = ring.PublishedPosition();
  REQUIRE(ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{2, 1, 1}));
  int seen = 0;
  ring.Drain(snapshot, [&](const uint8_t*, uint32_t) { ++seen; });
  CHECK(seen == 1);
  CHECK_FALSE(ring.Empty());
  const Drained rest = DrainAll(ring);
  REQUIRE(rest.events.size() == 1);
  CHECK(rest.events[0].timestamp_ns == 2);
}

TEST_CASE("a producer and a concurrent consumer lose nothing but counted drops", "[ring]") {
  alignas(8) static uint8_t storage[4096];
  SpscRing ring;
  ring.Init(storage, sizeof(storage));
  constexpr uint64_t kRecords = 200000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (uint64_t i = 0; i < kRecords; ++i) {
      ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{i, 1, 1});
    }
    done.store(true);
  });
  uint64_t received = 0;
  uint64_t last = 0;
  bool ordered = true;
  auto consume = [&] {
    ring.Drain(ring.PublishedPosition(), [&](const uint8_t* record, uint32_t) {
      wire::RangeEvent event;
      std::memcpy(&event, record + sizeof(wire::RecordHeader), sizeof(event));
      ordered = ordered && (received == 0 || event.timestamp_ns > last);
      last = event.timestamp_ns;
      ++received;
    });
  };
  while (!done.load()) consume();
  producer.join();
  consume();
  CHECK(ordered);
  CHECK(received + ring.dropped() == kRecords);
  CHECK(received > 0);
}

}  // namespace
}  // namespace gpuattr::inject
