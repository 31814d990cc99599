#include "cupti/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>

namespace gpuattr::inject {
namespace {

// Overflow buffers (older CUPTI only) carry their descriptor index in a header before the data.
constexpr size_t kOverflowHeader = 64;

}  // namespace

bool BufferPool::Init(size_t buffer_bytes, bool may_decline) noexcept {
  if (base_ != nullptr) return true;
  void* block = mmap(nullptr, buffer_bytes * kPoolBuffers, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (block == MAP_FAILED) return false;
  buffer_bytes_ = buffer_bytes;
  may_decline_ = may_decline;
  for (uint32_t i = 0; i < kDescriptors; ++i) {
    descriptors_[i].buffer =
        i < kPoolBuffers ? static_cast<uint8_t*>(block) + i * buffer_bytes : nullptr;
  }
  for (uint32_t i = kDescriptors; i-- > 0;) {
    PushFree(i < kPoolBuffers ? &free_pool_ : &free_overflow_, i);
  }
  base_ = static_cast<uint8_t*>(block);
  return true;
}

bool BufferPool::PopFree(std::atomic<uint64_t>* head, uint32_t* index) noexcept {
  uint64_t old_head = head->load(std::memory_order_acquire);
  for (;;) {
    const uint32_t top = static_cast<uint32_t>(old_head);
    if (top == kNone) return false;
    const uint32_t next = next_free_[top].load(std::memory_order_relaxed);
    const uint64_t new_head = ((old_head >> 32) + 1) << 32 | next;
    if (head->compare_exchange_weak(old_head, new_head, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      *index = top;
      return true;
    }
  }
}

void BufferPool::PushFree(std::atomic<uint64_t>* head, uint32_t index) noexcept {
  uint64_t old_head = head->load(std::memory_order_relaxed);
  for (;;) {
    next_free_[index].store(static_cast<uint32_t>(old_head), std::memory_order_relaxed);
    const uint64_t new_head = ((old_head >> 32) + 1) << 32 | index;
    if (head->compare_exchange_weak(old_head, new_head, std::memory_order_release,
                                    std::memory_order_relaxed)) {
      return;
    }
  }
}

void BufferPool::Request(uint8_t** buffer, size_t* size) noexcept {
  *buffer = nullptr;
  *size = 0;
  if (base_ == nullptr) return;
  uint32_t index;
  if (PopFree(&free_pool_, &index)) {
    *buffer = descriptors_[index].buffer;
    *size = buffer_bytes_;
    return;
  }
  if (!may_decline_ && PopFree(&free_overflow_, &index)) {
    auto* block = static_cast<uint8_t*>(std::aligned_alloc(64, kOverflowHeader + buffer_bytes_));
    if (block != nullptr) {
      *reinterpret_cast<uint32_t*>(block) = index;
      descriptors_[index].buffer = block + kOverflowHeader;
      *buffer = block + kOverflowHeader;
      *size = buffer_bytes_;
      return;
    }
    PushFree(&free_overflow_, index);
  }
  declined_.fetch_add(1, std::memory_order_relaxed);
}

void BufferPool::Complete(uint8_t* buffer, size_t valid_size) noexcept {
  if (buffer == nullptr || base_ == nullptr) return;
  uint32_t index;
  if (buffer >= base_ && buffer < base_ + buffer_bytes_ * kPoolBuffers) {
    index = static_cast<uint32_t>(static_cast<size_t>(buffer - base_) / buffer_bytes_);
  } else if (!may_decline_) {
    index = *reinterpret_cast<const uint32_t*>(buffer - kOverflowHeader);
    if (index < kPoolBuffers || index >= kDescriptors) return;  // not ours: leave it alone
  } else {
    return;  // not ours: leave it alone
  }
  descriptors_[index].valid_size = valid_size;
  uint32_t head = completed_.load(std::memory_order_relaxed);
  do {
    next_completed_[index] = head;
  } while (!completed_.compare_exchange_weak(head, index, std::memory_order_release,
                                             std::memory_order_relaxed));
}

void BufferPool::Release(uint32_t index) noexcept {
  if (index < kPoolBuffers) {
    PushFree(&free_pool_, index);
    return;
  }
  std::free(descriptors_[index].buffer - kOverflowHeader);
  descriptors_[index].buffer = nullptr;
  PushFree(&free_overflow_, index);
}

}  // namespace gpuattr::inject
