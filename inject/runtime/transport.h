// Transport: the non-blocking SOCK_SEQPACKET connection to the collector, and Outbox, which packs
// wire records into messages (at most wire::kMaxMessageBytes each) and sends them.
//
// Runs on: the gpuattr-flush thread (tests: the test thread). App threads never touch it, except
// that the thread starting the session connects and sends Hello before the flush thread exists
// (FlushThread::Start), and the thread stopping the shim may set the Outbox's deadline
// (set_deadline_ns).
//
// Drop policy: a message is one datagram. When the socket is full, Send waits for writability at
// most `wait_ms`, or, with kWaitWhileConnected, for as long as the peer is connected: a collector
// that is slow, descheduled or stopped loses nothing while the thread rings and the CUPTI pool
// hold the backlog (their drops are counted where they happen), and the app never waits, since
// only the flush thread sends. Either wait ends early at the Outbox's deadline, which the thread
// stopping the shim sets (the process is exiting: its last records get a budget, not a promise).
// A message that was not sent is dropped, and it and its records counted; once the peer is gone
// (EPIPE, ECONNRESET, ...) every later message is dropped and counted the same way. Sequence
// numbers advance for every message built, sent or dropped, so the collector sees the gap.
#ifndef GPUATTR_INJECT_RUNTIME_TRANSPORT_H_
#define GPUATTR_INJECT_RUNTIME_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#include "wire/codec.h"
#include "wire/protocol.h"

namespace gpuattr::inject {

// A send's wait for a full socket with no limit of its own: until the socket takes the message,
// the peer is gone, or a deadline cuts it short.
constexpr int kWaitWhileConnected = -1;

class Transport {
 public:
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  ~Transport() { Close(); }

  // Connects to the collector's socket at `path` (non-blocking, close-on-exec). Waits for a busy
  // listener at most `wait_ms`. Returns false, leaving the transport broken, on failure.
  bool Connect(const char* path, int wait_ms) noexcept;
  // Takes over an already connected SOCK_SEQPACKET socket (tests: one end of a socketpair).
  void Adopt(int fd) noexcept;
  void Close() noexcept;
  // Forgets the socket without any I/O other than close(2): used in a fork child.
  void AbandonAfterFork() noexcept { Close(); }

  // Sends one datagram of `records` records, waiting for a full socket at most `wait_ms`
  // (kWaitWhileConnected: no limit of its own) and never past a non-zero `*deadline_ns`
  // (MonotonicNs), which another thread may set while it waits. Returns true if the socket took it.
  bool Send(const uint8_t* data, uint32_t size, uint32_t records, int wait_ms,
            const std::atomic<uint64_t>* deadline_ns = nullptr) noexcept;

  // Reads one waiting datagram (armed mode's control messages) without blocking. Returns its
  // size; 0 when none is waiting or it did not fit `capacity` (it is then discarded); -1 when the
  // connection is gone. Runs on: the flush thread.
  int Receive(uint8_t* buffer, uint32_t capacity) noexcept;

  bool connected() const noexcept { return fd_ >= 0 && !broken_; }
  uint64_t dropped_messages() const noexcept { return dropped_messages_; }
  uint64_t dropped_records() const noexcept { return dropped_records_; }
  uint64_t sent_messages() const noexcept { return sent_messages_; }

 private:
  void Drop(uint32_t records) noexcept {
    ++dropped_messages_;
    dropped_records_ += records;
  }

  int fd_ = -1;
  bool broken_ = true;
  uint64_t dropped_messages_ = 0;
  uint64_t dropped_records_ = 0;
  uint64_t sent_messages_ = 0;
};

// Accumulates records into one message and sends it when the next record would not fit, or on
// Flush(). Single-threaded.
class Outbox {
 public:
  explicit Outbox(Transport* transport) noexcept
      : transport_(transport), writer_(buffer_, sizeof(buffer_)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // How long each send may wait for a full socket (kWaitWhileConnected: while the peer is there).
  void set_wait_ms(int wait_ms) noexcept { wait_ms_ = wait_ms; }
  // From now on, the waits of all sends together end at `deadline_ns` (MonotonicNs). Runs on:
  // any thread (the stopping thread cuts short a cycle that waits on a slow collector).
  void set_deadline_ns(uint64_t deadline_ns) noexcept {
    deadline_ns_.store(deadline_ns, std::memory_order_relaxed);
  }

  template <typename Body>
  void Append(const Body& body, uint16_t flags = 0) noexcept {
    if (!writer_.Append(body, flags)) {
      Flush();
      writer_.Append(body, flags);
    }
  }
  void AppendString(uint32_t id, std::string_view text) noexcept {
    if (!writer_.AppendString(id, text)) {
      Flush();
      writer_.AppendString(id, text);
    }
  }
  // An already encoded record (from a thread ring or the CUPTI staging buffer).
  void AppendEncoded(const uint8_t* record, uint32_t size) noexcept {
    if (!writer_.AppendEncoded(record, size)) {
      Flush();
      writer_.AppendEncoded(record, size);
    }
  }
  // Sends the pending message, if any.
  void Flush() noexcept;

  uint64_t next_sequence() const noexcept { return sequence_; }
  // A capture window's stream restarts the numbering (docs/attach.md). Only when empty.
  void RestartSequence() noexcept { sequence_ = 0; }

 private:
  Transport* transport_;
  uint8_t buffer_[wire::kMaxMessageBytes];
  wire::MessageWriter writer_;
  uint64_t sequence_ = 0;
  int wait_ms_ = 0;
  std::atomic<uint64_t> deadline_ns_{0};  // 0: none
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_TRANSPORT_H_
