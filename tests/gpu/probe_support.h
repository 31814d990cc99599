// What the real-GPU tier's programs (gpu_probe, cupti_questions) share: JSON string quoting for
// the truths and answers they print, and the CUDA driver's entry points taken from libcuda.so.1
// by dlopen, so that each program still loads, and refuses cleanly, on a machine without a driver.
// Header-only; stateless, callable from any thread.
#ifndef GPUATTR_TESTS_GPU_PROBE_SUPPORT_H_
#define GPUATTR_TESTS_GPU_PROBE_SUPPORT_H_

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace gpuattr::gpu_tier {

// `text` as a JSON string literal: quotes and backslashes escaped, control characters as \u00XX.
inline std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);
using LaunchKernelExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);

// A driver entry point from libcuda.so.1 (the symbol a linked call resolves to), or null when the
// library or the symbol is missing; dlerror() then says why.
inline void* DriverSymbol(const char* name) {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (libcuda == nullptr) libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  return libcuda != nullptr ? dlsym(libcuda, name) : nullptr;
}

}  // namespace gpuattr::gpu_tier

#endif  // GPUATTR_TESTS_GPU_PROBE_SUPPORT_H_
