#include "ptrace/library_injector.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <span>
#include <vector>

#include "base/os.h"
#include "ptrace/process_image.h"
#include "ptrace/remote_call.h"
#include "ptrace/thread_stop.h"

namespace gpuattr::collector {
namespace {

constexpr uint64_t kStopTimeoutNs = 1'000'000'000;
constexpr useconds_t kSafePointRetryUs = 5000;
constexpr uint64_t kCapSysPtraceBit = uint64_t{1} << 19;

// The "Key:\tvalue" lines of /proc/PID/status; empty when the process is gone.
std::map<std::string, std::string> ReadStatus(pid_t pid) {
  std::map<std::string, std::string> fields;
  std::ifstream in(ProcPath(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    fields[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
  }
  return fields;
}

uint64_t FieldNumber(const std::map<std::string, std::string>& fields, const std::string& key,
                     int base = 10) {
  auto it = fields.find(key);
  return it == fields.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, base);
}

std::string Comm(pid_t pid) {
  const std::string name = ProcessName(pid);
  return name.empty() ? "?" : name;
}

// Why the kernel refused PTRACE_SEIZE, from what can be read without it.
std::string ExplainPtraceDenial(pid_t pid, const std::map<std::string, std::string>& target) {
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (yama >> scope && scope > 0) {
    return "Yama's kernel.yama.ptrace_scope is " + std::to_string(scope) +
           (scope == 1   ? " (only a process's ancestors may trace it)"
            : scope == 2 ? " (only a process with CAP_SYS_PTRACE may trace)"
                         : " (no process may trace another)");
  }
  const uint64_t target_uid = FieldNumber(target, "Uid");
  if (target_uid != geteuid()) {
    return "pid " + std::to_string(pid) + " belongs to uid " + std::to_string(target_uid) +
           " and this process runs as uid " + std::to_string(geteuid());
  }
  const bool capable = (FieldNumber(ReadStatus(getpid()), "CapEff", 16) & kCapSysPtraceBit) != 0;
  return std::string("the kernel refused PTRACE_SEIZE (EPERM): ") +
         (capable ? "a security module forbids it"
                  : "the target is not dumpable (setuid, or prctl(PR_SET_DUMPABLE, 0)) and this "
                    "process lacks CAP_SYS_PTRACE");
}

// The target's threads, its main thread first.
std::vector<pid_t> Threads(pid_t pid) {
  std::vector<pid_t> threads{pid};
  if (DIR* tasks = opendir(ProcPath(pid, "task").c_str())) {
    while (const dirent* entry = readdir(tasks)) {
      const pid_t tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
      if (tid > 0 && tid != pid) threads.push_back(tid);
    }
    closedir(tasks);
  }
  return threads;
}

// Whether a thread stopped at `position` may run dlopen: not inside the dynamic loader, and
// inside libc only while blocked in a waiting system call (no libc lock held). Else says why.
bool AtSafePoint(const ThreadPosition& position, const ProcessImage& image, std::string* why) {
  if (image.loader && image.loader->Contains(position.instruction)) {
    *why = "inside the dynamic loader";
    return false;
  }
  if (image.libc && image.libc->Contains(position.instruction) &&
      !IsBlockingSystemCall(position.system_call)) {
    *why = "inside libc, not blocked in a waiting system call";
    return false;
  }
  return true;
}

Status WriteMemory(pid_t pid, uint64_t address, const void* bytes, size_t size) {
  iovec local{const_cast<void*>(bytes), size};
  iovec remote{reinterpret_cast<void*>(address), size};
  if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(size)) {
    return FailedPreconditionError(std::string("writing the target's memory failed: ") +
                                   std::strerror(errno));
  }
  return Status::Ok();
}

Status ReadMemory(pid_t pid, uint64_t address, void* bytes, size_t size) {
  iovec local{bytes, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(size)) {
    return FailedPreconditionError(std::string("reading the target's memory failed: ") +
                                   std::strerror(errno));
  }
  return Status::Ok();
}

// A NUL-terminated string of the target's (dlerror's message), at most 512 bytes of it.
std::string ReadCString(pid_t pid, uint64_t address) {
  if (address == 0) return "";
  char text[513] = {};
  for (size_t size = 512; size >= 16; size /= 2) {  // a short string may end near a page's end
    if (ReadMemory(pid, address, text, size).ok()) break;
  }
  return std::string(text, strnlen(text, 512));
}

// The state of a thread that must be put back whatever happens: its registers and signal mask
// (errno is put back by the calls' sequence, which knows where it lives).
class HijackedThread {
 public:
  HijackedThread(pid_t tid, SavedRegisters registers, uint64_t sigmask)
      : tid_(tid), registers_(std::move(registers)), sigmask_(sigmask) {}
  pid_t tid() const { return tid_; }
  const SavedRegisters& registers() const { return registers_; }

