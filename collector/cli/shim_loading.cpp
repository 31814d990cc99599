#include "cli/shim_loading.h"

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "cli/shim_locator.h"
#include "ptrace/library_injector.h"
#include "ptrace/process_tree.h"

namespace gpuattr::collector {
namespace {

// The shim's late-attach entry point (inject/entry.cpp) and its "started" result.
constexpr char kLateAttachEntry[] = "GpuattrAttachLate";
constexpr int64_t kLateAttachStarted = 0;
// How many processes below the one named a refusal names.
constexpr size_t kNamedDescendants = 3;

const RefusalEntry& RefusalFor(InjectionFailure failure) {
  switch (failure) {
    case InjectionFailure::kPtraceDenied:
      return AttachPtraceDeniedRefusal();
    case InjectionFailure::kAlreadyTraced:
      return AttachTargetTracedRefusal();
    case InjectionFailure::kStaticTarget:
      return AttachStaticTargetRefusal();
    case InjectionFailure::kNonGlibcTarget:
      return AttachNonGlibcTargetRefusal();
    case InjectionFailure::kNoSafePoint:
      return AttachNoSafePointRefusal();
    case InjectionFailure::kAlreadyLoaded:
      return AttachRequiresShimRefusal();
    case InjectionFailure::kNone:
    case InjectionFailure::kTargetGone:
    case InjectionFailure::kUnsupportedTarget:
    case InjectionFailure::kLoadFailed:
    case InjectionFailure::kCallFailed:
      break;
  }
  return AttachInjectionFailedRefusal();
}

}  // namespace

std::optional<Refused> RefuseWithoutCudaDriver(pid_t pid) {
  if (HasCudaDriver(pid).value_or(true)) return std::nullopt;  // unreadable: injection says why
  std::string seen = "pid " + std::to_string(pid) + " has not loaded libcuda.so";
  const std::vector<CudaProcess> below = FindCudaDescendants(pid, kNamedDescendants);
  for (size_t i = 0; i < below.size(); ++i) {
    seen += (i == 0 ? "; did you mean " : " or ") + DescribeProcess(below[i]);
  }
  return Refused{&AttachNoCudaDriverRefusal(), seen};
}

std::optional<Refused> LoadShimInto(pid_t pid, const std::string& socket_path, bool quiet) {
  StatusOr<std::string> shim = LocateShim();
  if (!shim.ok()) return Refused{&AttachInjectionFailedRefusal(), shim.status().message()};
  std::error_code error;
  InjectionRequest request;
  request.pid = pid;
  request.library = *shim;
  request.entry_symbol = kLateAttachEntry;
  request.entry_argument = std::filesystem::absolute(socket_path, error).string();
  const InjectionOutcome outcome = InjectLibrary(request);
  if (outcome.failure == InjectionFailure::kAlreadyLoaded) {
    return Refused{&AttachRequiresShimRefusal(),
                   outcome.cause +
                       ", but is not registered with this daemon (it was started "
                       "under gpuattr run, or is armed towards another socket)"};
  }
  if (outcome.failure != InjectionFailure::kNone) {
    return Refused{&RefusalFor(outcome.failure), outcome.cause};
  }
  if (outcome.entry_result != kLateAttachStarted) {
    return Refused{&AttachInjectionFailedRefusal(), std::string(kLateAttachEntry) + " returned " +
                                                        std::to_string(outcome.entry_result) +
                                                        " in pid " + std::to_string(pid)};
  }
  if (!quiet) {
    std::fprintf(stderr,
                 "gpuattr attach: loaded the shim into pid %d (thread %d was stopped for %.0f "
                 "us)\n",
                 pid, outcome.thread, static_cast<double>(outcome.stopped_ns) / 1e3);
  }
  return std::nullopt;
}

}  // namespace gpuattr::collector
