// SpscRing: a single-producer single-consumer byte ring of encoded wire records.
//
// Each app thread owns one ring (ThreadState); the producer is that thread (NVTX handlers, CUPTI
// API callbacks), the consumer is the gpuattr-flush thread. The producer never blocks, never
// allocates and makes no syscall but the fill mark's wake (below): when a record does not fit, it
// is dropped and counted.
//
//   data_: [ rec | rec | rec | skip........ ]   capacity_ bytes, a power of two
//            ^read_pos_ & mask      ^write_pos_ & mask
//
// Positions are free-running 64-bit byte counters; used = write_pos_ - read_pos_. A record never
// wraps: when it does not fit before the end of the buffer, the producer first writes a skip marker
// (a RecordHeader with type 0) covering the tail, which the consumer steps over and never sends.
// Records are whole wire records (RecordHeader + body + padding, a multiple of 8 bytes), so the
// consumer copies them into a message unchanged.
//
// The fill mark: when a record leaves the ring at least half full, the producer calls the ring's
// fill-mark signal (the flush thread's early wake) once; the consumer's next Drain re-arms it. So
// a burst is drained when it needs to be, not a whole flush period later, at the cost of one wake
// per half ring (thousands of records), the producer's only syscall besides its ring's mmap.
//
// Memory order: the producer publishes a record by a release store of write_pos_; the consumer
// frees space by a release store of read_pos_. Everything the producer did before writing a
// record (e.g. interning the strings it refers to) is therefore visible to the consumer that
// acquired write_pos_.
#ifndef GPUATTR_INJECT_RUNTIME_THREAD_RING_H_
#define GPUATTR_INJECT_RUNTIME_THREAD_RING_H_

#include <atomic>
#include <cstdint>
#include <cstring>

#include "wire/codec.h"
#include "wire/protocol.h"

namespace gpuattr::inject {

class SpscRing {
 public:
  // `data` must hold `capacity` bytes, 8-byte aligned; `capacity` a power of two >= 256.
  // `fill_mark_signal`, if any, is called on the producer's thread when the ring passes half full.
  void Init(uint8_t* data, uint32_t capacity, void (*fill_mark_signal)() = nullptr) noexcept {
    data_ = data;
    capacity_ = capacity;
    fill_mark_signal_ = fill_mark_signal;
    fill_mark_signalled_.store(false, std::memory_order_relaxed);
    write_pos_.store(0, std::memory_order_relaxed);
    read_pos_.store(0, std::memory_order_relaxed);
    dropped_.store(0, std::memory_order_relaxed);
  }

  // Producer: encodes one record straight into the ring. Returns false (and counts a drop) when
  // the ring is full. Runs on: the owning app thread.
  template <typename Body>
  bool Push(wire::RecordType type, const Body& body, uint16_t flags = 0) noexcept {
    constexpr uint32_t kSize = wire::PaddedRecordBytes(sizeof(Body));
    uint8_t* out = Reserve(kSize);
    if (out == nullptr) return false;
    wire::EncodeRecord(out, type, body);
    if (flags != 0) {
      wire::RecordHeader header;
      std::memcpy(&header, out, sizeof(header));
      header.flags = flags;
      std::memcpy(out, &header, sizeof(header));
    }
    Commit();
    return true;
  }

  // Consumer: the producer's published position; records before it are complete.
  uint64_t PublishedPosition() const noexcept { return write_pos_.load(std::memory_order_acquire); }

  // Consumer: hands every record in [read position, until) to fn(const uint8_t* record,
  // uint32_t size) and then frees their space. `until` must come from PublishedPosition().
  template <typename Fn>
  void Drain(uint64_t until, Fn&& fn) {
    uint64_t pos = read_pos_.load(std::memory_order_relaxed);
    while (pos < until) {
      const uint8_t* record = data_ + (pos & (capacity_ - 1));
      wire::RecordHeader header;
      std::memcpy(&header, record, sizeof(header));
      if (header.type != kSkipType) fn(record, header.size);
      pos += header.size;
    }
    read_pos_.store(pos, std::memory_order_release);
    RearmFillMark();
  }

  // Consumer side, or a single-threaded context (fork child): forgets every unread record.
  void DiscardAll() noexcept {
    read_pos_.store(write_pos_.load(std::memory_order_acquire), std::memory_order_release);
    RearmFillMark();
  }

  // Consumer: how far the consumer has read.
  uint64_t ConsumedPosition() const noexcept { return read_pos_.load(std::memory_order_relaxed); }

  bool Empty() const noexcept {
    return read_pos_.load(std::memory_order_acquire) == write_pos_.load(std::memory_order_acquire);
  }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  void ResetDropped() noexcept { dropped_.store(0, std::memory_order_relaxed); }
  uint32_t capacity() const noexcept { return capacity_; }

 private:
  static constexpr uint16_t kSkipType = 0;  // never a wire RecordType

  // Returns where `size` contiguous bytes may be written, writing a skip marker first when the
  // tail of the buffer is too short; nullptr (and a counted drop) when the ring is full.
  uint8_t* Reserve(uint32_t size) noexcept {
    const uint64_t write = write_pos_.load(std::memory_order_relaxed);
    const uint64_t read = read_pos_.load(std::memory_order_acquire);
    const uint32_t offset = static_cast<uint32_t>(write & (capacity_ - 1));
    const uint32_t tail = capacity_ - offset;
    const uint32_t skip = tail < size ? tail : 0;
    if (capacity_ - (write - read) < static_cast<uint64_t>(skip) + size) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    if (skip != 0) {
      wire::RecordHeader marker{kSkipType, 0, skip};
      std::memcpy(data_ + offset, &marker, sizeof(marker));
    }
    pending_ = write + skip + size;
    pending_used_ = pending_ - read;
    return data_ + ((write + skip) & (capacity_ - 1));
  }

  // Consumer: written only when it was signalled, so that a drain does not dirty the cache line
  // the producer reads on every push.
  void RearmFillMark() noexcept {
    if (fill_mark_signalled_.load(std::memory_order_relaxed)) {
      fill_mark_signalled_.store(false, std::memory_order_relaxed);
    }
  }

  void Commit() noexcept {
    write_pos_.store(pending_, std::memory_order_release);
    if (pending_used_ >= capacity_ / 2 && fill_mark_signal_ != nullptr &&
        !fill_mark_signalled_.load(std::memory_order_relaxed)) {
      fill_mark_signalled_.store(true, std::memory_order_relaxed);
      fill_mark_signal_();
    }
  }

  uint8_t* data_ = nullptr;
  uint32_t capacity_ = 0;
  uint64_t pending_ = 0;       // producer-only: write position after the reserved record
  uint64_t pending_used_ = 0;  // producer-only: bytes in use once it is committed
  void (*fill_mark_signal_)() = nullptr;
  std::atomic<bool> fill_mark_signalled_{false};  // set by the producer, cleared by Drain
  alignas(64) std::atomic<uint64_t> write_pos_{0};
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> read_pos_{0};
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_THREAD_RING_H_
