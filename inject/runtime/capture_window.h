// CaptureWindow: the state an armed process shares between the gpuattr-flush thread, which
// opens and closes capture windows on the daemon's request, and the app threads, whose NVTX
// handlers and CUPTI callbacks learn from it whether to record (docs/attach.md).
//
//   armed ──kOpenWindow──> waiting_for_step ──top-level step push──> recording ──N step pops──┐
//     ^        (kNow) ───────────────────────────────────────────────> recording            │
//     └──── flush thread closes: flush, detach, WindowEnd <── kCloseWindow / exit <──────────┘
//
// Recording itself is the absence of kHotArmed in ShimState::hot_flags, the one word every hot
// path already loads. Everything else here is read only on slow paths: a thread's first event
// in a new window (the epoch differs from the one it saw last: it reports its open ranges), a
// push on an empty stack or a pop of a step range while a steps window is watched, and a CUDA
// API exit while a detach is requested.
//
// Threads: Open/BeginNow/Close* and the detach waiting run on the flush thread; the On* hooks run
// on app threads; every field is an atomic, so no lock is taken on either side.
#ifndef GPUATTR_INJECT_RUNTIME_CAPTURE_WINDOW_H_
#define GPUATTR_INJECT_RUNTIME_CAPTURE_WINDOW_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#include "runtime/thread_state.h"

namespace gpuattr::inject {

class CaptureWindow {
 public:
  enum Phase : uint32_t {
    kIdle = 0,            // armed, nothing asked for
    kWaitingForStep = 1,  // recording begins at the next top-level step push
    kRecording = 2,
    kStepsDone = 3,  // the requested steps popped; recording stopped, the flush thread closes
  };
  enum DetachState : uint32_t {
    kNoDetach = 0,
    kDetachRequested = 1,
    kDetaching = 2,
    kDetached = 3
  };
  static constexpr uint32_t kMaxStepName = 256;

  constexpr CaptureWindow() = default;
  CaptureWindow(const CaptureWindow&) = delete;
  CaptureWindow& operator=(const CaptureWindow&) = delete;

  // ---- Flush thread. ----
  // Arms a steps window: recording begins at the next top-level range named `step_name`, or with
  // an empty name one of the built-in step names, and stops after `steps` of them popped.
  void WatchSteps(uint32_t steps, std::string_view step_name) noexcept;
  // Begins recording now (kNow windows). Returns the begin time.
  uint64_t BeginNow() noexcept;
  // Stops recording (idempotent); returns the end time: the last step's pop for steps windows.
  uint64_t StopRecording() noexcept;
  // Back to kIdle once the window's last record has been sent.
  void Reset() noexcept;
  uint32_t phase() const noexcept { return phase_.load(std::memory_order_acquire); }
  uint64_t begin_ns() const noexcept { return begin_ns_.load(std::memory_order_acquire); }
  uint32_t steps_seen() const noexcept { return steps_seen_.load(std::memory_order_acquire); }

  // Detach (cupti-notes §5): the flush thread requests it, the next API exit performs it.
  void RequestDetach(uint64_t now_ns) noexcept;
  // Takes back a request no API exit has claimed yet. False when one is running or done.
  bool CancelDetachRequest() noexcept;
  uint32_t detach_state() const noexcept { return detach_.load(std::memory_order_acquire); }
  // ns from RequestDetach to the end of cuptiFinalize, once kDetached.
  uint64_t detach_ns() const noexcept { return detach_done_ns_.load(std::memory_order_acquire); }
  void ForgetDetach() noexcept { detach_.store(kNoDetach, std::memory_order_release); }

  // ---- App threads. ----
  // Whether a detach is waiting for an API exit: one relaxed load.
  bool DetachRequested() const noexcept {
    return detach_.load(std::memory_order_relaxed) == kDetachRequested;
  }
  // Claims the requested detach for the calling thread; true: the caller runs it, then calls
  // DetachDone. Runs on: an app thread at a CUDA API exit.
  bool ClaimDetach() noexcept;
  void DetachDone(uint64_t now_ns) noexcept;

  // An NVTX push on an empty stack while a steps window is watched. Returns true when `t`'s new
  // frame is a step range of the window (recording may have begun with it). Runs on: app thread.
  bool OnTopLevelPush(std::string_view name, uint64_t now_ns) noexcept;
  // A step frame popped (after its RangePop was written). Runs on: app thread.
  void OnStepPop(uint64_t now_ns) noexcept;
  bool watching_steps() const noexcept {
    const uint32_t phase = phase_.load(std::memory_order_relaxed);
    return phase == kWaitingForStep || (phase == kRecording && steps_wanted_ != 0);
  }

  // The thread's first event in a window: report its open frames, flagged open-before-window and
  // stamped with the window's begin. Cheap check inline; the work in SyncThreadSlow.
  // Runs on: the owning app thread, only while recording.
  void SyncThread(ThreadState* t) noexcept {
    if (t->window_epoch != epoch_.load(std::memory_order_acquire)) SyncThreadSlow(t);
  }

 private:
  bool NameIsStep(std::string_view name) const noexcept;
  void StartRecording(uint64_t now_ns) noexcept;
  void SyncThreadSlow(ThreadState* t) noexcept;

  std::atomic<uint32_t> phase_{kIdle};
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint64_t> begin_ns_{0};
  std::atomic<uint64_t> end_ns_{0};
  std::atomic<uint32_t> steps_seen_{0};
  uint32_t steps_wanted_ = 0;  // written by WatchSteps before the phase is published
  uint32_t step_name_length_ = 0;
  char step_name_[kMaxStepName] = {};
  std::atomic<uint32_t> detach_{kNoDetach};
  std::atomic<uint64_t> detach_requested_ns_{0};
  std::atomic<uint64_t> detach_done_ns_{0};
};

// True for the names the collector's step auto-detection knows: step, train_step, trainstep,
// iteration, iter (any case), ProfilerStep#<digits>.
bool IsBuiltInStepName(std::string_view name) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_CAPTURE_WINDOW_H_
