#include "runtime/flush_thread.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "cupti/subscriber.h"
#include "gpuattr_version.h"
#include "runtime/clock.h"
#include "runtime/late_attach.h"
#include "runtime/shim_log.h"
#include "wire/codec.h"

namespace gpuattr::inject {
namespace {

constexpr uint32_t kShimVersion =
    GPUATTR_VERSION_MAJOR << 16 | GPUATTR_VERSION_MINOR << 8 | GPUATTR_VERSION_PATCH;

// The session's running flush thread, for WakeFlushThreadEarly; null when none runs.
std::atomic<FlushThread*> g_running{nullptr};

// The executable's path, or "" when /proc is not readable.
std::string_view ExePath(char* buffer, size_t size) noexcept {
  const ssize_t n = readlink("/proc/self/exe", buffer, size);
  return n > 0 ? std::string_view(buffer, static_cast<size_t>(n)) : std::string_view();
}

}  // namespace

void WakeFlushThreadEarly() noexcept {
  if (FlushThread* thread = g_running.load(std::memory_order_acquire)) thread->WakeEarly();
}

FlushThread::FlushThread(ShimState* shim) noexcept : shim_(shim), outbox_(&transport_) {
  outbox_.set_wait_ms(kWaitWhileConnected);  // a live collector loses nothing (transport.h)
}

void FlushThread::WakeEarly() noexcept {
  drain_wanted_.store(true, std::memory_order_relaxed);
  wake_.notify_one();
}

void FlushThread::AbandonAfterFork() noexcept {
  g_running.store(nullptr, std::memory_order_relaxed);
  transport_.AbandonAfterFork();
}

std::chrono::milliseconds FlushThread::PeriodOfCycle(uint64_t cycle) const noexcept {
  if (cycle < kStartupCycles) return std::chrono::milliseconds(1);
  const uint64_t doublings = std::min<uint64_t>(cycle - kStartupCycles + 1, 16);
  return std::chrono::milliseconds(std::min<uint64_t>(uint64_t{1} << doublings, info_.flush_ms));
}

bool FlushThread::Start(const SessionInfo& info) noexcept {
  info_ = info;
  // Hello at once when the collector accepts without waiting: one connect and one send on this
  // thread, once per session, so that the process is named even if it ends before the thread
  // gets to run.
  hello_sent_ = transport_.Connect(info_.socket_path, /*wait_ms=*/0);
  if (hello_sent_) {
    SendHello(info_, info_.mode);
    outbox_.Flush();
  }
  // The thread inherits this mask: it must never run the application's signal handlers.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int rc = pthread_create(&thread_, nullptr, &FlushThread::ThreadMain, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  started_ = rc == 0;
  if (!started_) ShimLog("cannot start the flush thread: %s", strerror(rc));
  if (started_) g_running.store(this, std::memory_order_release);
  return started_;
}

void FlushThread::Stop(int join_timeout_ms) noexcept {
  if (!started_) return;
  // A cycle may be waiting on a slow collector message by message: from now on the sends of it
  // and of the final cycle share one budget, past which they are dropped and counted.
  outbox_.set_deadline_ns(MonotonicNsAfterMs(kFinalSendBudgetMs));
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += join_timeout_ms / 1000;
  deadline.tv_nsec += static_cast<long>(join_timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000L;
  }
  const int rc = pthread_timedjoin_np(thread_, nullptr, &deadline);
  if (rc != 0) ShimLog("flush thread did not finish in %d ms; leaving it", join_timeout_ms);
  g_running.store(nullptr, std::memory_order_release);
  started_ = false;
}

void* FlushThread::ThreadMain(void* self) noexcept {
  pthread_setname_np(pthread_self(), "gpuattr-flush");
  try {
    static_cast<FlushThread*>(self)->Run();
  } catch (...) {
    DisableShim();
  }
  return nullptr;
}

void FlushThread::Run() noexcept {
  const bool armed = info_.mode == wire::HelloMode::kArmed;
  if (!hello_sent_) {
    if (!transport_.Connect(info_.socket_path, kConnectWaitMs)) {
      ShimLog("collector unreachable at %s; records will be dropped", info_.socket_path);
    }
    SendHello(info_, info_.mode);
    if (armed) outbox_.Flush();  // register with the daemon now, not at the first window
  }
  for (uint64_t cycle = 0;; ++cycle) {
    {
      std::unique_lock<std::mutex> lock(wake_mutex_);
      wake_.wait_for(lock, PeriodOfCycle(cycle),
                     [this] { return stop_ || drain_wanted_.load(std::memory_order_relaxed); });
      if (stop_) break;
    }
    drain_wanted_.store(false, std::memory_order_relaxed);
    if (armed) {
      ArmedCycle();
    } else {
      Cycle();
    }
  }
  outbox_.set_wait_ms(kFinalSendBudgetMs);  // Stop() set the deadline the last records share
  if (armed) {
    if (window_open_) CloseWindow(wire::WindowEndReason::kProcessExit);
  } else {
    Cycle(/*last=*/true);
  }
  outbox_.Flush();
  // The records may have spent their budget on a slow collector; the counts of what was dropped
  // and the end of the stream get one of their own, so a report says what it lost.
  outbox_.set_deadline_ns(MonotonicNsAfterMs(kLastWordBudgetMs));
  if (!armed) SendDiagnostics();
  SendGoodbye();
  outbox_.Flush();
}

void FlushThread::SendHello(const SessionInfo& info, wire::HelloMode mode) noexcept {
  char path[4096];
  wire::Hello hello = wire::MakeHello(mode, info.pid);
  hello.shim_version = kShimVersion;
  hello.ppid = info.ppid;
  hello.rank = info.rank;
  hello.local_rank = info.local_rank;
  hello.monotonic_ns = RecordClockNs();
  hello.realtime_ns = RealtimeNs();
  const std::string_view exe = ExePath(path, sizeof(path));
  hello.exe_string = exe.empty() ? 0 : shim_->strings.Intern(exe);
  outbox_.Append(hello);
  SendDefinitions();  // defines exe_string in the same message
}

void FlushThread::SendDefinitions() noexcept {
  // Paths first snapshot, then strings: every string a sent node refers to is then sent too.
  const uint32_t paths = shim_->paths.size();
  const uint32_t strings = shim_->strings.size();
  for (; strings_sent_ < strings; ++strings_sent_) {
    const uint32_t id = strings_sent_ + 1;
    outbox_.AppendString(id, shim_->strings.Get(id));
  }
  for (; paths_sent_ < paths; ++paths_sent_) {
    const uint32_t id = paths_sent_ + 1;
    const PathKey& key = shim_->paths.Get(id);
    outbox_.Append(wire::PathNode{id, key.parent, key.name, key.domain});
  }
}

void FlushThread::NameNewThread(ThreadState& state) noexcept {
  if (state.named_tid == state.tid) return;
  state.named_tid = state.tid;
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%u/comm", state.tid);
  FILE* file = fopen(path, "re");
  if (file == nullptr) return;  // the thread is gone already
  char name[64];
  const size_t n = fread(name, 1, sizeof(name), file);
  fclose(file);
  size_t length = n;
  while (length > 0 && (name[length - 1] == '\n' || name[length - 1] == '\0')) --length;
  if (length == 0) return;
  const uint32_t id = shim_->strings.Intern(std::string_view(name, length));
  if (id != 0) thread_names_.push_back(wire::ThreadName{state.tid, id});
}

void FlushThread::Cycle(bool last) noexcept {
  const bool cupti_active = shim_->cupti_active.load(std::memory_order_acquire);
  if (cupti_active && (last || cycles_ % kCuptiFlushEveryCycles == 0)) {
    // No lock of ours is held here (rule: never call CUPTI under our locks).
    shim_->cupti.cuptiActivityFlushAll(0);
    size_t dropped = 0;
    if (shim_->cupti.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
      cupti_dropped_ += dropped;
    }
  }

  marks_.clear();
  thread_names_.clear();
  shim_->threads.ForEach([this](ThreadState& state) {
    const uint64_t position = state.ring.PublishedPosition();
    if (position == state.ring.ConsumedPosition()) {
      if (state.status.load(std::memory_order_acquire) == ThreadState::kRetired &&
          state.ring.Empty()) {
        uint32_t expected = ThreadState::kRetired;
        state.status.compare_exchange_strong(expected, ThreadState::kFree,
                                             std::memory_order_acq_rel);
      }
      return;
    }
    NameNewThread(state);  // safe: the acquire above made the owner's tid visible
    marks_.push_back(RingMark{&state, position});
  });

  staging_.clear();
  if (shim_->cupti_bound.load(std::memory_order_acquire)) {
    shim_->buffers.TakeCompleted([this](uint8_t* buffer, size_t valid_size) {
      const TranslateCounts counts =
          TranslateBuffer(shim_->cupti, buffer, valid_size, *this, &staging_);
      untranslated_ += counts.untranslated;
      incomplete_ += counts.incomplete;
      last_complete_correlation_ =
          std::max(last_complete_correlation_, counts.last_complete_correlation);
    });
  }

  SendDefinitions();
  for (const wire::ThreadName& name : thread_names_) outbox_.Append(name);
  for (const RingMark& mark : marks_) {
    mark.state->ring.Drain(mark.position, [this](const uint8_t* record, uint32_t size) {
      if (window_open_) NoteLaunch(record, size);
      outbox_.AppendEncoded(record, size);
    });
  }
  for (size_t at = 0; at < staging_.size();) {
    wire::RecordHeader header;
    std::memcpy(&header, staging_.data() + at, sizeof(header));
    outbox_.AppendEncoded(staging_.data() + at, header.size);
    at += header.size;
  }
  ++cycles_;
  if (cycles_ % kDiagnosticsEveryCycles == 0) SendDiagnostics();
  outbox_.Flush();
}

void FlushThread::SendDiagnostics() noexcept {
  wire::Diagnostics diagnostics{};
  shim_->threads.ForEach(
      [&](const ThreadState& state) { diagnostics.ring_dropped_records += state.ring.dropped(); });
  diagnostics.socket_dropped_records = transport_.dropped_records();
  diagnostics.socket_dropped_messages = transport_.dropped_messages();
  diagnostics.cupti_dropped_records = cupti_dropped_;
  diagnostics.cupti_buffers_declined = shim_->buffers.declined();
  diagnostics.intern_table_full = shim_->strings.full_count() + shim_->paths.full_count();
  diagnostics.untranslated_records = untranslated_;
  diagnostics.incomplete_records = incomplete_;
  outbox_.Append(diagnostics);
}

void FlushThread::SendGoodbye() noexcept {
  outbox_.Append(
      wire::Goodbye{RecordClockNs(), static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0});
}

}  // namespace gpuattr::inject

