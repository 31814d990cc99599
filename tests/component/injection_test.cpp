// The injector (collector/ptrace/) against a plain target without CUDA (injection_target.cpp):
// a library is loaded into a thread blocked in a system call and into one spinning in its own
// code, and the target itself checks that its registers, errno and signal mask came back and
// that its read was restarted. Then the refusals that must touch nothing: a process that is
// already traced, one the kernel will not let us trace, a static one, one that is gone.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "ptrace/library_injector.h"
#include "ptrace/process_image.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::component {
namespace {

using collector::InjectionFailure;
using collector::InjectionOutcome;
using collector::InjectionRequest;
using collector::InjectLibrary;
using test_support::MonotonicSeconds;
using test_support::ProcessResult;
using test_support::Subprocess;
using test_support::TempDir;

// A running injection_target in `mode`, released by Release() (one byte into its FIFO).
class Target {
 public:
  Target(const std::string& mode, const std::string& executable = INJECTION_TARGET)
      : fifo_(dir_.File("fifo")), ready_(dir_.File("ready")) {
    REQUIRE(mkfifo(fifo_.c_str(), 0600) == 0);
    process_.emplace(std::vector<std::string>{executable, mode, fifo_, ready_});
    const double deadline = MonotonicSeconds() + 20;
    while (access(ready_.c_str(), F_OK) != 0 && MonotonicSeconds() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(access(ready_.c_str(), F_OK) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // into its read or its loop
  }
  pid_t pid() const { return process_->pid(); }
  ProcessResult Release() {
    const int fd = open(fifo_.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "x", 1) == 1);
    close(fd);
    return process_->Wait(20);
  }

 private:
  TempDir dir_;
  std::string fifo_;
  std::string ready_;
  std::optional<Subprocess> process_;
};

InjectionRequest ProbeRequest(pid_t pid) {
  InjectionRequest request;
  request.pid = pid;
  request.library = INJECTION_PROBE;
  request.entry_symbol = "probe_entry";
  request.entry_argument = "hello from the test";
  return request;
}

std::string TracerOf(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("TracerPid:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 10));
  }
  return "";
}

const char* kAllRestored =
    "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe hello from the test\n";

TEST_CASE(
    "the injector loads a library into a thread blocked in a system call, or spinning in its own "
    "code, and restores it",
    "[injection]") {
  // The main thread is the one chosen either way: at a safe point in libc's read, or in the
  // target's own instructions.
  const std::string mode = GENERATE("syscall", "spin");
  INFO("mode " << mode);
  Target target(mode);
  const InjectionOutcome outcome = InjectLibrary(ProbeRequest(target.pid()));
  INFO(outcome.cause);
  REQUIRE(outcome.failure == InjectionFailure::kNone);
  CHECK(outcome.entry_result == 41);
  CHECK(outcome.thread == target.pid());
  CHECK(outcome.stopped_ns > 0);
  CHECK(TracerOf(target.pid()) == "0");
  const ProcessResult result = target.Release();
  INFO(result.err);
  CHECK(result.out == kAllRestored);
  CHECK(result.exit_code == 0);
}

TEST_CASE("a target without the injection runs the same: the probe is absent, the checks pass",
          "[injection]") {
  Target target("syscall");
  const ProcessResult result = target.Release();
  CHECK(result.out == "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe none\n");
  CHECK(result.exit_code == 0);
}

TEST_CASE("a library that cannot be loaded is refused with dlerror's text, the target intact",
          "[injection]") {
  Target target("syscall");
  InjectionRequest request = ProbeRequest(target.pid());
  request.library = "/nonexistent/libnothing.so";
  const InjectionOutcome outcome = InjectLibrary(request);
  CHECK(outcome.failure == InjectionFailure::kLoadFailed);
  CHECK_THAT(outcome.cause,
             Catch::Contains("libnothing.so") && Catch::Contains("No such file or directory"));
  const ProcessResult result = target.Release();
  CHECK(result.out == "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe none\n");
}

TEST_CASE("a library loaded once is not loaded a second time", "[injection]") {
  Target target("syscall");
  REQUIRE(InjectLibrary(ProbeRequest(target.pid())).failure == InjectionFailure::kNone);
  const InjectionOutcome again = InjectLibrary(ProbeRequest(target.pid()));
  CHECK(again.failure == InjectionFailure::kAlreadyLoaded);
  CHECK_THAT(again.cause, Catch::Contains("libinjection_probe.so loaded already"));
  CHECK(target.Release().out == kAllRestored);
}

TEST_CASE("a target that is already traced is refused before anything is touched", "[injection]") {
  Target target("syscall");
  REQUIRE(ptrace(PTRACE_SEIZE, target.pid(), nullptr, nullptr) == 0);
  const InjectionOutcome outcome = InjectLibrary(ProbeRequest(target.pid()));
  CHECK(outcome.failure == InjectionFailure::kAlreadyTraced);
  CHECK_THAT(outcome.cause, Catch::Contains("traced by pid " + std::to_string(getpid())));
  // A tracee must be stopped to be detached.
  REQUIRE(ptrace(PTRACE_INTERRUPT, target.pid(), nullptr, nullptr) == 0);
  REQUIRE(waitpid(target.pid(), nullptr, __WALL) == target.pid());
  REQUIRE(ptrace(PTRACE_DETACH, target.pid(), nullptr, nullptr) == 0);
  const ProcessResult result = target.Release();
  CHECK(result.out == "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe none\n");
}

// Runs the injection in a child process without CAP_SYS_PTRACE (dropped from its effective set;
// a non-root user has none to drop) and returns its outcome's failure, as the child's exit code.
InjectionFailure InjectWithoutPtraceCapability(pid_t target) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &header, data) == 0) {
      data[0].effective &= ~(1u << CAP_SYS_PTRACE);
      syscall(SYS_capset, &header, data);
    }
    _exit(static_cast<int>(InjectLibrary(ProbeRequest(target)).failure));
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return static_cast<InjectionFailure>(WEXITSTATUS(status));
}

