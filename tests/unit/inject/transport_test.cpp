// The transport against a socketpair(AF_UNIX, SOCK_SEQPACKET) whose peer decodes with
// wire::MessageReader.
#include "runtime/transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/clock.h"
#include "wire/codec.h"

namespace gpuattr::inject {
namespace {

struct SocketPair {
  int shim = -1;
  int peer = -1;
  SocketPair() {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    shim = fds[0];
    peer = fds[1];
  }
  ~SocketPair() {
    if (peer >= 0) close(peer);
  }
  // A small send buffer, so that a peer that does not read fills it within a few messages.
  void ShrinkShimSendBuffer() const {
    const int small = 4096;
    setsockopt(shim, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  }
};

// Receives every queued datagram without blocking and decodes it.
std::vector<std::vector<wire::RecordView>> ReceiveAll(int fd, std::vector<uint64_t>* sequences,
                                                      std::vector<std::vector<uint8_t>>* storage) {
  std::vector<std::vector<wire::RecordView>> messages;
  for (;;) {
    std::vector<uint8_t> datagram(wire::kMaxMessageBytes);
    const ssize_t n = recv(fd, datagram.data(), datagram.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    datagram.resize(static_cast<size_t>(n));
    storage->push_back(std::move(datagram));
    wire::MessageReader reader;
    REQUIRE(reader.Open(storage->back().data(), static_cast<uint32_t>(n)) ==
            wire::DecodeError::kNone);
    sequences->push_back(reader.header().sequence);
    std::vector<wire::RecordView> records;
    wire::RecordView view;
    while (reader.Next(&view)) records.push_back(view);
    messages.push_back(std::move(records));
  }
  return messages;
}

TEST_CASE("the outbox splits records into valid messages with consecutive sequences",
          "[transport]") {
  SocketPair sockets;
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  constexpr uint32_t kRecords = 5000;  // 5000 * 24 B > one 64 KiB message
  for (uint32_t i = 0; i < kRecords; ++i) outbox.Append(wire::ApiExit{i, i, 7});
  outbox.AppendString(1, "a name");
  outbox.Flush();
  CHECK(transport.dropped_messages() == 0);

  std::vector<uint64_t> sequences;
  std::vector<std::vector<uint8_t>> storage;
  const auto messages = ReceiveAll(sockets.peer, &sequences, &storage);
  REQUIRE(messages.size() >= 2);
  uint32_t seen = 0;
  for (size_t m = 0; m < messages.size(); ++m) {
    CHECK(sequences[m] == m);
    for (const wire::RecordView& record : messages[m]) {
      if (record.type == wire::RecordType::kApiExit) {
        CHECK(record.As<wire::ApiExit>().correlation_id == seen);
        ++seen;
      } else {
        CHECK(record.type == wire::RecordType::kString);
        CHECK(record.StringText() == "a name");
      }
    }
  }
  CHECK(seen == kRecords);
}

TEST_CASE("a full socket drops and counts messages and never blocks", "[transport]") {
  SocketPair sockets;
  sockets.ShrinkShimSendBuffer();
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  outbox.set_wait_ms(0);
  const auto begin = std::chrono::steady_clock::now();
  uint64_t records = 0;
  for (int message = 0; message < 200; ++message) {  // nobody reads the peer
    for (int i = 0; i < 40; ++i, ++records) outbox.Append(wire::ApiExit{1, 2, 3});
    outbox.Flush();
  }
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  CHECK(elapsed < std::chrono::seconds(2));
  CHECK(transport.dropped_messages() > 0);
  CHECK(transport.dropped_records() > 0);
  CHECK(transport.dropped_records() < records);  // the first messages got through
  CHECK(transport.connected());                  // a full socket is not a broken one
  CHECK(transport.sent_messages() + transport.dropped_messages() == outbox.next_sequence());
}

TEST_CASE("a bounded wait for a full socket gives up after about that long", "[transport]") {
  SocketPair sockets;
  sockets.ShrinkShimSendBuffer();
  Transport transport;
  transport.Adopt(sockets.shim);
  std::vector<uint8_t> datagram(8192);
  wire::MessageWriter writer(datagram.data(), static_cast<uint32_t>(datagram.size()));
  writer.Append(wire::ApiExit{1, 2, 3});
  const uint32_t size = writer.Finish(0);
  while (transport.Send(datagram.data(), size, 1, 0)) {
  }
  const auto begin = std::chrono::steady_clock::now();
  CHECK_FALSE(transport.Send(datagram.data(), size, 1, 100));
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  CHECK(elapsed >= std::chrono::milliseconds(90));
  CHECK(elapsed < std::chrono::milliseconds(1000));
}

TEST_CASE("a deadline set from another thread cuts short a flush loop waiting on a full socket",
          "[transport]") {
  // FlushThread::Stop does this while a cycle waits, with no limit of its own, on a collector that
  // does not read; then the last word gets a deadline of its own and goes out once the peer reads.
  SocketPair sockets;
  sockets.ShrinkShimSendBuffer();
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  outbox.set_wait_ms(kWaitWhileConnected);
  constexpr int kMessages = 200;  // waiting for ever if nothing cut it short
  const auto begin = std::chrono::steady_clock::now();
  std::thread cycle([&] {
    for (int message = 0; message < kMessages; ++message) {
      for (int i = 0; i < 40; ++i) outbox.Append(wire::ApiExit{1, 2, 3});
      outbox.Flush();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  outbox.set_deadline_ns(MonotonicNs());
  cycle.join();
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(3));
  CHECK(transport.dropped_messages() > kMessages / 2);
  CHECK(transport.sent_messages() + transport.dropped_messages() == kMessages);

  std::vector<uint64_t> sequences;
  std::vector<std::vector<uint8_t>> storage;
  ReceiveAll(sockets.peer, &sequences, &storage);  // the collector catches up
  outbox.set_deadline_ns(MonotonicNsAfterMs(500));
  outbox.Append(wire::Goodbye{1, 0, 0});
  outbox.Flush();
  sequences.clear();
  const auto last = ReceiveAll(sockets.peer, &sequences, &storage);
  REQUIRE(last.size() == 1);
  CHECK(sequences.front() == kMessages);
  CHECK(last.front().front().type == wire::RecordType::kGoodbye);
}

TEST_CASE("waiting while connected, a slow reader loses nothing", "[transport]") {
  SocketPair sockets;
  sockets.ShrinkShimSendBuffer();
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  outbox.set_wait_ms(kWaitWhileConnected);
  constexpr int kMessages = 300;  // far more than the shrunk socket holds
  std::thread sender([&] {
    for (int message = 0; message < kMessages; ++message) {
      for (int i = 0; i < 40; ++i) outbox.Append(wire::ApiExit{1, 2, 3});
      outbox.Flush();
    }
  });
  // The reader takes one datagram at a time, blocking: however the two threads are scheduled,
  // every message arrives, in order.
  std::vector<uint64_t> sequences;
  std::vector<uint8_t> datagram(wire::kMaxMessageBytes);
  while (sequences.size() < static_cast<size_t>(kMessages)) {
    const ssize_t n = recv(sockets.peer, datagram.data(), datagram.size(), 0);
    REQUIRE(n > 0);
    wire::MessageReader reader;
    REQUIRE(reader.Open(datagram.data(), static_cast<uint32_t>(n)) == wire::DecodeError::kNone);
    sequences.push_back(reader.header().sequence);
  }
  sender.join();
  CHECK(transport.dropped_messages() == 0);
  CHECK(transport.sent_messages() == static_cast<uint64_t>(kMessages));
  for (size_t i = 0; i < sequences.size(); ++i) CHECK(sequences[i] == i);
}

TEST_CASE("waiting while connected ends when the collector goes away", "[transport]") {
  SocketPair sockets;
  sockets.ShrinkShimSendBuffer();
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  outbox.set_wait_ms(kWaitWhileConnected);
  std::thread sender([&] {
    // Fills the socket, then waits in a send until the peer closes.
    while (transport.connected()) {
      for (int i = 0; i < 40; ++i) outbox.Append(wire::ApiExit{1, 2, 3});
      outbox.Flush();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  close(sockets.peer);
  sockets.peer = -1;
  sender.join();
  CHECK_FALSE(transport.connected());
  CHECK(transport.dropped_messages() >= 1);
  CHECK(transport.sent_messages() + transport.dropped_messages() == outbox.next_sequence());
}

TEST_CASE("after the collector goes away every message is dropped and counted", "[transport]") {
  SocketPair sockets;
  Transport transport;
  transport.Adopt(sockets.shim);
  Outbox outbox(&transport);
  close(sockets.peer);
  sockets.peer = -1;
  outbox.Append(wire::ApiExit{1, 2, 3});
  outbox.Append(wire::ApiExit{1, 2, 3});
  outbox.Flush();
  outbox.Append(wire::ApiExit{1, 2, 3});
  outbox.Flush();
  CHECK_FALSE(transport.connected());
  CHECK(transport.dropped_messages() == 2);
  CHECK(transport.dropped_records() == 3);
}

TEST_CASE("connecting to a missing socket fails without blocking", "[transport]") {
  Transport transport;
  CHECK_FALSE(transport.Connect("/nonexistent-dir/gpuattr.sock", 100));
  CHECK_FALSE(transport.connected());
}

}  // namespace
}  // namespace gpuattr::inject
