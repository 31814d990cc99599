// The CUDA driver API's device queries, in the simulated driver's libcuda.so.1 that every
// simulated job maps: a shim loaded into a running simulated job by `gpuattr attach` names the
// devices through them, since CUPTI gives no device records after a late attach
// (cupti-notes §5). The simulated machine has SIMGPU_DEVICE_COUNT devices, the ordinals scenarios
// may use, all named as the fake CUPTI's device records name them.
#include <cuda.h>

#include <cstdio>

#include "simgpu_control.h"

extern "C" __attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = SIMGPU_DEVICE_COUNT;
  return CUDA_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) CUresult cuDeviceGetName(char* name, int length,
                                                                           CUdevice device) {
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= SIMGPU_DEVICE_COUNT) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(length), "%s", SIMGPU_DEVICE_NAME);
  return CUDA_SUCCESS;
}
