// FlushThread: the shim's only background thread, "gpuattr-flush" (all signals blocked).
//
// Every flush period (1 ms for a session's first kStartupCycles cycles, then doubling up to the
// configured period, so a process that ends early without its exit handlers or the interposed
// _exit, killed or crashed, loses at most about a millisecond), and at once when a thread's ring
// passes half full (WakeFlushThreadEarly), it turns what app threads and CUPTI produced into wire
// messages:
//
//   1. every kCuptiFlushEveryCycles cycles, and in a stream's last: cuptiActivityFlushAll(0) and
//      cuptiActivityGetNumDroppedRecords (CUPTI calls; no lock of ours is held, see §9.6 rule 6:
//      bufferRequested runs under a CUPTI lock, so holding ours here could deadlock ABBA);
//   2. snapshot every thread ring's published position;
//   3. translate completed CUPTI buffers into a staging buffer (interning kernel/device names);
//   4. send new String then PathNode definitions (so they precede every record that refers to
//      them: records in the snapshot were written after their ids were interned), and the OS
//      names of newly seen threads;
//   5. send ring records up to the snapshots, then the staged CUPTI records; a full socket is
//      waited for while the collector is connected (kWaitWhileConnected, transport.h);
//   6. every kDiagnosticsEveryCycles cycles, a Diagnostics record.
//
// The first message of a connection starts with Hello, sent by Start() on the starting thread
// when the collector accepts at once (so a process is named even if it ends before the thread
// runs), else by the thread once it connects. Stop() runs a final cycle, Diagnostics and
// Goodbye: from the moment Stop() is called, the sends of a cycle still waiting on a slow
// collector and of the final cycle wait at most kFinalSendBudgetMs in total, then Diagnostics and
// Goodbye at most kLastWordBudgetMs more, so the drops are counted even when records were not.
//
// Armed mode (docs/attach.md): after Hello{armed} the thread only reads control messages each
// period. kOpenWindow restarts the stream (Hello{window}, definitions again, sequence 0),
// subscribes CUPTI (AttachCupti) and opens the CaptureWindow; while it records, the cycle above
// runs; closing stops recording, waits at most kWindowWorkWaitMs for the device work of the
// window's launches to complete (AwaitWindowWork), forces a CUPTI flush, has the next API exit
// detach CUPTI (waiting at most kDetachWaitMs), sends the last records, Diagnostics and WindowEnd.
//
// Threads: Start/Stop run on the session owner's thread (an app thread, the atexit or _exit
// caller); the cycle methods run on the flush thread, or on the test thread when a test drives them
// directly without Start. Lock order: wake_mutex_ is a leaf, held only to wait and to set stop_; no
// CUPTI call and no intern-table call happens under it.
#ifndef GPUATTR_INJECT_RUNTIME_FLUSH_THREAD_H_
#define GPUATTR_INJECT_RUNTIME_FLUSH_THREAD_H_

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "cupti/activity_translate.h"
#include "runtime/shim_state.h"
#include "runtime/transport.h"

namespace gpuattr::inject {

constexpr uint32_t kDefaultFlushMs = 50;
constexpr uint32_t kStartupCycles = 20;           // at 1 ms, before the period doubles to flush_ms
constexpr uint32_t kCuptiFlushEveryCycles = 4;    // 200 ms at the default period
constexpr uint32_t kDiagnosticsEveryCycles = 20;  // 1 s at the default period
constexpr int kConnectWaitMs = 1000;
constexpr int kFinalSendBudgetMs = 1000;  // from Stop(): every send's waits together
constexpr int kLastWordBudgetMs = 500;    // then for Diagnostics and Goodbye
constexpr int kDetachWaitMs = 1000;       // for an API exit to run cuptiFinalize
constexpr int kWindowWorkWaitMs = 500;    // for a closing window's launches to complete

struct SessionInfo {
  char socket_path[108] = {};
  uint32_t flush_ms = kDefaultFlushMs;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  int32_t rank = -1;
  int32_t local_rank = -1;
  wire::HelloMode mode = wire::HelloMode::kTraced;  // kTraced or kArmed
};

// Asks the running flush thread for a cycle now instead of at its period's end: a ring passed its
// fill mark. Best effort (a wake that races the thread's going to sleep waits for the period).
// Runs on: an app thread, from SpscRing's fill-mark signal; one futex wake, no lock.
void WakeFlushThreadEarly() noexcept;

class FlushThread final : private NameInterner {
 public:
  explicit FlushThread(ShimState* shim) noexcept;
  FlushThread(const FlushThread&) = delete;
  FlushThread& operator=(const FlushThread&) = delete;

