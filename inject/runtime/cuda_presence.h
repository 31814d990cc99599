// Whether a process that carries a CUDA runtime could have reached a CUDA driver: the check
// behind the `driver_missing` refusal (docs/architecture.md, "The shim's lifecycle").
//
// Without a driver cuInit never runs, so neither does InitializeInjection, where CUPTI is set up
// and its refusals are sent: the runtime fails on its own (cudaErrorInsufficientDriver) and
// nothing would say why the report has no device time. So at exit the shim asks, cheapest first:
//   1. Is libcuda.so.1 loaded? Then a driver was reached: nothing to say.
//   2. Is a CUDA runtime in the process image: an object named libcudart.so*, or an object with
//      CUDA device code (a .nv_fatbin or .nvFatBinSegment section; nvcc links the runtime
//      statically by default)? If not, the process never meant to use CUDA: nothing to say.
//   3. Is there a kernel driver (/proc/driver/nvidia/version, or WSL's /dev/dxg)? Then the
//      process only never called CUDA: nothing to say.
//   4. Can libcuda.so.1 be loaded now? If it can (a driver after all), nothing to say; if not,
//      dlerror's text is what was seen.
//
// Reads files and calls dlopen: never on a hot path. Runs on: the thread running the atexit
// handlers (and test threads); not reentrant (it uses static buffers).
#ifndef GPUATTR_INJECT_RUNTIME_CUDA_PRESENCE_H_
#define GPUATTR_INJECT_RUNTIME_CUDA_PRESENCE_H_

#include <cstddef>

namespace gpuattr::inject {

// True when the ELF file at `path` has a section holding CUDA device code. False for anything
// that is not a readable 64-bit ELF file with a sane section table.
bool HasCudaDeviceCode(const char* path) noexcept;

// True when this process carries a CUDA runtime (step 2 above).
bool CudaRuntimeLoaded() noexcept;

// True when this process carries a CUDA runtime but no CUDA driver can be reached (steps 1-4);
// then `cause` (of `size` bytes) says what was seen.
bool FindMissingDriver(char* cause, size_t size) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_CUDA_PRESENCE_H_
