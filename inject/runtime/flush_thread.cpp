#include "runtime/flush_thread.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "runtime/clock.h"
#include "runtime/shim_log.h"
#include "wire/codec.h"

namespace gpuattr::inject {
namespace {

constexpr uint32_t kShimVersion = 0u << 16 | 1u << 8 | 0u;  // 0.1.0, as the CMake project

// The executable's path, or "" when /proc is not readable.
std::string_view ExePath(char* buffer, size_t size) noexcept {
  const ssize_t n = readlink("/proc/self/exe", buffer, size);
  return n > 0 ? std::string_view(buffer, static_cast<size_t>(n)) : std::string_view();
}

}  // namespace

FlushThread::FlushThread(ShimState* shim) noexcept : shim_(shim), outbox_(&transport_) {
  outbox_.set_wait_ms(kCycleSendWaitMs);
}

bool FlushThread::Start(const SessionInfo& info) noexcept {
  info_ = info;
  // The thread inherits this mask: it must never run the application's signal handlers.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int rc = pthread_create(&thread_, nullptr, &FlushThread::ThreadMain, this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  started_ = rc == 0;
  if (!started_) ShimLog("cannot start the flush thread: %s", strerror(rc));
  return started_;
}

void FlushThread::Stop(int join_timeout_ms) noexcept {
  if (!started_) return;
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
  if (!transport_.Connect(info_.socket_path, kConnectWaitMs)) {
    ShimLog("collector unreachable at %s; records will be dropped", info_.socket_path);
  }
  SendHello(info_);
  const auto period = std::chrono::milliseconds(info_.flush_ms);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(wake_mutex_);
      if (wake_.wait_for(lock, period, [this] { return stop_; })) break;
    }
    Cycle();
  }
  outbox_.set_wait_ms(kFinalSendBudgetMs);
  outbox_.set_deadline_ns(MonotonicNs() + static_cast<uint64_t>(kFinalSendBudgetMs) * 1000000ull);
  Cycle();
  SendDiagnostics();
  SendGoodbye();
  outbox_.Flush();
}

void FlushThread::SendHello(const SessionInfo& info) noexcept {
  char path[4096];
  wire::Hello hello{};
  std::memcpy(hello.magic, wire::kHelloMagic, sizeof(hello.magic));
  hello.protocol_version = wire::kProtocolVersion;
  hello.shim_version = kShimVersion;
  hello.pid = info.pid;
  hello.ppid = info.ppid;
  hello.rank = info.rank;
  hello.local_rank = info.local_rank;
  hello.monotonic_ns = MonotonicNs();
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

void FlushThread::Cycle() noexcept {
  const bool cupti_active = shim_->cupti_active.load(std::memory_order_acquire);
  if (cupti_active && cycles_ % kCuptiFlushEveryCycles == 0) {
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
    });
  }

  SendDefinitions();
  for (const wire::ThreadName& name : thread_names_) outbox_.Append(name);
  for (const RingMark& mark : marks_) {
    mark.state->ring.Drain(mark.position, [this](const uint8_t* record, uint32_t size) {
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
  shim_->threads.ForEach([&](const ThreadState& state) {
    diagnostics.ring_dropped_records += state.ring.dropped();
  });
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
  outbox_.Append(wire::Goodbye{MonotonicNs(), static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0});
}

}  // namespace gpuattr::inject
