// Seizing, stopping and releasing one thread of another process with ptrace (docs/attach.md
// §Injection), architecture-neutral. PTRACE_SEIZE, unlike PTRACE_ATTACH, sends no SIGSTOP: the
// process's job control and its other threads never see the tracer, and PTRACE_INTERRUPT stops
// exactly the one thread. No ptrace option is set: in particular not PTRACE_O_EXITKILL, so a
// tracer that dies leaves the target running.
//
// Called by the tracer, on the one thread that seizes (ptrace binds a tracee to a thread).
#ifndef GPUATTR_COLLECTOR_PTRACE_THREAD_STOP_H_
#define GPUATTR_COLLECTOR_PTRACE_THREAD_STOP_H_

#include <sys/types.h>

#include <cstdint>

#include "base/status.h"

namespace gpuattr::collector {

// What one waitpid said of a traced thread.
struct StopEvent {
  bool exited = false;      // the thread (or its process) is gone
  int signal = 0;           // the signal of a signal-delivery stop; 0 for a ptrace event stop
  bool event_stop = false;  // PTRACE_EVENT_STOP: the interrupt's stop, or a group stop
};

// PTRACE_SEIZE then PTRACE_INTERRUPT, and waits (at most `timeout_ns`) for the thread's stop.
// Errors keep errno's meaning in their code: kPermissionDenied for EPERM, kNotFound for ESRCH,
// kFailedPrecondition for EBUSY-like states (already traced).
Status SeizeAndStop(pid_t tid, uint64_t timeout_ns);

// PTRACE_INTERRUPT of a seized thread, and waits (at most `timeout_ns`) for its stop: the first
// stop after seizing, or taking back a thread that runs a remote call too long. kNotFound when
// the thread exited meanwhile.
Status StopThread(pid_t tid, uint64_t timeout_ns);

// Waits at most `timeout_ns` for the next stop (or the end) of a seized thread.
StatusOr<StopEvent> WaitForStop(pid_t tid, uint64_t timeout_ns);

// Resumes a stopped thread without delivering a signal.
Status ContinueThread(pid_t tid);

// PTRACE_DETACH without a signal: the thread runs on as if never seized.
Status ReleaseThread(pid_t tid);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_PTRACE_THREAD_STOP_H_
