// The shim's lifecycle: load, lazy session start, fork, exit (docs/architecture.md, "The shim's
// lifecycle").
//
//   OnLoad()        - the library constructor (LD_PRELOAD or any dlopen): records the pid and
//                     installs the pthread_atfork handlers and the exit check for a process
//                     without a session. Nothing else: no thread, no socket, no CUPTI, so
//                     /bin/true under the shim pays only this and that check.
//   EnsureSession() - called by InitializeInjection and InitializeInjectionNvtx2 (and, in a fork
//                     child, by the first event): when GPUATTR_SOCKET is set, or a daemon socket
//                     exists at the default path (docs/attach.md), pins the library, registers
//                     the atexit handler (once per process image) and starts the gpuattr-flush
//                     thread, which connects and sends Hello. With GPUATTR_MODE=armed the session
//                     starts armed (kHotArmed): it records nothing until a capture window opens.
//                     With no socket the shim stays inert for the life of the process.
//   AtExit          - if this process started the session (getpid() == session pid): the
//                     driver_missing Refusal when it carries a CUDA runtime but no driver
//                     (cuda_presence.h), forced CUPTI flush (outside our locks), then the flush
//                     thread's final cycle, Diagnostics and Goodbye (bounded), then the
//                     torn-down flag. A no-op everywhere else, and after the first time.
//   OnImmediateExit - the same, from the interposed _exit/_Exit (entry.cpp), which run no exit
//                     handler: a fork worker leaving through os._exit still sends its last
//                     records and Goodbye. A vfork child (its pid is not the session's) and a
//                     fork child that recorded nothing (no session of its own) return at once.
//   exit check      - registered by OnLoad, so it runs after every other exit handler: a
//                     process that never started a session but carries a CUDA runtime without
//                     a driver starts one here to send driver_missing, and ends it.
//   fork            - prepare: take the intern locks; parent: release them; child: release them,
//                     close the inherited socket, forget rings and session (nothing is sent), mark
//                     CUPTI unusable, and arm kHotForkRestart so the first event starts a fresh
//                     session with its own connection and Hello.
//
// Threads: EnsureSession may race from several threads; exactly one starts the session (atomic
// state machine, no lock), the others proceed (rings are usable before the thread runs).
#ifndef GPUATTR_INJECT_RUNTIME_SESSION_H_
#define GPUATTR_INJECT_RUNTIME_SESSION_H_

namespace gpuattr::inject {

// Runs on: the loader's thread, from the library constructor.
void OnLoad() noexcept;

// True when a session is running or starting (events are worth recording), false when the shim
// is inert (no GPUATTR_SOCKET, or the session could not start). Runs on: any thread.
bool EnsureSession() noexcept;

// Ends the session as AtExit does, for a process leaving through _exit or _Exit. Bounded like
// AtExit: the final sends share kFinalSendBudgetMs, then kLastWordBudgetMs, and the flush thread
// is joined with a timeout. Not async-signal-safe: from a signal handler that interrupted the
// shim on the same thread, the join can time out and the last records are lost, counted as
// truncation. Runs on: the thread calling _exit.
void OnImmediateExit() noexcept;

// Starts an armed session towards the daemon at `socket_path` whatever the environment says
// (late_attach.h), unless one runs already. Returns 1 when it started, 0 when a session was
// already running or starting, -1 when the path is unusable or the session could not start.
// Runs on: any thread.
int StartArmedSession(const char* socket_path) noexcept;

// True when the running session is armed (GPUATTR_MODE=armed): CUPTI waits for a capture window
// instead of being subscribed at cuInit. Runs on: any thread, after EnsureSession returned true.
bool SessionArmed() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_SESSION_H_
