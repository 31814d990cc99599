#include "runtime/session.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cupti/subscriber.h"
#include "runtime/cuda_presence.h"
#include "runtime/flush_thread.h"
#include "runtime/shim_log.h"
#include "runtime/shim_state.h"

namespace gpuattr::inject {
namespace {

enum SessionStatus : int { kIdle = 0, kStarting = 1, kRunning = 2, kInert = 3 };

constexpr int kJoinTimeoutMs = 2000;

std::atomic<int> g_status{kIdle};
std::atomic<bool> g_hooks_installed{false};
bool g_atexit_registered = false;  // written only by the session starter
bool g_fork_child = false;         // this process image began as a fork child (ForkChild)
bool g_exiting = false;            // AtExitWithoutSession runs: the loader is finalizing us
pid_t g_session_pid = 0;
SessionInfo g_info;  // socket path kept for a fork child's new session
bool g_info_ready = false;
alignas(FlushThread) unsigned char g_flush_storage[sizeof(FlushThread)];
FlushThread* g_flush = nullptr;

int32_t RankFromEnv(const char* name) noexcept {
  const char* value = getenv(name);
  if (value == nullptr || value[0] == '\0') return -1;
  char* end = nullptr;
  const long rank = strtol(value, &end, 10);
  return (*end == '\0' && rank >= 0 && rank <= INT32_MAX) ? static_cast<int32_t>(rank) : -1;
}

uint32_t FlushMsFromEnv() noexcept {
  const char* value = getenv("GPUATTR_FLUSH_MS");
  if (value == nullptr || value[0] == '\0') return kDefaultFlushMs;
  char* end = nullptr;
  const long ms = strtol(value, &end, 10);
  return (*end == '\0' && ms >= 1 && ms <= 60000) ? static_cast<uint32_t>(ms) : kDefaultFlushMs;
}

// The daemon's default socket (docs/attach.md): $XDG_RUNTIME_DIR/gpuattr/daemon.sock, else
// /tmp/gpuattr-$UID/daemon.sock. Written into `out`; false when it does not fit.
bool DefaultDaemonSocket(char* out, size_t size) noexcept {
  const char* runtime_dir = getenv("XDG_RUNTIME_DIR");
  const int n =
      runtime_dir != nullptr && runtime_dir[0] == '/'
          ? snprintf(out, size, "%s/gpuattr/daemon.sock", runtime_dir)
          : snprintf(out, size, "/tmp/gpuattr-%u/daemon.sock", static_cast<unsigned>(getuid()));
  return n > 0 && static_cast<size_t>(n) < size;
}

// Reads the environment once per process image. False when there is nowhere to send records:
// neither GPUATTR_SOCKET nor a daemon socket at the default path.
bool LoadSessionInfo() noexcept {
  if (g_info_ready) return true;
  const char* socket = getenv("GPUATTR_SOCKET");
  if (socket != nullptr && socket[0] != '\0') {
    if (strlen(socket) >= sizeof(g_info.socket_path)) {
      ShimLog("GPUATTR_SOCKET is longer than a Unix socket path may be; not tracing");
      return false;
    }
    strcpy(g_info.socket_path, socket);
  } else {
    struct stat status;
    if (!DefaultDaemonSocket(g_info.socket_path, sizeof(g_info.socket_path)) ||
        stat(g_info.socket_path, &status) != 0 || !S_ISSOCK(status.st_mode)) {
      return false;
    }
  }
  const char* mode = getenv("GPUATTR_MODE");
  g_info.mode = mode != nullptr && strcmp(mode, "armed") == 0 ? wire::HelloMode::kArmed
                                                              : wire::HelloMode::kTraced;
  g_info.flush_ms = FlushMsFromEnv();
  g_info.rank = RankFromEnv("RANK");
  g_info.local_rank = RankFromEnv("LOCAL_RANK");
  g_info_ready = true;
  return true;
}

// Keeps the library mapped for the life of the process: NVTX dlcloses an injection whose
// InitializeInjectionNvtx2 returned 0, which must never unmap a running flush thread.
void PinLibrary() noexcept {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&PinLibrary), &self) != 0 && self.dli_fname != nullptr) {
    dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

// A process that carries a CUDA runtime but reached no driver never ran InitializeInjection, so
// nothing else says why it has no device time: it gets a driver_missing Refusal (cuda_presence.h)
// in the calling thread's ring, before its session ends. A fork child leaves this to its
// parent, whose image it inherited.
bool ReportMissingDriver() noexcept {
  if (g_fork_child) return false;
  char cause[320];
  if (!FindMissingDriver(cause, sizeof(cause))) return false;
  EmitShimRefusal(wire::RefusalCode::kDriverMissing, 0, cause);
  return true;
}

// The end of this process's session: forced CUPTI flush (outside our locks), then the flush
// thread's final cycle, Diagnostics and Goodbye (bounded), then the torn-down flag.
void FinishSession() noexcept {
  ShimState& shim = Shim();
  if (shim.cupti_active.load(std::memory_order_acquire)) {
    // Outside every lock of ours: the flush calls bufferCompleted, which only enqueues.
    shim.cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  g_flush->Stop(kJoinTimeoutMs);
  shim.cupti_active.store(false, std::memory_order_release);
  shim.hot_flags.fetch_or(kHotTornDown, std::memory_order_release);
}

// Ends the session of the process that started it, once: at exit, or at an earlier _exit.
// Afterwards the shim is inert in this process image.
void EndOwnSession() noexcept {
  int running = kRunning;
  if (getpid() != g_session_pid || !g_status.compare_exchange_strong(running, kInert)) return;
  ReportMissingDriver();
  FinishSession();
}

// Runs on: the thread ending the process, through atexit (registered when the session started,
// so before CUDA's own exit handlers run).
void AtExit() noexcept {
  try {
    EndOwnSession();
  } catch (...) {
    DisableShim();
  }
}

// Runs on: the thread ending the process, through atexit (registered at load, before the
// loader's own exit handler, so it runs last, inside the loader's finalization of this library):
// a process that never started a session, and so never called CUDA or NVTX
// successfully, is reported only when it carries a CUDA runtime without a driver. Its session
// starts and ends here.
void AtExitWithoutSession() noexcept {
  try {
    if (g_status.load(std::memory_order_acquire) != kIdle || getpid() != g_session_pid) return;
    g_atexit_registered = true;  // this handler ends the session it starts
    g_exiting = true;
    if (!LoadSessionInfo() || !ReportMissingDriver() || !EnsureSession()) return;
    FinishSession();
  } catch (...) {
    DisableShim();
  }
}

void ForkPrepare() noexcept {
  Shim().paths.LockForFork();
  Shim().strings.LockForFork();
}

void ForkParent() noexcept {
  Shim().strings.UnlockAfterFork();
  Shim().paths.UnlockAfterFork();
}

// Runs on: the only thread of a new child, right after fork. Sends nothing.
void ForkChild() noexcept {
  g_fork_child = true;
  ShimState& shim = Shim();
  shim.strings.UnlockAfterFork();
  shim.paths.UnlockAfterFork();
  shim.cupti_active.store(false, std::memory_order_relaxed);  // CUDA is unusable in a child
  shim.threads.ResetAfterFork(CurrentThreadIfAny(), static_cast<uint32_t>(gettid()));
  shim.strings.ResetFullCount();
  shim.paths.ResetFullCount();
  shim.buffers.ResetDeclined();
  shim.subscriber.store(nullptr, std::memory_order_relaxed);
  shim.window.Reset();
  shim.window.ForgetDetach();
  if (SessionArmed()) shim.hot_flags.fetch_or(kHotArmed, std::memory_order_relaxed);
  const int status = g_status.load(std::memory_order_relaxed);
  if (status == kRunning || status == kStarting) {
    if (g_flush != nullptr) g_flush->AbandonAfterFork();
    g_flush = nullptr;
    g_status.store(kIdle, std::memory_order_relaxed);
    shim.hot_flags.fetch_or(kHotForkRestart, std::memory_order_relaxed);
  }
}

}  // namespace

void OnLoad() noexcept {
  g_session_pid = getpid();
  bool expected = false;
  if (g_hooks_installed.compare_exchange_strong(expected, true)) {
    pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
    atexit(&AtExitWithoutSession);
  }
}

bool EnsureSession() noexcept {
  int status = g_status.load(std::memory_order_acquire);
  if (status == kRunning || status == kStarting) return true;
  if (status == kInert) return false;
  if (!g_status.compare_exchange_strong(status, kStarting, std::memory_order_acq_rel)) {
    return status != kInert;
  }
  OnLoad();  // harmless if the constructor already ran; covers a static link without one
  InitShimLog();
  if (!LoadSessionInfo()) {
    g_status.store(kInert, std::memory_order_release);
    return false;
  }
  g_session_pid = getpid();
  g_info.pid = static_cast<uint32_t>(g_session_pid);
  g_info.ppid = static_cast<uint32_t>(getppid());
  // Armed: record nothing until a capture window opens (before any event can be recorded).
  if (g_info.mode == wire::HelloMode::kArmed) {
    Shim().hot_flags.fetch_or(kHotArmed, std::memory_order_release);
  }
  // At exit this handler runs inside the loader's finalization of this library, after its
  // finalizers: a dlopen of ourselves then would run our initialisers again.
  if (!g_exiting) PinLibrary();
  g_flush = new (g_flush_storage) FlushThread(&Shim());
  if (!g_flush->Start(g_info)) {
    g_status.store(kInert, std::memory_order_release);
    return false;
  }
  if (!g_atexit_registered) {
    g_atexit_registered = atexit(&AtExit) == 0;
  }
  g_status.store(kRunning, std::memory_order_release);
  return true;
}

int StartArmedSession(const char* socket_path) noexcept {
  int status = g_status.load(std::memory_order_acquire);
  if (status == kRunning || status == kStarting) return 0;
  if (socket_path == nullptr || socket_path[0] == '\0' ||
      strlen(socket_path) >= sizeof(g_info.socket_path) || g_exiting) {
    return -1;
  }
  // A shim that went inert earlier (preloaded without a socket) may start now.
  if (status == kInert && !g_status.compare_exchange_strong(status, kIdle)) return 0;
  strcpy(g_info.socket_path, socket_path);
  g_info.mode = wire::HelloMode::kArmed;
  g_info.flush_ms = FlushMsFromEnv();
  g_info.rank = RankFromEnv("RANK");
  g_info.local_rank = RankFromEnv("LOCAL_RANK");
  g_info_ready = true;
  return EnsureSession() ? 1 : -1;
}

void OnImmediateExit() noexcept { EndOwnSession(); }

bool SessionArmed() noexcept { return g_info_ready && g_info.mode == wire::HelloMode::kArmed; }

bool AcceptsEventsSlow(uint32_t flags) noexcept {
  if ((flags & kHotTornDown) != 0) return false;
  if ((flags & kHotForkRestart) != 0) {
    Shim().hot_flags.fetch_and(~kHotForkRestart, std::memory_order_relaxed);
    return EnsureSession();
  }
  return true;
}

}  // namespace gpuattr::inject
