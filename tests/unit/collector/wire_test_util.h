// Test helpers that speak the wire: records are encoded with wire::MessageWriter exactly as the
// shim encodes them, so collector tests read like the byte stream they feed in.
#ifndef GPUATTR_TESTS_UNIT_COLLECTOR_WIRE_TEST_UTIL_H_
#define GPUATTR_TESTS_UNIT_COLLECTOR_WIRE_TEST_UTIL_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/process_trace.h"
#include "wire/codec.h"

namespace gpuattr::collector::testing {

// One datagram under construction.
class Message {
 public:
  Message() : buffer_(wire::kMaxMessageBytes), writer_(buffer_.data(), wire::kMaxMessageBytes) {}

  template <typename Body>
  Message& Add(const Body& body, uint16_t flags = 0) {
    writer_.Append(body, flags);
    return *this;
  }
  Message& Push(uint64_t ts, uint32_t tid, uint32_t node) {
    writer_.AppendRange(wire::RecordType::kRangePush, {ts, tid, node});
    return *this;
  }
  Message& Pop(uint64_t ts, uint32_t tid, uint32_t node) {
    writer_.AppendRange(wire::RecordType::kRangePop, {ts, tid, node});
    return *this;
  }
  // A push flagged kRangeFlagOpenBeforeWindow: the shim reporting a range open when a capture
  // window began (docs/attach.md).
  Message& PushOpenBeforeWindow(uint64_t ts, uint32_t tid, uint32_t node) {
    const wire::RecordHeader header{static_cast<uint16_t>(wire::RecordType::kRangePush),
                                    wire::kRangeFlagOpenBeforeWindow,
                                    wire::PaddedRecordBytes(sizeof(wire::RangeEvent))};
    const wire::RangeEvent event{ts, tid, node};
    uint8_t record[sizeof(header) + sizeof(event)];
    std::memcpy(record, &header, sizeof(header));
    std::memcpy(record + sizeof(header), &event, sizeof(event));
    writer_.AppendEncoded(record, sizeof(record));
    return *this;
  }
  Message& Str(uint32_t id, const std::string& text) {
    writer_.AppendString(id, text);
    return *this;
  }

  std::vector<uint8_t> Bytes(uint64_t sequence) {
    const uint32_t size = writer_.Finish(sequence);
    return {buffer_.data(), buffer_.data() + size};
  }

 private:
  std::vector<uint8_t> buffer_;
  wire::MessageWriter writer_;
};

inline wire::Hello MakeHello(uint32_t pid, int32_t rank = -1, uint32_t exe_string = 0) {
  wire::Hello hello = wire::MakeHello(wire::HelloMode::kTraced, pid);
  hello.shim_version = 0x000100;
  hello.ppid = 1;
  hello.rank = rank;
  hello.local_rank = rank;
  hello.monotonic_ns = 1;
  hello.realtime_ns = 1700000000000000000ull;
  hello.exe_string = exe_string;
  return hello;
}

// The Hello that starts a capture window's stream.
inline wire::Hello MakeWindowHello(uint32_t pid, int32_t rank = -1) {
  wire::Hello hello = MakeHello(pid, rank);
  hello.mode = static_cast<uint32_t>(wire::HelloMode::kWindow);
  return hello;
}

inline wire::WindowEnd MakeWindowEnd(uint64_t ts, uint32_t window_id, wire::WindowEndReason reason,
                                     wire::DetachOutcome detach, uint32_t steps_seen = 0,
                                     uint64_t detach_ns = 0) {
  return {ts,         window_id, static_cast<uint32_t>(reason), static_cast<uint32_t>(detach),
          steps_seen, detach_ns};
}

inline wire::PathNode MakeNode(uint32_t id, uint32_t parent, uint32_t name, uint32_t domain = 0) {
  return {id, parent, name, domain};
}

inline wire::ApiEnter MakeLaunch(uint32_t correlation, uint64_t ts, uint32_t tid, uint32_t node,
                                 wire::ApiKind kind = wire::ApiKind::kKernel) {
  wire::ApiEnter enter{};
  enter.timestamp_ns = ts;
  enter.correlation_id = correlation;
  enter.tid = tid;
  enter.node = node;
  enter.cbid = 211;
  enter.domain = static_cast<uint8_t>(wire::ApiDomain::kRuntime);
  enter.kind = static_cast<uint8_t>(kind);
  return enter;
}

inline wire::Kernel MakeKernel(uint32_t correlation, uint64_t start, uint64_t end,
                               uint32_t stream = 7, uint32_t name = 0, uint64_t graph_node = 0,
                               uint32_t device = 0) {
  wire::Kernel kernel{};
  kernel.start_ns = start;
  kernel.end_ns = end;
  kernel.graph_node_id = graph_node;
  kernel.correlation_id = correlation;
  kernel.name_string = name;
  kernel.device = device;
  kernel.stream = stream;
  kernel.grid[0] = 80;
  kernel.grid[1] = kernel.grid[2] = 1;
  kernel.block[0] = 256;
  kernel.block[1] = kernel.block[2] = 1;
  return kernel;
}

inline wire::Memcpy MakeMemcpy(uint32_t correlation, uint64_t start, uint64_t end,
                               uint32_t stream) {
  wire::Memcpy copy{};
  copy.start_ns = start;
  copy.end_ns = end;
  copy.bytes = 4096;
  copy.correlation_id = correlation;
  copy.stream = stream;
  return copy;
}

inline wire::GraphNodeCreated MakeGraphNode(uint64_t id, uint32_t correlation, uint32_t node,
                                            uint32_t tid = 1) {
  return {10, id, 1, correlation, tid, node};
}

inline wire::GraphNodeCloned MakeClone(uint64_t clone, uint64_t original) {
  return {11, clone, original, 2, 0};
}

inline wire::CuptiState CuptiOk() { return {0, 130000, 0, 0}; }

// Feeds messages to a ProcessTrace with consecutive sequence numbers.
class Feeder {
 public:
  explicit Feeder(ProcessTrace& trace) : trace_(trace) {}
  Status Send(Message& message) {
    std::vector<uint8_t> bytes = message.Bytes(sequence_++);
    return trace_.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size()));
  }
  void SkipSequence(uint64_t n) { sequence_ += n; }

 private:
  ProcessTrace& trace_;
  uint64_t sequence_ = 0;
};

// A finished trace built with `options` and fed `message` (a Message may be sent again: tests
// analyse the same stream under several options).
inline std::unique_ptr<ProcessTrace> FinishedTrace(Message& message, AnalysisOptions options = {}) {
  auto trace = std::make_unique<ProcessTrace>(std::move(options));
  Feeder feed(*trace);
  REQUIRE(feed.Send(message).ok());
  trace->Finish();
  return trace;
}

}  // namespace gpuattr::collector::testing

#endif  // GPUATTR_TESTS_UNIT_COLLECTOR_WIRE_TEST_UTIL_H_
