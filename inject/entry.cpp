// The only translation unit of libgpuattr_inject.so with default-visibility symbols: the entry
// points the CUDA driver, NVTX and `gpuattr attach` look up by name, libc's _exit and _Exit
// (interposed where the shim is preloaded), plus the library constructor. exports.map keeps
// everything else local. Every entry point is idempotent, lets no exception out, and ends in a
// last-resort catch that disables the shim rather than letting an exception reach C frames.
#include <cupti.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cupti/subscriber.h"
#include "nvtx/nvtx_injection.h"
#include "runtime/late_attach.h"
#include "runtime/session.h"
#include "runtime/shim_state.h"

#define GPUATTR_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ExitFunction = void (*)(int);

// The definitions of _exit and _Exit after ours (libc's, or another preloaded tool's), resolved
// while the library loads so that exiting never calls into the loader.
ExitFunction g_next_exit = nullptr;
ExitFunction g_next_upper_exit = nullptr;

// Runs on: the loader's thread (LD_PRELOAD, or any dlopen of the library).
__attribute__((constructor)) void GpuattrOnLoad() noexcept {
  g_next_exit = reinterpret_cast<ExitFunction>(dlsym(RTLD_NEXT, "_exit"));
  g_next_upper_exit = reinterpret_cast<ExitFunction>(dlsym(RTLD_NEXT, "_Exit"));
  try {
    gpuattr::inject::OnLoad();
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
}

// Ends this process's session as its exit handlers would have, then leaves through `next`, or
// through the exit_group system call when there is none.
[[noreturn]] void EndSessionAndExit(ExitFunction next, int status) noexcept {
  try {
    gpuattr::inject::OnImmediateExit();
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
  if (next != nullptr) next(status);
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

// _exit and _Exit, interposed when the shim is preloaded (gpuattr run): a process that leaves
// through them, such as a multiprocessing fork worker ending in Python's os._exit, runs no exit
// handler, so without this its last flush period and its Goodbye would be lost and its stream
// read as truncated. Called by the application on any thread; libc's exit does not come here
// (it calls its own _exit directly).
GPUATTR_EXPORT void _exit(int status) {  // lint-inject: allow the interposed definition itself
  EndSessionAndExit(g_next_exit, status);
}
GPUATTR_EXPORT void _Exit(int status) noexcept { EndSessionAndExit(g_next_upper_exit, status); }

// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
// Returns 1 in every case, as NVIDIA's samples do: a failure to trace must not fail CUDA.
GPUATTR_EXPORT int InitializeInjection(void) noexcept {
  try {
    // Armed: CUPTI is shared now and subscribed per capture window, by the flush thread
    // (docs/attach.md).
    if (gpuattr::inject::EnsureSession()) {
      if (gpuattr::inject::SessionArmed()) {
        gpuattr::inject::ShareCupti();
      } else {
        gpuattr::inject::InitializeCupti();
      }
    }
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
  return 1;
}

// Called by `gpuattr attach --pid` inside a process started without gpuattr, on the thread the
// injector stopped, right after it dlopened this library (docs/attach.md §Injection): starts an
// armed session towards the daemon at `socket_path` and returns at once (late_attach.h).
GPUATTR_EXPORT int GpuattrAttachLate(const char* socket_path) noexcept {
  try {
    return gpuattr::inject::StartLateAttach(socket_path);
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
  return gpuattr::inject::kLateAttachFailed;
}

// Called by NVTX3 once per module that uses NVTX when NVTX_INJECTION64_PATH names this library.
// Returns 0 when the shim is inert (no collector): NVTX then turns that module's calls into
// no-ops at zero cost.
GPUATTR_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) noexcept {
  try {
    if (!gpuattr::inject::EnsureSession()) return 0;
    return gpuattr::inject::InstallNvtxHandlers(get_export_table);
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
  return 0;
}
