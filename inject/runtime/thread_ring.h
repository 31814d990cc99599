// SpscRing: a single-producer single-consumer byte ring of encoded wire records.
//
// Each app thread owns one ring (ThreadState); the producer is that thread (NVTX handlers, CUPTI
// API callbacks), the consumer is the gpuattr-flush thread. The producer never blocks, never
// allocates and makes no syscall but the fill mark's wake (below): when a record does not fit, it
// is dropped and counted. The consumer's only syscalls here give overflow pages back (below).
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
// Resident part and overflow: the buffer may be larger than the memory the ring keeps in use
// (ThreadState maps 64 MiB with MAP_NORESERVE and keeps 4 MiB resident). The producer stays in
// the first `resident` bytes while the consumer keeps up: a record that would cross that boundary
// goes back to offset 0 (with a skip marker over the rest of the buffer) when at most half the
// resident part is in use, all of it past the start. When the consumer lags by more, in a burst,
// the producer writes on into the overflow, and goes back to the start at the first record after
// the consumer has caught up. The consumer gives the overflow's pages back (madvise MADV_DONTNEED)
// after it drained them and before it publishes its read position, so the producer, which may not
// write there until then, never sees a page vanish under it. Only pages wholly inside one drain are
// given back: a page a drain ends in stays resident until a later pass drains it whole (at most
// one page per drain). So a burst up to the buffer's size is kept whole, and afterwards the ring
// holds its resident part again.
//
// The fill mark: when a record leaves the ring at least half of its resident part full, the
// producer calls the ring's fill-mark signal (the flush thread's early wake) once; the consumer's
// next Drain re-arms it. So a burst is drained when it needs to be, not a whole flush period later,
// at the cost of one wake per half resident part (thousands of records), the producer's only
// syscall besides its ring's mmap.
//
// Memory order: the producer publishes a record by a release store of write_pos_; the consumer
// frees space by a release store of read_pos_. Everything the producer did before writing a
// record (e.g. interning the strings it refers to) is therefore visible to the consumer that
// acquired write_pos_.
#ifndef GPUATTR_INJECT_RUNTIME_THREAD_RING_H_
#define GPUATTR_INJECT_RUNTIME_THREAD_RING_H_

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "wire/codec.h"
#include "wire/protocol.h"

namespace gpuattr::inject {

class SpscRing {
 public:
  // `data` must hold `capacity` bytes, 8-byte aligned; `capacity` a power of two >= 256.
  // `fill_mark_signal`, if any, is called on the producer's thread when the ring passes half of
  // its resident part. `resident_bytes` (0 or >= capacity: all of it) is the part kept in use;
  // with less, `data` must be private anonymous memory, whose pages the consumer gives back.
  void Init(uint8_t* data, uint32_t capacity, void (*fill_mark_signal)() = nullptr,
            uint32_t resident_bytes = 0) noexcept {
    data_ = data;
    capacity_ = capacity;
    resident_ = resident_bytes == 0 || resident_bytes > capacity ? capacity : resident_bytes;
    page_bytes_ = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
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
  // Space is freed every kPublishEveryBytes, so a producer in a burst gets it back while a long
  // drain is still sending.
  template <typename Fn>
  void Drain(uint64_t until, Fn&& fn) {
    uint64_t published = read_pos_.load(std::memory_order_relaxed);
    uint64_t pos = published;
    while (pos < until) {
      const uint8_t* record = data_ + (pos & (capacity_ - 1));
      wire::RecordHeader header;
      std::memcpy(&header, record, sizeof(header));
      if (header.type != kSkipType) fn(record, header.size);
      pos += header.size;
      if (pos - published >= kPublishEveryBytes) {
        Publish(published, pos);
        published = pos;
      }
    }
    Publish(published, pos);
    RearmFillMark();
  }

  // Consumer side, or a single-threaded context (fork child): forgets every unread record.
  void DiscardAll() noexcept {
    Publish(read_pos_.load(std::memory_order_relaxed), write_pos_.load(std::memory_order_acquire));
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
  uint32_t resident_bytes() const noexcept { return resident_; }

 private:
  static constexpr uint16_t kSkipType = 0;  // never a wire RecordType
  static constexpr uint64_t kPublishEveryBytes = 1u << 20;

  // Consumer: frees [from, to) for the producer, the overflow's pages in it given back first.
  void Publish(uint64_t from, uint64_t to) noexcept {
    GiveBackOverflow(from, to);
    read_pos_.store(to, std::memory_order_release);
  }

  // Returns where `size` contiguous bytes may be written, writing a skip marker first when the
  // tail of the buffer is too short; nullptr (and a counted drop) when the ring is full.
  uint8_t* Reserve(uint32_t size) noexcept {
    const uint64_t write = write_pos_.load(std::memory_order_relaxed);
    const uint64_t read = read_pos_.load(std::memory_order_acquire);
    const uint64_t used = write - read;
    const uint32_t offset = static_cast<uint32_t>(write & (capacity_ - 1));
    const uint32_t tail = capacity_ - offset;
    // Back to the start when the record would not fit before the end, or when it would lie in the
    // overflow while the consumer keeps up (at most half the resident part in use, and all of it
    // past the start: [0, offset - used) is free, at least half the resident part).
    const bool past_resident = static_cast<uint64_t>(offset) + size > resident_;
    const bool keeping_up = used <= resident_ / 2 && used + size <= offset;
    const uint32_t skip = tail < size || (past_resident && keeping_up) ? tail : 0;
    if (capacity_ - used < static_cast<uint64_t>(skip) + size) {
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

  // Consumer, before publishing `to` as its read position: gives back the overflow's pages that
  // lie wholly within the drained positions [from, to) (at most one wrap).
  void GiveBackOverflow(uint64_t from, uint64_t to) noexcept {
    if (resident_ == capacity_ || to <= from) return;
    const uint64_t first = from & (capacity_ - 1);
    const uint64_t first_end = first + (to - from) < capacity_ ? first + (to - from) : capacity_;
    GiveBackPages(first, first_end);
    GiveBackPages(0, (to - from) - (first_end - first));
  }
  void GiveBackPages(uint64_t begin, uint64_t end) noexcept {
    if (begin < resident_) begin = resident_;
    if (end <= begin) return;
    const uintptr_t lo =
        (reinterpret_cast<uintptr_t>(data_) + begin + page_bytes_ - 1) & ~(page_bytes_ - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(data_) + end) & ~(page_bytes_ - 1);
    if (lo < hi) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
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
    if (pending_used_ >= resident_ / 2 && fill_mark_signal_ != nullptr &&
        !fill_mark_signalled_.load(std::memory_order_relaxed)) {
      fill_mark_signalled_.store(true, std::memory_order_relaxed);
      fill_mark_signal_();
    }
  }

  uint8_t* data_ = nullptr;
  uint32_t capacity_ = 0;
  uint32_t resident_ = 0;        // the part the producer stays in while it can
  uintptr_t page_bytes_ = 4096;  // consumer-only
  uint64_t pending_ = 0;         // producer-only: write position after the reserved record
  uint64_t pending_used_ = 0;    // producer-only: bytes in use once it is committed
  void (*fill_mark_signal_)() = nullptr;
  std::atomic<bool> fill_mark_signalled_{false};  // set by the producer, cleared by Drain
  alignas(64) std::atomic<uint64_t> write_pos_{0};
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> read_pos_{0};
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_THREAD_RING_H_
