// Per-thread state of the shim: the thread's record ring, its merged NVTX push/pop stack and its
// CUPTI API nesting, plus the registry through which the gpuattr-flush thread finds every ring.
//
// Who calls: each app thread touches only its own ThreadState (CurrentThread()), without locks.
// The flush thread walks the registry and drains rings (SpscRing is the only shared part).
//
// Ownership and lifetime: a ThreadState and its ring live in one mmap'd block (address space only,
// MAP_NORESERVE: pages are taken as the ring touches them), allocated on the thread's first event
// and never unmapped. That mmap, the ring's fill-mark wake (once per half
// ring) and, on the one thread that starts the session, its connect and Hello are the only
// syscalls an app thread makes for the shim.
// When a thread exits (pthread key destructor) its state is marked kRetired; once the flush thread
// has drained a retired ring it marks it kFree, and the next new thread reuses it instead of
// mapping a new block. The registry is a push-only lock-free list.
//
// The NVTX stack: one stack per thread with every domain merged in push order. Each frame keeps
// `node`, the interned path of the stack up to and including it (so the current path is the top
// frame's node, read by launch callbacks in one load of `current_node`), and `pushed_node`, its
// path when it was pushed (what its RangePop reports). A domain pop removes that domain's most
// recent frame even when it is not on top; the frames above it then get their paths re-interned.
#ifndef GPUATTR_INJECT_RUNTIME_THREAD_STATE_H_
#define GPUATTR_INJECT_RUNTIME_THREAD_STATE_H_

#include <atomic>
#include <cstdint>

#include "runtime/thread_ring.h"

namespace gpuattr::inject {

// Each thread's ring: 64 MiB of address space (MAP_NORESERVE), of which 4 MiB stay in use; the
// rest holds a burst the flush thread cannot keep up with (1M NVTX pairs, 48 MB, back to back)
// and is given back once drained (thread_ring.h). So the cap is 64 MiB per thread during a burst
// and 4 MiB plus a few pages otherwise.
constexpr uint32_t kRingCapacityBytes = 64u << 20;
constexpr uint32_t kRingResidentBytes = 4u << 20;
constexpr uint32_t kMaxRangeDepth = 128;

struct RangeFrame {
  uint32_t node;         // path of the stack up to and including this frame (0: not interned)
  uint32_t pushed_node;  // `node` at push time, reported by the RangePop
  uint32_t name;         // string ids, to re-intern paths when a frame below is removed
  uint32_t domain;
  int32_t level;  // 0-based nesting level within its domain, returned by push and pop
  uint32_t sent;  // 1 when its RangePush was sent, so its RangePop is sent too
  uint32_t step;  // 1 when it is a step range of the watched capture window
};

struct ThreadState {
  enum Status : uint32_t { kActive = 1, kRetired = 2, kFree = 3 };

  SpscRing ring;
  std::atomic<uint32_t> status{kActive};
  ThreadState* next = nullptr;  // registry link, written once before publication

  // Everything below is touched only by the owning thread (and by the fork child handler, when
  // no other thread exists).
  uint32_t tid = 0;
  uint32_t current_node = 0;  // top frame's node; 0 with an empty stack
  uint32_t depth = 0;         // frames in use
  uint32_t overflow = 0;      // pushes beyond kMaxRangeDepth: counted, not tracked
  RangeFrame frames[kMaxRangeDepth];
  uint32_t window_epoch = 0;  // the capture window whose open frames this thread has reported

  // CUPTI API nesting (see cupti/subscriber.h).
  uint32_t runtime_depth = 0;      // open traced runtime API calls
  uint32_t api_depth = 0;          // open traced calls that are not nested driver calls
  uint32_t graph_setup_depth = 0;  // open cudaGraphInstantiate*/Clone-like calls
  uint32_t outer_correlation = 0;  // correlation id of the outermost open traced call

  // Touched only by the flush thread: the tid whose OS thread name was sent on this connection.
  uint32_t named_tid = 0;
};

class ThreadRegistry {
 public:
  explicit constexpr ThreadRegistry(uint32_t ring_bytes = kRingCapacityBytes,
                                    uint32_t resident_bytes = kRingResidentBytes)
      : ring_bytes_(ring_bytes), resident_bytes_(resident_bytes) {}
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // A ready ThreadState for the calling thread: a recycled one, or a newly mapped one. nullptr
  // when memory cannot be mapped. Runs on: an app thread, on its first event.
  ThreadState* Acquire(uint32_t tid) noexcept;
  // The thread that owned `state` has exited. Runs on: the exiting thread (key destructor).
  static void Retire(ThreadState* state) noexcept;

  // Visits every state ever created (any status). Runs on: the flush thread, tests.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (ThreadState* s = head_.load(std::memory_order_acquire); s != nullptr; s = s->next) fn(*s);
  }

  // Fork child: every ring is emptied and its drop counter reset; the states of threads that do
  // not exist in the child become free; the survivor's frames are marked unsent (their pushes
  // belong to the parent's connection) and its tid is refreshed.
  void ResetAfterFork(ThreadState* survivor, uint32_t tid) noexcept;

 private:
  uint32_t ring_bytes_;
  uint32_t resident_bytes_;
  std::atomic<ThreadState*> head_{nullptr};
};

// The calling thread's state in the global registry, created on first use; nullptr when it
// cannot be created. Runs on: any app thread; the fast path is one TLS load.
ThreadState* CurrentThread() noexcept;
// The calling thread's state if it already has one (no allocation).
ThreadState* CurrentThreadIfAny() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_THREAD_STATE_H_
