// The only translation unit of libgpuattr_inject.so with default-visibility symbols: the entry
// points the CUDA driver and NVTX look up by name, plus the library constructor. exports.map
// keeps everything else local. Every entry point is idempotent, noexcept, and ends in a
// last-resort catch that disables the shim rather than letting an exception reach C frames.
#include <cupti.h>

#include "cupti/subscriber.h"
#include "nvtx/nvtx_injection.h"
#include "runtime/session.h"
#include "runtime/shim_state.h"

#define GPUATTR_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Runs on: the loader's thread (LD_PRELOAD, or any dlopen of the library).
__attribute__((constructor)) void GpuattrOnLoad() noexcept {
  try {
    gpuattr::inject::OnLoad();
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
}

}  // namespace

// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
// Returns 1 in every case, as NVIDIA's samples do: a failure to trace must not fail CUDA.
GPUATTR_EXPORT int InitializeInjection(void) noexcept {
  try {
    // Armed: CUPTI is subscribed per capture window, by the flush thread (docs/attach.md).
    if (gpuattr::inject::EnsureSession() && !gpuattr::inject::SessionArmed()) {
      gpuattr::inject::InitializeCupti();
    }
  } catch (...) {
    gpuattr::inject::DisableShim();
  }
  return 1;
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