TEST_CASE("a target the kernel does not let us trace is refused as ptrace_denied, untouched",
          "[injection]") {
  Target target("nondumpable");
  CHECK(InjectWithoutPtraceCapability(target.pid()) == InjectionFailure::kPtraceDenied);
  CHECK(TracerOf(target.pid()) == "0");
  const ProcessResult result = target.Release();
  CHECK(result.out == "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe none\n");
  CHECK(result.exit_code == 0);
}

TEST_CASE("a statically linked target is refused as static_target, untouched", "[injection]") {
  Target target("syscall", INJECTION_STATIC_TARGET);
  const InjectionOutcome outcome = InjectLibrary(ProbeRequest(target.pid()));
  CHECK(outcome.failure == InjectionFailure::kStaticTarget);
  CHECK_THAT(outcome.cause, Catch::Contains("statically linked"));
  const ProcessResult result = target.Release();
  CHECK(result.out == "registers ok\nerrno ok\nread ok\nsigmask ok\nprobe none\n");
}

TEST_CASE("a pid that does not exist is refused as target_gone", "[injection]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const InjectionOutcome outcome = InjectLibrary(ProbeRequest(child));
  CHECK(outcome.failure == InjectionFailure::kTargetGone);
}

TEST_CASE("libc's entry points found from /proc/PID/maps and the ELF file match the loader's",
          "[injection]") {
  StatusOr<collector::ProcessImage> image = collector::ReadProcessImage(getpid());
  REQUIRE(image.ok());
  REQUIRE(image->libc.has_value());
  REQUIRE(image->loader.has_value());
  CHECK(image->interpreter);
  CHECK_FALSE(image->musl);
  StatusOr<collector::LibcEntryPoints> entry =
      collector::FindLibcEntryPoints(getpid(), *image->libc);
  REQUIRE(entry.ok());
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(libc != nullptr);
  CHECK(entry->dlopen == reinterpret_cast<uint64_t>(dlsym(libc, "dlopen")));
  CHECK(entry->dlsym == reinterpret_cast<uint64_t>(dlsym(libc, "dlsym")));
  CHECK(entry->dlerror == reinterpret_cast<uint64_t>(dlsym(libc, "dlerror")));
  CHECK(entry->errno_location == reinterpret_cast<uint64_t>(dlsym(libc, "__errno_location")));
  dlclose(libc);
}

TEST_CASE("a file that is not ELF, or is cut short, is an error and not a crash", "[injection]") {
  CHECK(collector::FindDynamicSymbol("", "dlopen").status().code() == StatusCode::kDataLoss);
  CHECK(
      collector::FindDynamicSymbol("not an elf file at all, just text", "dlopen").status().code() ==
      StatusCode::kDataLoss);
  std::ifstream libc_file("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(libc_file)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 4096);
  for (size_t cut : {size_t{16}, size_t{64}, size_t{200}, bytes.size() / 2}) {
    StatusOr<uint64_t> symbol = collector::FindDynamicSymbol(bytes.substr(0, cut), "main");
    CHECK_FALSE(symbol.ok());
  }
}

}  // namespace
}  // namespace gpuattr::component
