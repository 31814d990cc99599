// ShimState: the process-wide state of the shim, one constant-initialised object in .bss (no
// constructor runs at load time, no destructor at exit, so late callbacks during static
// destruction still find valid memory).
//
// Who touches what:
//   threads, strings, paths - app threads (NVTX handlers, CUPTI callbacks) and the flush thread;
//                             see their headers for the lock-free protocols.
//   buffers                  - CUPTI's buffer callbacks (any thread) and the flush thread.
//   cupti                    - written once by InitializeInjection before cupti_bound is set
//                             (release); immutable afterwards.
//   cupti_bound/active       - atomics; `active` goes false on a fatal CUPTI error, in a fork
//                             child and at teardown, after which nobody calls into CUPTI again.
//   hot_flags                - the single word app-thread hot paths load (relaxed) to learn
//                             whether they may record: 0 in the common case.
//   window, subscriber       - armed mode's capture windows (runtime/capture_window.h): the
//                             flush thread writes, app threads read on slow paths.
#ifndef GPUATTR_INJECT_RUNTIME_SHIM_STATE_H_
#define GPUATTR_INJECT_RUNTIME_SHIM_STATE_H_

#include <atomic>
#include <cstdint>

#include "cupti/buffer_pool.h"
#include "cupti/cupti_api.h"
#include "runtime/capture_window.h"
#include "runtime/intern_table.h"
#include "runtime/thread_state.h"

namespace gpuattr::inject {

constexpr uint32_t kHotTornDown = 1u << 0;     // teardown finished (or the shim disabled itself)
constexpr uint32_t kHotForkRestart = 1u << 1;  // fork child: start a fresh session on next event
constexpr uint32_t kHotArmed = 1u << 2;        // armed, no window recording: keep NVTX stacks only

struct ShimState {
  ThreadRegistry threads;
  StringTable strings;
  PathTable paths;
  BufferPool buffers;
  CuptiApi cupti;
  std::atomic<bool> cupti_bound{false};   // `cupti` is filled: record walking is possible
  std::atomic<bool> cupti_active{false};  // subscribed and enabled: CUPTI may be called
  std::atomic<uint32_t> cupti_version{0};
  std::atomic<uint64_t> next_range_id{1};  // nvtxRangeId_t values handed out
  std::atomic<uint32_t> hot_flags{0};
  // String id of the NVTX context domain's name once a domain of that name was created (0:
  // none); nvtx_injection.h says what its ranges are.
  std::atomic<uint32_t> context_domain{0};
  CaptureWindow window;
  std::atomic<CUpti_SubscriberHandle> subscriber{nullptr};  // while subscribed
};

extern constinit ShimState g_shim;
inline ShimState& Shim() noexcept { return g_shim; }

// Whether push/pop ranges of `domain` (a string id) are context ranges. Runs on: any app thread.
inline bool IsContextDomain(uint32_t domain) noexcept {
  return domain != 0 && domain == g_shim.context_domain.load(std::memory_order_relaxed);
}

// Slow path of AcceptsEvents; see session.h.
bool AcceptsEventsSlow(uint32_t flags) noexcept;

// Whether an app-thread hot path may record an event now. One relaxed load when nothing special
// is going on. Runs on: any app thread.
inline bool AcceptsEvents() noexcept {
  const uint32_t flags = g_shim.hot_flags.load(std::memory_order_relaxed);
  return flags == 0 || AcceptsEventsSlow(flags);
}

// What an app-thread hot path may do with the event it is handling. One relaxed load when
// nothing special is going on. Runs on: any app thread.
enum class EventMode {
  kIgnore,      // inert, torn down, or the session could not start
  kTrackStack,  // armed between windows: NVTX keeps the thread's stack, nothing is written
  kRecord,
};
inline EventMode CurrentEventMode() noexcept {
  const uint32_t flags = g_shim.hot_flags.load(std::memory_order_relaxed);
  if (flags == 0) return EventMode::kRecord;
  if (!AcceptsEventsSlow(flags)) return EventMode::kIgnore;
  return (flags & kHotArmed) == 0 ? EventMode::kRecord : EventMode::kTrackStack;
}

// Turns every later callback into a no-op: the last-resort reaction to an unexpected exception.
inline void DisableShim() noexcept {
  g_shim.hot_flags.fetch_or(kHotTornDown, std::memory_order_relaxed);
  g_shim.cupti_active.store(false, std::memory_order_relaxed);
}

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_SHIM_STATE_H_
