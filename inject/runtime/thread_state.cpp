#include "runtime/thread_state.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>

#include "runtime/flush_thread.h"
#include "runtime/shim_state.h"

namespace gpuattr::inject {
namespace {

// Page-aligned, so that the ring's resident part and its overflow begin on page boundaries.
constexpr uint32_t kHeaderBytes = (sizeof(ThreadState) + 4095u) & ~4095u;

thread_local ThreadState* t_state = nullptr;

pthread_key_t g_exit_key;
std::atomic<int> g_exit_key_state{0};  // 0: none, 1: being created, 2: ready, 3: failed

void OnThreadExit(void* state) { ThreadRegistry::Retire(static_cast<ThreadState*>(state)); }

// Registers OnThreadExit once per process; a thread whose exit cannot be observed keeps its ring.
bool EnsureExitKey() noexcept {
  int expected = 0;
  if (g_exit_key_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    const int ok = pthread_key_create(&g_exit_key, &OnThreadExit);
    g_exit_key_state.store(ok == 0 ? 2 : 3, std::memory_order_release);
  }
  int state;
  while ((state = g_exit_key_state.load(std::memory_order_acquire)) == 1) sched_yield();
  return state == 2;
}

}  // namespace

ThreadState* ThreadRegistry::Acquire(uint32_t tid) noexcept {
  for (ThreadState* s = head_.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    uint32_t expected = ThreadState::kFree;
    if (s->status.compare_exchange_strong(expected, ThreadState::kActive,
                                          std::memory_order_acq_rel)) {
      // The flush thread marked it free only after draining it, so the ring is empty.
      s->tid = tid;
      s->current_node = 0;
      s->depth = 0;
      s->overflow = 0;
      s->runtime_depth = 0;
      s->api_depth = 0;
      s->graph_setup_depth = 0;
      s->outer_correlation = 0;
      return s;
    }
  }
  // Where address space is short (strict overcommit ignores MAP_NORESERVE), a ring of its
  // resident part only.
  const auto map_block = [](uint32_t ring_bytes) {
    return mmap(nullptr, kHeaderBytes + ring_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  };
  uint32_t ring_bytes = ring_bytes_;
  void* block = map_block(ring_bytes);
  if (block == MAP_FAILED && resident_bytes_ < ring_bytes_) {
    ring_bytes = resident_bytes_;
    block = map_block(ring_bytes);
  }
  if (block == MAP_FAILED) return nullptr;
  auto* state = new (block) ThreadState();
  state->ring.Init(static_cast<uint8_t*>(block) + kHeaderBytes, ring_bytes, &WakeFlushThreadEarly,
                   resident_bytes_);
  state->tid = tid;
  ThreadState* head = head_.load(std::memory_order_relaxed);
  do {
    state->next = head;
  } while (!head_.compare_exchange_weak(head, state, std::memory_order_release,
                                        std::memory_order_relaxed));
  return state;
}

void ThreadRegistry::Retire(ThreadState* state) noexcept {
  if (state != nullptr) state->status.store(ThreadState::kRetired, std::memory_order_release);
}

void ThreadRegistry::ResetAfterFork(ThreadState* survivor, uint32_t tid) noexcept {
  ForEach([&](ThreadState& s) {
    s.ring.DiscardAll();
    s.ring.ResetDropped();
    if (&s != survivor) {
      s.named_tid = 0;
      s.status.store(ThreadState::kFree, std::memory_order_relaxed);
      return;
    }
    s.tid = tid;
    s.named_tid = 0;
    for (uint32_t i = 0; i < s.depth; ++i) s.frames[i].sent = 0;
    s.runtime_depth = 0;
    s.api_depth = 0;
    s.graph_setup_depth = 0;
    s.outer_correlation = 0;
  });
}

ThreadState* CurrentThreadIfAny() noexcept { return t_state; }

ThreadState* CurrentThread() noexcept {
  ThreadState* state = t_state;
  if (state != nullptr) return state;
  state = Shim().threads.Acquire(static_cast<uint32_t>(gettid()));
  if (state == nullptr) return nullptr;
  if (EnsureExitKey()) pthread_setspecific(g_exit_key, state);
  t_state = state;
  return state;
}

}  // namespace gpuattr::inject
