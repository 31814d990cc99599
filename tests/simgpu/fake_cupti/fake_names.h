// Names and classifications of CUPTI callback ids and results for the fake libcupti.so.13, from
// the tables generated out of the CUDA headers (generate_names.cmake).
#ifndef GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_NAMES_H_
#define GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_NAMES_H_

#include <cstdint>

namespace gpuattr::simgpu {

// The API function's name for a runtime or driver cbid, "<unknown>" for others.
const char* FunctionName(int domain, uint32_t cbid);
// The same, or null when the id is unknown (cuptiGetCallbackName).
const char* CallbackName(int domain, uint32_t cbid);
// "CUPTI_ERROR_…" for a CUptiResult, or null.
const char* ResultName(uint32_t result);
bool IsLaunchCbid(int domain, uint32_t cbid);
// The driver call a runtime call makes inside itself; 0 when the simulation models none.
uint32_t NestedDriverCbid(uint32_t runtime_cbid);

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_NAMES_H_