  // Spawns the thread, which connects to info.socket_path. False if it could not be created.
  // Runs on: the thread starting the session.
  bool Start(const SessionInfo& info) noexcept;
  // Asks for the final cycle and waits for the thread at most `join_timeout_ms`.
  // Runs on: the atexit or _exit caller.
  void Stop(int join_timeout_ms) noexcept;
  // Fork child: the thread does not exist here; close the socket and forget everything.
  void AbandonAfterFork() noexcept;
  // WakeFlushThreadEarly's work. Runs on: any thread.
  void WakeEarly() noexcept;

  // The pieces of the thread's work, public so tests can drive them on a socketpair.
  void Adopt(int fd) noexcept { transport_.Adopt(fd); }
  void SendHello(const SessionInfo& info, wire::HelloMode mode = wire::HelloMode::kTraced) noexcept;
  // `last`: the stream's final cycle, which always asks CUPTI for its dropped-record count so
  // the Diagnostics sent after it are complete.
  void Cycle(bool last = false) noexcept;
  // Armed mode's period: control messages, then the cycle while a window records.
  void ArmedCycle() noexcept;
  // The window's WindowBegin, recording from `begin_ns`, with the late-attach flags.
  void AppendWindowBegin(uint64_t begin_ns) noexcept;
  // Ends an open window (process exit, or the daemon's kCloseWindow).
  void CloseWindow(wire::WindowEndReason reason) noexcept;
  bool window_open() const noexcept { return window_open_; }
  void SendDiagnostics() noexcept;
  void SendGoodbye() noexcept;
  void FlushOutbox() noexcept { outbox_.Flush(); }
  const Transport& transport() const noexcept { return transport_; }

 private:
  struct RingMark {
    ThreadState* state;
    uint64_t position;
  };

  static void* ThreadMain(void* self) noexcept;
  void Run() noexcept;
  uint32_t Intern(std::string_view name) override { return shim_->strings.Intern(name); }
  void SendDefinitions() noexcept;
  void NameNewThread(ThreadState& state) noexcept;
  void ServiceControl() noexcept;
  void OpenWindow(const wire::Control& control, std::string_view step_name) noexcept;
  void RestartStream() noexcept;
  void DiscardCuptiBuffers() noexcept;
  void AwaitWindowWork() noexcept;
  void NoteLaunch(const uint8_t* record, uint32_t size) noexcept;
  bool StopRequested() noexcept;
  std::chrono::milliseconds PeriodOfCycle(uint64_t cycle) const noexcept;

  ShimState* shim_;
  Transport transport_;
  Outbox outbox_;
  SessionInfo info_;
  pthread_t thread_{};
  bool started_ = false;

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;                      // guarded by wake_mutex_
  std::atomic<bool> drain_wanted_{false};  // a ring passed its fill mark
  bool hello_sent_ = false;                // by Start(), before the thread ran

  // Flush-thread-only state.
  uint64_t cycles_ = 0;
  uint32_t strings_sent_ = 0;
  uint32_t paths_sent_ = 0;
  std::vector<RingMark> marks_;
  std::vector<uint8_t> staging_;
  std::vector<wire::ThreadName> thread_names_;
  uint64_t cupti_dropped_ = 0;
  uint64_t untranslated_ = 0;
  uint64_t incomplete_ = 0;
  uint32_t last_launch_drained_ = 0;        // the largest correlation id of an ApiEnter sent
  uint32_t last_complete_correlation_ = 0;  // ... of a complete device record sent

  // Armed mode, flush-thread-only.
  bool window_open_ = false;
  bool window_begin_sent_ = false;
  uint32_t window_id_ = 0;
  uint32_t cupti_attached_ = 0;
  uint64_t attach_ns_ = 0;
  uint8_t control_buffer_[2 * wire::kMaxStringBytes];
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_FLUSH_THREAD_H_