  Status Restore() const {
    Status mask = SetSigmask(sigmask_);
    Status registers = RestoreRegisters(tid_, registers_);
    return !registers.ok() ? registers : mask;
  }
  Status SetSigmask(uint64_t mask) const {
    if (ptrace(PTRACE_SETSIGMASK, tid_, reinterpret_cast<void*>(sizeof(mask)), &mask) != 0) {
      return FailedPreconditionError(std::string("PTRACE_SETSIGMASK failed: ") +
                                     std::strerror(errno));
    }
    return Status::Ok();
  }

 private:
  pid_t tid_;
  SavedRegisters registers_;
  uint64_t sigmask_;
};

struct CallsOutcome {
  InjectionFailure failure = InjectionFailure::kNone;
  std::string cause;
  int64_t entry_result = 0;
};

// Step 3 of the header on a thread already saved: the calls, with errno put back.
CallsOutcome RunCalls(const InjectionRequest& request, const LibcEntryPoints& libc,
                      const HijackedThread& thread) {
  const pid_t tid = thread.tid();
  const SavedRegisters& saved = thread.registers();
  const ThreadPosition position = PositionOf(saved);
  // The strings, below the red zone; the calls' frames below them.
  std::vector<char> strings;
  auto add = [&strings](const std::string& text) {
    const size_t offset = strings.size();
    strings.insert(strings.end(), text.begin(), text.end());
    strings.push_back('\0');
    return offset;
  };
  const size_t library_at = add(request.library);
  const size_t symbol_at = add(request.entry_symbol);
  const size_t argument_at = add(request.entry_argument);
  const uint64_t data = (position.stack - kStackReserveBytes - strings.size()) & ~uint64_t{15};
  const uint64_t stack_top = data - 64;
  auto call = [&](uint64_t function, std::initializer_list<uint64_t> args) {
    return CallFunction(tid, saved, function, std::span<const uint64_t>(args.begin(), args.size()),
                        stack_top, request.call_timeout_ns);
  };
  auto failed = [](InjectionFailure failure, std::string cause) {
    return CallsOutcome{failure, std::move(cause), 0};
  };

  StatusOr<uint64_t> errno_address = call(libc.errno_location, {});
  if (!errno_address.ok())
    return failed(InjectionFailure::kCallFailed, errno_address.status().message());
  int saved_errno = 0;
  if (Status read = ReadMemory(request.pid, *errno_address, &saved_errno, sizeof(saved_errno));
      !read.ok()) {
    return failed(InjectionFailure::kCallFailed, read.message());
  }
  if (Status written = WriteMemory(request.pid, data, strings.data(), strings.size());
      !written.ok()) {
    return failed(InjectionFailure::kCallFailed, written.message());
  }
  CallsOutcome outcome = [&]() -> CallsOutcome {
    StatusOr<uint64_t> handle = call(libc.dlopen, {data + library_at, RTLD_NOW | RTLD_LOCAL});
    if (!handle.ok()) return failed(InjectionFailure::kCallFailed, handle.status().message());
    if (*handle == 0) {
      std::string message = "dlopen(" + request.library + ") failed in the target";
      if (libc.dlerror != 0) {
        StatusOr<uint64_t> error = call(libc.dlerror, {});
        if (error.ok() && *error != 0) message += ": " + ReadCString(request.pid, *error);
      }
      return failed(InjectionFailure::kLoadFailed, message);
    }
    StatusOr<uint64_t> entry = call(libc.dlsym, {*handle, data + symbol_at});
    if (!entry.ok()) return failed(InjectionFailure::kCallFailed, entry.status().message());
    if (*entry == 0) {
      return failed(InjectionFailure::kLoadFailed,
                    request.library + " has no symbol " + request.entry_symbol);
    }
    StatusOr<uint64_t> result = call(*entry, {data + argument_at});
    if (!result.ok()) return failed(InjectionFailure::kCallFailed, result.status().message());
    return CallsOutcome{InjectionFailure::kNone, "",
                        static_cast<int64_t>(static_cast<int32_t>(*result))};
  }();
  if (Status put_back = WriteMemory(request.pid, *errno_address, &saved_errno, sizeof(saved_errno));
      !put_back.ok() && outcome.failure == InjectionFailure::kNone) {
    return failed(InjectionFailure::kCallFailed, put_back.message());
  }
  return outcome;
}

// Seizes `tid` and, when it is at a safe point, makes the calls on it. nullopt: not at a safe
// point (released untouched; `why` says why) or gone.
std::optional<InjectionOutcome> TryThread(const InjectionRequest& request,
                                          const ProcessImage& image, const LibcEntryPoints& libc,
                                          pid_t tid, std::string* why) {
  const uint64_t seized_ns = NowNs(CLOCK_MONOTONIC);
  if (Status seized = SeizeAndStop(tid, kStopTimeoutNs); !seized.ok()) {
    InjectionOutcome outcome;
    switch (seized.code()) {
      case StatusCode::kNotFound:
        *why = "exited";
        return std::nullopt;
      case StatusCode::kPermissionDenied:
        outcome.failure = InjectionFailure::kPtraceDenied;
        outcome.cause = ExplainPtraceDenial(request.pid, ReadStatus(request.pid));
        return outcome;
      default:
        outcome.failure = FieldNumber(ReadStatus(request.pid), "TracerPid") != 0
                              ? InjectionFailure::kAlreadyTraced
                              : InjectionFailure::kCallFailed;
        outcome.cause = seized.message();
        return outcome;
    }
  }
  InjectionOutcome outcome;
  outcome.thread = tid;
  StatusOr<SavedRegisters> registers = SaveRegisters(tid);
  uint64_t sigmask = 0;
  if (!registers.ok() ||
      ptrace(PTRACE_GETSIGMASK, tid, reinterpret_cast<void*>(sizeof(sigmask)), &sigmask) != 0) {
    *why = registers.ok() ? std::string("PTRACE_GETSIGMASK failed: ") + std::strerror(errno)
                          : registers.status().message();
    (void)ReleaseThread(tid);
    return std::nullopt;
  }
  if (!AtSafePoint(PositionOf(*registers), image, why)) {
    (void)ReleaseThread(tid);
    return std::nullopt;
  }
  const HijackedThread thread(tid, std::move(*registers), sigmask);
  uint64_t call_mask = ~uint64_t{0} & ~(uint64_t{1} << (SIGSEGV - 1));
  CallsOutcome calls;
  if (Status masked = thread.SetSigmask(call_mask); !masked.ok()) {
    calls = {InjectionFailure::kCallFailed, masked.message(), 0};
  } else {
    calls = RunCalls(request, libc, thread);
  }
  const Status restored = thread.Restore();
  const Status released = ReleaseThread(tid);
  outcome.stopped_ns = NowNs(CLOCK_MONOTONIC) - seized_ns;
  outcome.failure = calls.failure;
  outcome.cause = calls.cause;
  outcome.entry_result = calls.entry_result;
  if (outcome.failure == InjectionFailure::kNone && (!restored.ok() || !released.ok())) {
    outcome.failure = InjectionFailure::kCallFailed;
    outcome.cause = !restored.ok() ? restored.message() : released.message();
  }
  return outcome;
}

}  // namespace

InjectionOutcome InjectLibrary(const InjectionRequest& request) {
  auto refuse = [](InjectionFailure failure, std::string cause) {
    InjectionOutcome outcome;
    outcome.failure = failure;
    outcome.cause = std::move(cause);
    return outcome;
  };
  const std::string who = "pid " + std::to_string(request.pid);
  const std::map<std::string, std::string> status = ReadStatus(request.pid);
  if (status.empty()) return refuse(InjectionFailure::kTargetGone, who + " does not exist");
  if (const uint64_t tracer = FieldNumber(status, "TracerPid"); tracer != 0) {
    const pid_t tracer_pid = static_cast<pid_t>(tracer);
    return refuse(
        InjectionFailure::kAlreadyTraced,
        who + " is traced by pid " + std::to_string(tracer) + " (" + Comm(tracer_pid) + ")");
  }
  if ((FieldNumber(status, "SigIgn", 16) & (uint64_t{1} << (SIGSEGV - 1))) != 0) {
    return refuse(InjectionFailure::kUnsupportedTarget,
                  who + " ignores SIGSEGV, which the remote call's return trap would reset");
  }
  StatusOr<ProcessImage> image = ReadProcessImage(request.pid);
  if (!image.ok()) {
    if (image.status().code() == StatusCode::kPermissionDenied) {
      return refuse(InjectionFailure::kPtraceDenied, ExplainPtraceDenial(request.pid, status));
    }
    return refuse(InjectionFailure::kTargetGone, image.status().message());
  }
  if (!image->libc || !image->loader) {
    if (image->musl) return refuse(InjectionFailure::kNonGlibcTarget, who + " uses musl libc");
    if (!image->interpreter) {
      return refuse(InjectionFailure::kStaticTarget,
                    who + " is statically linked: it has no dynamic loader to load a library");
    }
    return refuse(InjectionFailure::kNonGlibcTarget, who + " has no glibc libc.so.6 mapped");
  }
  const std::string file_name = request.library.substr(request.library.rfind('/') + 1);
  if (image->MapsObjectNamed(file_name)) {
    return refuse(InjectionFailure::kAlreadyLoaded, who + " has " + file_name + " loaded already");
  }
  StatusOr<LibcEntryPoints> libc = FindLibcEntryPoints(request.pid, *image->libc);
  if (!libc.ok()) {
    if (libc.status().code() == StatusCode::kPermissionDenied) {
      return refuse(InjectionFailure::kPtraceDenied, ExplainPtraceDenial(request.pid, status));
    }
    return refuse(InjectionFailure::kNonGlibcTarget,
                  image->libc->path + ": " + libc.status().message());
  }
  const uint64_t deadline = NowNs(CLOCK_MONOTONIC) + request.safe_point_timeout_ns;
  std::string last_reason = "no thread";
  do {
    for (const pid_t tid : Threads(request.pid)) {
      std::string why;
      std::optional<InjectionOutcome> outcome = TryThread(request, *image, *libc, tid, &why);
      if (outcome) return *outcome;
      last_reason = "thread " + std::to_string(tid) + ": " + why;
    }
    if (ReadStatus(request.pid).empty()) {
      return refuse(InjectionFailure::kTargetGone, who + " exited");
    }
    usleep(kSafePointRetryUs);
  } while (NowNs(CLOCK_MONOTONIC) < deadline);
  return refuse(InjectionFailure::kNoSafePoint,
                "no thread of " + who +
                    " stopped at a safe point within the time allowed (last: " + last_reason + ")");
}

}  // namespace gpuattr::collector
