// A plain process (no CUDA, no shim) for the injector's tests (injection_test.cpp): it holds
// known values in registers, errno and its signal mask while the test loads a library into it,
// then checks every one of them itself and says so on stdout, one "NAME ok" or "NAME bad: ..."
// line each, exiting 0 only when all are ok.
//
//   injection_target syscall FIFO READY - the main thread blocks in a raw read(2) of FIFO with
//                                        magic values in callee-saved and vector registers; the
//                                        read must be restarted, not fail with EINTR.
//   injection_target spin FIFO READY    - the main thread spins in its own code (no system call)
//                                        with the magic values live, until a second thread,
//                                        blocked reading FIFO, sets the stop flag.
//   injection_target nondumpable FIFO READY - as syscall, after prctl(PR_SET_DUMPABLE, 0).
// READY is a file created once the values are set (the test waits for it). After FIFO yields a
// byte the target reports what the injected probe (libinjection_probe.so) recorded, if it was
// loaded: "probe ARGUMENT" or "probe none".
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr uint64_t kMagic[5] = {0x1111222233334444, 0x5555666677778888, 0x9999aaaabbbbcccc,
                                0xddddeeeeffff0001, 0x0123456789abcdef};
constexpr int kErrnoMark = 4242;

// What the asm blocks store (STORE_REGISTERS writes its first 56 bytes).
struct Observed {
  uint64_t general[5] = {};
  uint64_t vector[2] = {};
  long read_result = 0;
};
static_assert(offsetof(Observed, vector) == 40);

volatile int g_stop_spinning = 0;
int g_fifo = -1;

// The magic values into r12-r15, rbx, xmm6 and xmm7 (as immediates: no register is needed to
// reach them, which an unoptimized, sanitized build has few of to spare).
#define LOAD_MAGIC                                                             \
  "movabs $0x1111222233334444, %%r12\n\tmovabs $0x5555666677778888, %%r13\n\t" \
  "movabs $0x9999aaaabbbbcccc, %%r14\n\tmovabs $0xddddeeeeffff0001, %%r15\n\t" \
  "movabs $0x0123456789abcdef, %%rbx\n\tmovq %%r12, %%xmm6\n\tmovq %%r13, %%xmm7\n\t"
// Those registers, as they are now, into the Observed at %[out].
#define STORE_REGISTERS                                                           \
  "mov %%r12, 0(%[out])\n\tmov %%r13, 8(%[out])\n\tmov %%r14, 16(%[out])\n\t"     \
  "mov %%r15, 24(%[out])\n\tmov %%rbx, 32(%[out])\n\tmovq %%xmm6, 40(%[out])\n\t" \
  "movq %%xmm7, 48(%[out])\n\t"

// Blocks in read(2) of the FIFO with the magic values in the registers, then records those
// registers and the read's result.
Observed BlockInRead() {
  Observed seen;
  char byte = 0;
  long result = SYS_read;
  asm volatile(LOAD_MAGIC "syscall\n\t" STORE_REGISTERS
               : "+a"(result)
               : "D"(static_cast<long>(g_fifo)), "S"(&byte), "d"(1L), [out] "r"(&seen)
               : "rcx", "r11", "r12", "r13", "r14", "r15", "rbx", "xmm6", "xmm7", "memory");
  seen.read_result = result;
  return seen;
}

// Spins in this function's own instructions (compare and branch: the flags matter) with the magic
// values live until g_stop_spinning is set, then records the registers.
Observed Spin() {
  Observed seen;
  asm volatile(LOAD_MAGIC "1:\n\tcmpl $0, (%[stop])\n\tje 1b\n\t" STORE_REGISTERS
               :
               : [stop] "r"(&g_stop_spinning), [out] "r"(&seen)
               : "r12", "r13", "r14", "r15", "rbx", "xmm6", "xmm7", "cc", "memory");
  seen.read_result = 1;
  return seen;
}

void* ReadThenStop(void*) {
  char byte = 0;
  while (read(g_fifo, &byte, 1) < 0 && errno == EINTR) {
  }
  g_stop_spinning = 1;
  return nullptr;
}

int Report(const char* name, bool ok, const std::string& detail) {
  if (ok) {
    std::printf("%s ok\n", name);
  } else {
    std::printf("%s bad: %s\n", name, detail.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: injection_target syscall|spin|nondumpable FIFO READY\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "nondumpable") prctl(PR_SET_DUMPABLE, 0);
  g_fifo = open(argv[2], O_RDWR);  // read-write: opening does not wait for a writer
  if (g_fifo < 0) {
    std::perror("open FIFO");
    return 2;
  }
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigaddset(&blocked, SIGWINCH);
  pthread_sigmask(SIG_SETMASK, &blocked, nullptr);
  pthread_t reader{};
  if (mode == "spin") pthread_create(&reader, nullptr, &ReadThenStop, nullptr);
  close(open(argv[3], O_CREAT | O_WRONLY, 0600));

  errno = kErrnoMark;
  const Observed seen = mode == "spin" ? Spin() : BlockInRead();
  const int errno_after = errno;
  if (mode == "spin") pthread_join(reader, nullptr);

  int failures = 0;
  std::string detail;
  for (int i = 0; i < 5; ++i) {
    if (seen.general[i] != kMagic[i]) detail += " general" + std::to_string(i);
  }
  for (int i = 0; i < 2; ++i) {
    if (seen.vector[i] != kMagic[i]) detail += " vector" + std::to_string(i);
  }
  failures += Report("registers", detail.empty(), detail);
  failures += Report("errno", errno_after == kErrnoMark, std::to_string(errno_after));
  failures += Report("read", seen.read_result == 1, std::to_string(seen.read_result));
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  bool same_mask = true;
  for (int signal = 1; signal < 32; ++signal) {
    same_mask = same_mask && sigismember(&now, signal) == sigismember(&blocked, signal);
  }
  failures += Report("sigmask", same_mask, "changed");
  void* probe = dlopen("libinjection_probe.so", RTLD_NOW | RTLD_NOLOAD);
  const char* argument =
      probe != nullptr ? static_cast<const char*>(dlsym(probe, "probe_argument")) : nullptr;
  std::printf("probe %s\n", argument != nullptr ? argument : "none");
  return failures == 0 ? 0 : 1;
}
