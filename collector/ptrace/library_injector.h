// Loads a shared library into a running process that was not prepared for it, and calls one
// function of it there (docs/attach.md §Injection): how `gpuattr attach --pid` gets the shim
// into a job started without gpuattr.
//
//   1. Look, touching nothing: /proc/PID/status (a tracer already there, another uid, SIGSEGV
//      ignored), /proc/PID/maps (glibc's libc.so.6 and loader mapped; none: a static or
//      non-glibc target; the library's file name mapped already: loaded before) and the addresses
//      of dlopen, dlsym, dlerror and __errno_location from that libc's own symbol table
//      (process_image.h).
//   2. Find a thread at a safe point, one at a time: seize it (PTRACE_SEIZE, no SIGSTOP),
//      interrupt it, and keep it only when it stopped outside libc and the loader (its own code)
//      or inside libc blocked in a waiting system call (remote_call.h); else release it at once
//      and try the next, retrying until `safe_point_timeout_ns`.
//   3. On that thread: save its registers (general and the whole vector state) and signal mask;
//      block every signal but SIGSEGV (the return trap); call __errno_location and keep errno;
//      write the strings below the stack's red zone; call dlopen(library, RTLD_NOW), dlsym(entry)
//      and entry(argument); then put errno, the mask and every register back and release the
//      thread. An interrupted system call restarts as after any ptrace stop.
// Only that one thread ever stops; `stopped_ns` says for how long.
//
// Called by the tracer on one thread (ptrace binds tracees to the thread that seized them).
#ifndef GPUATTR_COLLECTOR_PTRACE_LIBRARY_INJECTOR_H_
#define GPUATTR_COLLECTOR_PTRACE_LIBRARY_INJECTOR_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace gpuattr::collector {

// Why an injection was not made. Every one but kCallFailed left the process untouched.
enum class InjectionFailure {
  kNone,
  kTargetGone,         // no such process, or it exited meanwhile
  kPtraceDenied,       // the kernel refused PTRACE_SEIZE (Yama, another uid, no CAP_SYS_PTRACE)
  kAlreadyTraced,      // a debugger or another tracer holds it
  kStaticTarget,       // no dynamic loader: nothing can dlopen
  kNonGlibcTarget,     // a libc other than glibc (musl), or no usable dlopen in it
  kUnsupportedTarget,  // it ignores SIGSEGV (the return trap would reset that disposition)
  kAlreadyLoaded,      // a library of that file name is mapped already: no second copy is made
  kNoSafePoint,        // no thread stopped at a safe point within the time allowed
  kLoadFailed,         // dlopen or dlsym failed inside the target (dlerror's text in `cause`)
  kCallFailed,         // a remote call faulted or timed out; registers were still restored
};

struct InjectionRequest {
  pid_t pid = 0;
  std::string library;       // absolute path, as the target will open it
  std::string entry_symbol;  // called as int entry(const char* argument)
  std::string entry_argument;
  uint64_t safe_point_timeout_ns = 2'000'000'000;
  uint64_t call_timeout_ns = 10'000'000'000;
};

struct InjectionOutcome {
  InjectionFailure failure = InjectionFailure::kNone;
  std::string cause;         // what was seen, in words, when failure != kNone
  pid_t thread = 0;          // the thread that made the calls
  uint64_t stopped_ns = 0;   // how long that thread was stopped, seize to release
  int64_t entry_result = 0;  // entry's return value (int)
};

InjectionOutcome InjectLibrary(const InjectionRequest& request);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_PTRACE_LIBRARY_INJECTOR_H_
