// Test helper: what the calling thread's shim ring holds, drained into decoded records, so a test
// of an app-thread hot path (NVTX handlers, CUPTI callbacks) can assert on what it wrote.
// Single-threaded: drains only the caller's own ring.
#ifndef GPUATTR_TESTS_UNIT_INJECT_RING_RECORDS_H_
#define GPUATTR_TESTS_UNIT_INJECT_RING_RECORDS_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/thread_state.h"
#include "wire/protocol.h"

namespace gpuattr::inject::testing {

struct RingRecord {
  wire::RecordType type;
  uint16_t flags;
  std::vector<uint8_t> body;

  template <typename Body>
  Body As() const {
    Body out;
    REQUIRE(body.size() >= sizeof(Body));
    std::memcpy(&out, body.data(), sizeof(Body));
    return out;
  }
};

// Everything the calling thread's ring holds, drained; empty when the thread has no ring yet.
inline std::vector<RingRecord> DrainMyRing() {
  std::vector<RingRecord> records;
  ThreadState* state = CurrentThreadIfAny();
  if (state == nullptr) return records;
  state->ring.Drain(state->ring.PublishedPosition(), [&](const uint8_t* data, uint32_t size) {
    wire::RecordHeader header;
    std::memcpy(&header, data, sizeof(header));
    records.push_back(RingRecord{static_cast<wire::RecordType>(header.type), header.flags,
                                 std::vector<uint8_t>(data + sizeof(header), data + size)});
  });
  return records;
}

}  // namespace gpuattr::inject::testing

#endif  // GPUATTR_TESTS_UNIT_INJECT_RING_RECORDS_H_
