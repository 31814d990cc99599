#include "cupti/cupti_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace gpuattr::inject {

CuptiBinding BindCupti(CuptiApi* api) noexcept {
  CuptiBinding binding;
  const char* path = getenv("GPUATTR_CUPTI_LIBRARY");
  binding.library = (path != nullptr && path[0] != '\0') ? path : "libcupti.so.13";
  // RTLD_LOCAL: CUPTI's symbols must not interpose on anything in the host.
  void* handle = dlopen(binding.library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    snprintf(binding.error, sizeof(binding.error), "dlopen(%s) failed: %s", binding.library,
             error != nullptr ? error : "unknown error");
    return binding;
  }
  CuptiApi bound;
#define GPUATTR_CUPTI_BIND(name)                                                                \
  bound.name = reinterpret_cast<decltype(bound.name)>(dlsym(handle, #name));                    \
  if (bound.name == nullptr) {                                                                  \
    snprintf(binding.error, sizeof(binding.error), "%s has no symbol " #name, binding.library); \
    return binding;                                                                             \
  }
  GPUATTR_FOR_EACH_CUPTI_FUNCTION(GPUATTR_CUPTI_BIND)
#undef GPUATTR_CUPTI_BIND
  *api = bound;
  binding.handle = handle;
  binding.ok = true;
  return binding;
}

const char* CuptiResultName(const CuptiApi* api, CUptiResult result) noexcept {
  const char* name = nullptr;
  if (api != nullptr && api->cuptiGetResultString != nullptr &&
      api->cuptiGetResultString(result, &name) == CUPTI_SUCCESS && name != nullptr) {
    return name;
  }
  return "CUPTI_ERROR";
}

}  // namespace gpuattr::inject
