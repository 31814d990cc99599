// Bind: one entry point of a dlopen'ed library into a typed function pointer, for the simulated
// driver (the fake CUPTI's control API) and the second CUPTI client (the CUPTI API), which both
// bind the library GPUATTR_CUPTI_LIBRARY names. Header-only; any thread.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_BIND_SYMBOL_H_
#define GPUATTR_TESTS_SIMGPU_SIM_BIND_SYMBOL_H_

#include <dlfcn.h>

namespace gpuattr::simgpu {

// *out = the symbol `name` of `library`, or null; whether it was found.
template <typename Fn>
bool Bind(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  return *out != nullptr;
}

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_BIND_SYMBOL_H_
