// The architecture-specific part of running a function inside another process (docs/attach.md
// §Injection): saving and restoring a ptrace-stopped thread's whole register state, reading where
// it stopped, and making it call one function and stop again when that returns. One
// implementation per instruction set (remote_call_x86_64.cpp today); everything else of the
// injector (library_injector.cpp) is architecture-neutral.
//
// The call: the thread's registers are set as the platform ABI wants them for `function(args)`,
// on a stack below the caller's `stack_top`, with return address 0. When the function returns
// the thread faults fetching address 0; the tracer sees that SIGSEGV as a signal-delivery stop
// before any handler of the target runs, reads the return value and never delivers the signal.
// A thread stopped inside a system call has its restart disarmed for the call (it would
// otherwise rewind the program counter into our function) and re-armed by RestoreRegisters, so
// the interrupted call restarts as after any ptrace stop.
//
// Every function here is called by the tracer, on the thread that seized `tid`.
#ifndef GPUATTR_COLLECTOR_PTRACE_REMOTE_CALL_H_
#define GPUATTR_COLLECTOR_PTRACE_REMOTE_CALL_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

// A stopped thread's registers, opaque: general registers and the whole extended (vector and
// floating-point) state, as the kernel's register sets hold them.
struct SavedRegisters {
  std::vector<uint8_t> general;
  std::vector<uint8_t> extended;
};

// Where a stopped thread is.
struct ThreadPosition {
  uint64_t instruction = 0;
  uint64_t stack = 0;
  int64_t system_call = -1;  // the call it was stopped in, -1 when none
};

// The most integer arguments CallFunction passes (in registers).
inline constexpr size_t kMaxRemoteArguments = 6;

// Bytes below the stack pointer that the ABI lets a function use without moving it (x86-64's
// red zone): a remote call's data and frame go below them.
inline constexpr uint64_t kStackReserveBytes = 128;

// True for the system calls a thread blocks in while libc holds none of its own locks (waits on
// file descriptors, futexes, timers, children and signals): a thread stopped in one inside libc
// is at a safe point for a remote dlopen (library_injector.h).
bool IsBlockingSystemCall(int64_t system_call);

StatusOr<SavedRegisters> SaveRegisters(pid_t tid);
Status RestoreRegisters(pid_t tid, const SavedRegisters& saved);
ThreadPosition PositionOf(const SavedRegisters& saved);

// Makes the stopped thread run function(args...) from `saved`'s state with its stack pointer at
// or below `stack_top`, and waits at most `timeout_ns` for it to return. Returns the function's
// integer return value. Afterwards the thread is stopped with clobbered registers: the caller
// restores them. kUnavailable when the thread exited (kNotFound when it exited while being taken
// back), kInternal when the function faulted or did not return in time (the thread is then
// stopped where it was: see docs/attach.md §Limits).
StatusOr<uint64_t> CallFunction(pid_t tid, const SavedRegisters& saved, uint64_t function,
                                std::span<const uint64_t> args, uint64_t stack_top,
                                uint64_t timeout_ns);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_PTRACE_REMOTE_CALL_H_
