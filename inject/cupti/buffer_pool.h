// BufferPool: the CUPTI activity buffers, handed out by bufferRequested and returned through
// bufferCompleted, recycled without locks.
//
// Who calls:
//   Request   - CUPTI's bufferRequested, on app threads (per-thread buffers are CUPTI 13's default)
//               and possibly under a CUPTI-internal lock: lock-free, no syscall, no malloc on the
//               pool path.
//   Complete  - CUPTI's bufferCompleted, on CUPTI's worker thread or a flushing thread: pushes the
//               buffer on the completed list and returns (translation happens elsewhere).
//   TakeCompleted / Release - the gpuattr-flush thread.
//
// Storage: kPoolBuffers buffers of kBufferBytes in one anonymous mapping made by Init (pages are
// only backed once CUPTI writes them). Each buffer has a descriptor index; the free list and the
// completed list are Treiber stacks of indices. The free list is popped by many threads, so its
// head carries an ABA tag; the completed list is only ever swapped out whole by one consumer.
//
// Exhaustion: with CUPTI >= 13.0 (API version 130000) Request declines with NULL and counts it;
// CUPTI then drops the records and counts them itself. Older CUPTI could crash on a declined
// buffer (kineto commit baea3804), so it gets an overflow buffer from malloc instead, tracked by
// one of kOverflowDescriptors descriptors and freed after translation.
#ifndef GPUATTR_INJECT_CUPTI_BUFFER_POOL_H_
#define GPUATTR_INJECT_CUPTI_BUFFER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gpuattr::inject {

class BufferPool {
 public:
  static constexpr uint32_t kPoolBuffers = 64;
  static constexpr uint32_t kOverflowDescriptors = 192;
  static constexpr uint32_t kDescriptors = kPoolBuffers + kOverflowDescriptors;
  static constexpr size_t kBufferBytes = 1u << 20;

  constexpr BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Maps the pool. `may_decline`: CUPTI accepts a NULL buffer (API version >= 130000).
  // Runs on: the thread running InitializeInjection. False if the mapping failed.
  bool Init(size_t buffer_bytes, bool may_decline) noexcept;
  bool ready() const noexcept { return base_ != nullptr; }

  // Runs on: any app thread (CUPTI bufferRequested). Sets *buffer to NULL when declining.
  void Request(uint8_t** buffer, size_t* size) noexcept;
  // Runs on: CUPTI's worker thread or a flushing thread (CUPTI bufferCompleted).
  void Complete(uint8_t* buffer, size_t valid_size) noexcept;

  // Runs on: the gpuattr-flush thread. Calls fn(uint8_t* buffer, size_t valid_size) for every
  // completed buffer (most recent first), then returns it to the pool.
  template <typename Fn>
  void TakeCompleted(Fn&& fn) {
    uint32_t index = completed_.exchange(kNone, std::memory_order_acquire);
    while (index != kNone) {
      const uint32_t next = next_completed_[index];
      fn(descriptors_[index].buffer, descriptors_[index].valid_size);
      Release(index);
      index = next;
    }
  }

  uint64_t declined() const noexcept { return declined_.load(std::memory_order_relaxed); }
  void ResetDeclined() noexcept { declined_.store(0, std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;

  struct Descriptor {
    uint8_t* buffer = nullptr;
    size_t valid_size = 0;
  };

  // Tagged Treiber stack over next_free_: head = tag << 32 | index.
  bool PopFree(std::atomic<uint64_t>* head, uint32_t* index) noexcept;
  void PushFree(std::atomic<uint64_t>* head, uint32_t index) noexcept;
  void Release(uint32_t index) noexcept;

  uint8_t* base_ = nullptr;
  size_t buffer_bytes_ = 0;
  bool may_decline_ = true;
  Descriptor descriptors_[kDescriptors];
  std::atomic<uint32_t> next_free_[kDescriptors] = {};
  uint32_t next_completed_[kDescriptors] = {};
  std::atomic<uint64_t> free_pool_{kNone};      // descriptors with pool memory
  std::atomic<uint64_t> free_overflow_{kNone};  // descriptors without memory (older CUPTI only)
  std::atomic<uint32_t> completed_{kNone};
  std::atomic<uint64_t> declined_{0};
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_BUFFER_POOL_H_
