// remote_call.h for x86-64 (System V ABI): arguments in rdi, rsi, rdx, rcx, r8, r9; the return
// value in rax; at a function's first instruction rsp + 8 is 16-byte aligned and the direction
// flag is clear. orig_rax holds the system call a thread was stopped in (-1: none); the kernel
// restarts an interrupted call on resume when orig_rax >= 0 and rax holds a -ERESTART* code.
#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "ptrace/remote_call.h"
#include "ptrace/thread_stop.h"

#if !defined(__x86_64__)
#error "remote_call_x86_64.cpp is the x86-64 implementation of remote_call.h"
#endif

namespace gpuattr::collector {
namespace {

constexpr size_t kMaxExtendedStateBytes = 64u << 10;  // XSAVE areas are a few KiB
constexpr uint64_t kDirectionFlag = 1u << 10;
constexpr uint64_t kInterruptTimeoutNs = 1'000'000'000;

Status GetRegisterSet(pid_t tid, int set, std::vector<uint8_t>& bytes) {
  iovec vector{bytes.data(), bytes.size()};
  if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<uintptr_t>(set)),
             &vector) != 0) {
    return FailedPreconditionError("PTRACE_GETREGSET of thread " + std::to_string(tid) +
                                   " failed: " + std::strerror(errno));
  }
  bytes.resize(vector.iov_len);
  return Status::Ok();
}

Status SetRegisterSet(pid_t tid, int set, const std::vector<uint8_t>& bytes) {
  iovec vector{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  if (ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(static_cast<uintptr_t>(set)),
             &vector) != 0) {
    return FailedPreconditionError("PTRACE_SETREGSET of thread " + std::to_string(tid) +
                                   " failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

user_regs_struct GeneralOf(const SavedRegisters& saved) {
  user_regs_struct regs{};
  std::memcpy(&regs, saved.general.data(), std::min(sizeof(regs), saved.general.size()));
  return regs;
}

StatusOr<user_regs_struct> ReadGeneral(pid_t tid) {
  std::vector<uint8_t> bytes(sizeof(user_regs_struct));
  GPUATTR_RETURN_IF_ERROR(GetRegisterSet(tid, NT_PRSTATUS, bytes));
  return GeneralOf(SavedRegisters{std::move(bytes), {}});
}

}  // namespace

bool IsBlockingSystemCall(int64_t system_call) {
  switch (system_call) {
    case SYS_read:
    case SYS_poll:
    case SYS_select:
    case SYS_sched_yield:
    case SYS_pause:
    case SYS_nanosleep:
    case SYS_accept:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_wait4:
    case SYS_rt_sigtimedwait:
    case SYS_rt_sigsuspend:
    case SYS_futex:
    case SYS_clock_nanosleep:
    case SYS_epoll_wait:
    case SYS_waitid:
    case SYS_pselect6:
    case SYS_ppoll:
    case SYS_epoll_pwait:
    case SYS_accept4:
    case SYS_epoll_pwait2:
      return true;
    default:
      return false;
  }
}

StatusOr<SavedRegisters> SaveRegisters(pid_t tid) {
  SavedRegisters saved;
  saved.general.resize(sizeof(user_regs_struct));
  GPUATTR_RETURN_IF_ERROR(GetRegisterSet(tid, NT_PRSTATUS, saved.general));
  if (saved.general.size() != sizeof(user_regs_struct)) {
    return FailedPreconditionError("thread " + std::to_string(tid) +
                                   " is not a 64-bit thread (a 32-bit register set)");
  }
  saved.extended.resize(kMaxExtendedStateBytes);
  if (!GetRegisterSet(tid, NT_X86_XSTATE, saved.extended).ok()) {
    // A CPU or kernel without XSAVE: the FXSAVE area (x87, SSE) is the whole state.
    saved.extended.resize(sizeof(user_fpregs_struct));
    GPUATTR_RETURN_IF_ERROR(GetRegisterSet(tid, NT_PRFPREG, saved.extended));
  }
  return saved;
}

Status RestoreRegisters(pid_t tid, const SavedRegisters& saved) {
  const int extended_set =
      saved.extended.size() == sizeof(user_fpregs_struct) ? NT_PRFPREG : NT_X86_XSTATE;
  GPUATTR_RETURN_IF_ERROR(SetRegisterSet(tid, extended_set, saved.extended));
  return SetRegisterSet(tid, NT_PRSTATUS, saved.general);
}

ThreadPosition PositionOf(const SavedRegisters& saved) {
  const user_regs_struct regs = GeneralOf(saved);
  return {regs.rip, regs.rsp, static_cast<int64_t>(regs.orig_rax)};
}

StatusOr<uint64_t> CallFunction(pid_t tid, const SavedRegisters& saved, uint64_t function,
                                std::span<const uint64_t> args, uint64_t stack_top,
                                uint64_t timeout_ns) {
  if (args.size() > kMaxRemoteArguments) return InternalError("too many remote call arguments");
  user_regs_struct regs = GeneralOf(saved);
  // The return address, 0, is "pushed": at entry rsp + 8 is 16-byte aligned.
  const uint64_t stack = (stack_top & ~uint64_t{15}) - 8;
  if (ptrace(PTRACE_POKEDATA, tid, reinterpret_cast<void*>(stack), nullptr) != 0) {
    return FailedPreconditionError("writing the return address on thread " + std::to_string(tid) +
                                   "'s stack failed: " + std::strerror(errno));
  }
  unsigned long long* const argument_registers[kMaxRemoteArguments] = {
      &regs.rdi, &regs.rsi, &regs.rdx, &regs.rcx, &regs.r8, &regs.r9};
  for (size_t i = 0; i < args.size(); ++i) *argument_registers[i] = args[i];
  regs.rip = function;
  regs.rsp = stack;
  regs.rax = 0;           // no vector registers carry arguments (variadic callees read al)
  regs.orig_rax = ~0ull;  // not in a system call: nothing to restart into our function
  regs.eflags &= ~kDirectionFlag;
  std::vector<uint8_t> general(sizeof(regs));
  std::memcpy(general.data(), &regs, sizeof(regs));
  GPUATTR_RETURN_IF_ERROR(SetRegisterSet(tid, NT_PRSTATUS, general));
  GPUATTR_RETURN_IF_ERROR(ContinueThread(tid));
  for (;;) {
    StatusOr<StopEvent> stop = WaitForStop(tid, timeout_ns);
    if (!stop.ok()) {
      // Taken back, so that the caller can restore its registers.
      GPUATTR_RETURN_IF_ERROR(StopThread(tid, kInterruptTimeoutNs));
      return InternalError("the remote call did not return within its time: " +
                           stop.status().message());
    }
    if (stop->exited) return UnavailableError("thread " + std::to_string(tid) + " exited");
    if (stop->event_stop) {  // a group stop (SIGSTOP to the process) while calling: go on
      GPUATTR_RETURN_IF_ERROR(ContinueThread(tid));
      continue;
    }
    GPUATTR_ASSIGN_OR_RETURN(user_regs_struct now, ReadGeneral(tid));
    if (stop->signal == SIGSEGV && now.rip == 0) return static_cast<uint64_t>(now.rax);
    return InternalError("the remote call stopped with signal " + std::to_string(stop->signal) +
                         " at address " + std::to_string(now.rip));
  }
}

}  // namespace gpuattr::collector
