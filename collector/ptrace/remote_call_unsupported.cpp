// remote_call.h where no implementation exists yet (every architecture but x86-64): each call
// fails with a cause that says so, and `gpuattr attach` turns that into its typed refusal before
// any thread has been changed (SaveRegisters fails first, and the thread is released as it was).
#include "ptrace/remote_call.h"

namespace gpuattr::collector {
namespace {

Status Unsupported() {
  return FailedPreconditionError(
      "remote calls are implemented for x86-64 only (docs/attach.md §Injection)");
}

}  // namespace

bool IsBlockingSystemCall(int64_t /*system_call*/) { return false; }

StatusOr<SavedRegisters> SaveRegisters(pid_t /*tid*/) { return Unsupported(); }

Status RestoreRegisters(pid_t /*tid*/, const SavedRegisters& /*saved*/) { return Unsupported(); }

ThreadPosition PositionOf(const SavedRegisters& /*saved*/) { return {}; }

StatusOr<uint64_t> CallFunction(pid_t /*tid*/, const SavedRegisters& /*saved*/,
                                uint64_t /*function*/, std::span<const uint64_t> /*args*/,
                                uint64_t /*stack_top*/, uint64_t /*timeout_ns*/) {
  return Unsupported();
}

}  // namespace gpuattr::collector