namespace gpuattr::inject {

bool FlushThread::StopRequested() noexcept {
  std::lock_guard<std::mutex> lock(wake_mutex_);
  return stop_;
}

void FlushThread::DiscardCuptiBuffers() noexcept {
  if (!shim_->cupti_bound.load(std::memory_order_acquire)) return;
  shim_->buffers.TakeCompleted([](uint8_t*, size_t) {});
}

void FlushThread::ServiceControl() noexcept {
  for (;;) {
    const int size = transport_.Receive(control_buffer_, sizeof(control_buffer_));
    if (size <= 0) return;  // nothing waiting, or the daemon is gone: stay armed, record nothing
    wire::MessageReader reader;
    if (reader.Open(control_buffer_, static_cast<uint32_t>(size)) != wire::DecodeError::kNone) {
      ShimLog("ignoring a malformed control message of %d bytes", size);
      continue;
    }
    // A control message names its step range with a String defined in the same message.
    wire::RecordView record;
    wire::Control control{};
    bool have_control = false;
    std::string_view step_name;
    std::vector<std::pair<uint32_t, std::string_view>> strings;
    while (reader.Next(&record)) {
      if (record.type == wire::RecordType::kString) {
        strings.emplace_back(record.As<wire::String>().id, record.StringText());
      } else if (record.type == wire::RecordType::kControl && !have_control) {
        control = record.As<wire::Control>();
        have_control = true;
      }
    }
    if (!have_control) continue;
    for (const auto& [id, text] : strings) {
      if (id != 0 && id == control.step_name_string) step_name = text;
    }
    switch (static_cast<wire::ControlCommand>(control.command)) {
      case wire::ControlCommand::kOpenWindow:
        OpenWindow(control, step_name);
        break;
      case wire::ControlCommand::kCloseWindow:
        if (window_open_ && control.window_id == window_id_) {
          CloseWindow(wire::WindowEndReason::kClosed);
        }
        break;
      default:
        ShimLog("ignoring unknown control command %u", control.command);
        break;
    }
  }
}

void FlushThread::RestartStream() noexcept {
  outbox_.Flush();
  outbox_.RestartSequence();
  strings_sent_ = 0;
  paths_sent_ = 0;
  shim_->threads.ForEach([](ThreadState& state) {
    state.named_tid = 0;
    state.ring.DiscardAll();  // left from before: recorded after the last window had closed
  });
}

void FlushThread::OpenWindow(const wire::Control& control, std::string_view step_name) noexcept {
  if (window_open_) return;  // the daemon opens one window at a time per process
  DiscardCuptiBuffers();
  // A detach still waiting for an API exit is taken back: the subscription is reused.
  if (!shim_->window.CancelDetachRequest()) {
    for (int waited = 0;
         shim_->window.detach_state() == CaptureWindow::kDetaching && waited < kDetachWaitMs;
         ++waited) {
      usleep(1000);
    }
  }
  shim_->window.ForgetDetach();
  RestartStream();
  SendHello(info_, wire::HelloMode::kWindow);
  const uint64_t attach_start = MonotonicNs();
  cupti_attached_ = AttachCupti() == 0 ? 1 : 0;
  attach_ns_ = MonotonicNs() - attach_start;
  if (AttachedLate()) EmitDriverDeviceNames();  // no CUPTI device records after cuInit
  window_id_ = control.window_id;
  window_open_ = true;
  window_begin_sent_ = false;
  if (static_cast<wire::WindowTrigger>(control.trigger) == wire::WindowTrigger::kSteps &&
      control.steps > 0) {
    shim_->window.WatchSteps(control.steps, step_name);
  } else {
    shim_->window.BeginNow();
  }
  ArmedCycle();
}

void FlushThread::ArmedCycle() noexcept {
  ServiceControl();
  if (!window_open_) {
    DiscardCuptiBuffers();  // a pending detach's subscription still delivers
    return;
  }
  const uint32_t phase = shim_->window.phase();
  if (phase == CaptureWindow::kWaitingForStep) {
    DiscardCuptiBuffers();  // launched before the window: nothing of it is kept
    return;
  }
  if (!window_begin_sent_) {
    AppendWindowBegin(shim_->window.begin_ns());
  }
  Cycle();
  if (phase == CaptureWindow::kStepsDone) CloseWindow(wire::WindowEndReason::kStepsDone);
}

void FlushThread::AppendWindowBegin(uint64_t begin_ns) noexcept {
  outbox_.Append(wire::WindowBegin{begin_ns, window_id_, cupti_attached_, attach_ns_},
                 WindowBeginFlags());
  window_begin_sent_ = true;
}

void FlushThread::CloseWindow(wire::WindowEndReason reason) noexcept {
  CaptureWindow& window = shim_->window;
  const uint64_t end = window.StopRecording();
  if (!window_begin_sent_) {  // no step range came: an empty window
    AppendWindowBegin(end);
  }
  wire::DetachOutcome detach = wire::DetachOutcome::kNotAttached;
  const bool active = shim_->cupti_active.load(std::memory_order_acquire);
  // Outside every lock of ours: the flush calls bufferCompleted, which only enqueues.
  if (active) {
    AwaitWindowWork();
    shim_->cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  if (reason == wire::WindowEndReason::kProcessExit) {
    detach = wire::DetachOutcome::kProcessExit;  // exiting: CUPTI goes with the process
  } else if (active) {
    window.RequestDetach(MonotonicNs());
    for (int waited = 0; window.detach_state() != CaptureWindow::kDetached &&
                         waited < kDetachWaitMs && !StopRequested();
         waited += 2) {
      usleep(2000);
    }
    detach = window.detach_state() == CaptureWindow::kDetached ? wire::DetachOutcome::kFinalized
                                                               : wire::DetachOutcome::kPending;
  }
  Cycle(/*last=*/true);  // the last ring records and the buffers the forced flush delivered
  SendDiagnostics();
  wire::WindowEnd window_end{};
  window_end.timestamp_ns = end;
  window_end.window_id = window_id_;
  window_end.reason = static_cast<uint32_t>(reason);
  window_end.detach = static_cast<uint32_t>(detach);
  window_end.steps_seen = window.steps_seen();
  window_end.detach_ns = detach == wire::DetachOutcome::kFinalized ? window.detach_ns() : 0;
  outbox_.Append(window_end);
  outbox_.Flush();
  window.Reset();
  window_open_ = false;
  last_launch_drained_ = 0;  // correlation ids may start again after a detach
  last_complete_correlation_ = 0;
}

void FlushThread::NoteLaunch(const uint8_t* record, uint32_t size) noexcept {
  wire::RecordHeader header;
  if (size < sizeof(header) + sizeof(wire::ApiEnter)) return;
  std::memcpy(&header, record, sizeof(header));
  if (header.type != static_cast<uint16_t>(wire::RecordType::kApiEnter)) return;
  wire::ApiEnter enter;
  std::memcpy(&enter, record + sizeof(header), sizeof(enter));
  last_launch_drained_ = std::max(last_launch_drained_, enter.correlation_id);
}

// The window's last launches may still run on the device, and a forced flush delivers the
// records of running work without timestamps (incomplete: their time is lost). A flush without
// the flag delivers only buffers whose records are all complete, so it is retried until the
// record of the window's last launch came back that way, for at most kWindowWorkWaitMs (what
// Proton does before its forced flush: cupti-notes §1.3). Per-thread buffers make one record's
// return mean its thread's earlier ones are complete too. The app is never waited on: work it
// launched after the window stopped recording only delays the buffer it shares.
void FlushThread::AwaitWindowWork() noexcept {
  Cycle(/*last=*/true);  // drains the rings: the window's last launch is known
  for (int waited = 0; last_complete_correlation_ < last_launch_drained_ &&
                       waited < kWindowWorkWaitMs && !StopRequested();
       ++waited) {
    usleep(1000);
    Cycle(/*last=*/true);
  }
}

}  // namespace gpuattr::inject
