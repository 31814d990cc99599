#include "ptrace/thread_stop.h"

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/os.h"

namespace gpuattr::collector {
namespace {

Status PtraceError(const char* what, pid_t tid, int error) {
  std::string message =
      std::string(what) + " of thread " + std::to_string(tid) + " failed: " + std::strerror(error);
  switch (error) {
    case EPERM:
      return PermissionDeniedError(std::move(message));
    case ESRCH:
      return NotFoundError(std::move(message));
    default:
      return FailedPreconditionError(std::move(message));
  }
}

}  // namespace

Status SeizeAndStop(pid_t tid, uint64_t timeout_ns) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    return PtraceError("PTRACE_SEIZE", tid, errno);
  }
  Status stopped = StopThread(tid, timeout_ns);
  if (!stopped.ok()) ptrace(PTRACE_DETACH, tid, nullptr, nullptr);  // best effort: let it go
  return stopped;
}

Status StopThread(pid_t tid, uint64_t timeout_ns) {
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    return PtraceError("PTRACE_INTERRUPT", tid, errno);
  }
  StatusOr<StopEvent> stop = WaitForStop(tid, timeout_ns);
  if (!stop.ok()) return stop.status();
  if (stop->exited) return NotFoundError("thread " + std::to_string(tid) + " exited");
  return Status::Ok();
}

StatusOr<StopEvent> WaitForStop(pid_t tid, uint64_t timeout_ns) {
  const uint64_t deadline = NowNs(CLOCK_MONOTONIC) + timeout_ns;
  useconds_t pause_us = 20;
  for (;;) {
    int status = 0;
    const pid_t waited = waitpid(tid, &status, __WALL | WNOHANG);
    if (waited == tid) {
      StopEvent event;
      if (WIFEXITED(status) || WIFSIGNALED(status)) {
        event.exited = true;
      } else if (WIFSTOPPED(status)) {
        event.event_stop = (status >> 16) == PTRACE_EVENT_STOP;
        if (!event.event_stop) event.signal = WSTOPSIG(status);
      }
      return event;
    }
    if (waited < 0 && errno != EINTR) {
      if (errno == ECHILD) return StopEvent{.exited = true};
      return PtraceError("waitpid", tid, errno);
    }
    if (NowNs(CLOCK_MONOTONIC) >= deadline) {
      return UnavailableError("thread " + std::to_string(tid) + " did not stop in time");
    }
    usleep(pause_us);
    if (pause_us < 1000) pause_us *= 2;
  }
}

Status ContinueThread(pid_t tid) {
  if (ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) {
    return PtraceError("PTRACE_CONT", tid, errno);
  }
  return Status::Ok();
}

Status ReleaseThread(pid_t tid) {
  if (ptrace(PTRACE_DETACH, tid, nullptr, nullptr) != 0) {
    return PtraceError("PTRACE_DETACH", tid, errno);
  }
  return Status::Ok();
}

}  // namespace gpuattr::collector
