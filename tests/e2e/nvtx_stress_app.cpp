// The NVTX stress app (issue 8): T threads, each doing N launches, each launch inside an NVTX range
// pushed by one of three shared libraries (tests/e2e/nvtx_libs, rotating a, b, c), so the shim
// sees concurrent rings, per-library NVTX initialisation and a flush thread under load.
//
// It drives the fake CUPTI as the simulated driver does (tests/simgpu/fake_cupti/simgpu_control.h):
// dlopens GPUATTR_CUPTI_LIBRARY, calls the shim's InitializeInjection as the CUDA driver would at
// cuInit (when CUDA_INJECTION64_PATH names one), and per launch brackets a cudaLaunchKernel with
// simgpu_api_enter/simgpu_api_exit and submits one kernel activity with its correlation id. Each
// thread has its own stream; its kernels are back to back, 1 us each, on the CUPTI clock.
//
// Usage: nvtx_stress_app THREADS LAUNCHES_PER_THREAD. Exit 0, or 2 when the arguments or the fake
// CUPTI are unusable. CI runs 64 x 2,000; the full issue-8 scenario is 64 x 100,000, from build/:
//   GPUATTR_CUPTI_LIBRARY=$PWD/tests/simgpu/libcupti.so.13 collector/gpuattr run -o report.json
//       -- tests/e2e/nvtx_stress_app 64 100000
#include <cupti_callbacks.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "simgpu_control.h"

extern "C" void NvtxLibARun(void (*callback)(void*), void* arg);
extern "C" void NvtxLibBRun(void (*callback)(void*), void* arg);
extern "C" void NvtxLibCRun(void (*callback)(void*), void* arg);

namespace {

constexpr uint64_t kKernelNs = 1000;
constexpr const char* kKernelName = "_Z12stress_kernelv";

struct FakeCupti {
  decltype(&simgpu_api_enter) api_enter = nullptr;
  decltype(&simgpu_api_exit) api_exit = nullptr;
  decltype(&simgpu_activity_submit) submit = nullptr;
  decltype(&simgpu_now) now = nullptr;
};

FakeCupti g_cupti;  // written once in main before any worker starts, read-only afterwards

// What one thread's launches need between calls; owned by that thread.
struct Launcher {
  uint32_t stream = 0;
  uint64_t stream_end_ns = 0;
};

// Runs on: an app worker thread, inside one of the libraries' NVTX ranges.
void Launch(void* arg) {
  auto* launcher = static_cast<Launcher*>(arg);
  const uint32_t correlation_id = g_cupti.api_enter(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, kKernelName,
      0, launcher->stream);
  SimgpuActivity kernel{};
  kernel.type = SIMGPU_ACTIVITY_KERNEL;
  kernel.correlation_id = correlation_id;
  kernel.device = 0;
  kernel.stream = launcher->stream;
  kernel.start_ns = std::max(g_cupti.now(), launcher->stream_end_ns);
  kernel.end_ns = kernel.start_ns + kKernelNs;
  kernel.name = kKernelName;
  kernel.grid[0] = kernel.grid[1] = kernel.grid[2] = 1;
  kernel.block[0] = 128;
  kernel.block[1] = kernel.block[2] = 1;
  kernel.registers_per_thread = 32;
  launcher->stream_end_ns = kernel.end_ns;
  g_cupti.submit(&kernel);
  g_cupti.api_exit(0);
}

// Runs on: app worker thread `index`.
void Worker(uint32_t index, long launches) {
  Launcher launcher;
  launcher.stream = index + 1;
  for (long i = 0; i < launches; ++i) {
    switch ((index + static_cast<uint64_t>(i)) % 3) {
      case 0:
        NvtxLibARun(Launch, &launcher);
        break;
      case 1:
        NvtxLibBRun(Launch, &launcher);
        break;
      default:
        NvtxLibCRun(Launch, &launcher);
        break;
    }
  }
  // The fake delivers a kernel's timestamps only once its end has passed on the CUPTI clock; wait
  // for it so that the flush at exit carries complete records.
  while (g_cupti.now() < launcher.stream_end_ns) {
    const timespec pause{0, static_cast<long>(kKernelNs)};
    nanosleep(&pause, nullptr);
  }
}

bool BindFakeCupti() {
  const char* path = std::getenv("GPUATTR_CUPTI_LIBRARY");
  void* handle = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : nullptr;
  if (handle == nullptr) return false;
  g_cupti.api_enter =
      reinterpret_cast<decltype(g_cupti.api_enter)>(dlsym(handle, "simgpu_api_enter"));
  g_cupti.api_exit = reinterpret_cast<decltype(g_cupti.api_exit)>(dlsym(handle, "simgpu_api_exit"));
  g_cupti.submit =
      reinterpret_cast<decltype(g_cupti.submit)>(dlsym(handle, "simgpu_activity_submit"));
  g_cupti.now = reinterpret_cast<decltype(g_cupti.now)>(dlsym(handle, "simgpu_now"));
  return g_cupti.api_enter != nullptr && g_cupti.api_exit != nullptr && g_cupti.submit != nullptr &&
         g_cupti.now != nullptr;
}

// What the CUDA driver does at cuInit (cupti-notes §1.1); nothing when no injection is named.
void InitializeInjection() {
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  if (injection == nullptr || *injection == '\0') return;
  void* shim = dlopen(injection, RTLD_NOW);
  auto* initialize =
      shim != nullptr ? reinterpret_cast<int (*)()>(dlsym(shim, "InitializeInjection")) : nullptr;
  if (initialize != nullptr) initialize();
}

}  // namespace

int main(int argc, char** argv) {
  const long threads = argc == 3 ? std::strtol(argv[1], nullptr, 10) : 0;
  const long launches = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 0;
  if (threads <= 0 || threads > 1024 || launches <= 0) {
    std::fprintf(stderr, "usage: nvtx_stress_app THREADS(1..1024) LAUNCHES_PER_THREAD\n");
    return 2;
  }
  if (!BindFakeCupti()) {
    std::fprintf(stderr, "nvtx_stress_app: GPUATTR_CUPTI_LIBRARY must name the fake CUPTI\n");
    return 2;
  }
  InitializeInjection();
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (long t = 0; t < threads; ++t)
    workers.emplace_back(Worker, static_cast<uint32_t>(t), launches);
  for (std::thread& worker : workers) worker.join();
  return 0;
}
