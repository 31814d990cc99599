// FakeCupti: the fake libcupti.so.13 bound the way a client binds CUPTI, with dlopen/dlsym, for
// the simgpu tests. SIMGPU_FAKE_CUPTI_PATH (a compile definition) names the built library.
// Single-threaded setup; the function pointers are then read-only.
#ifndef GPUATTR_TESTS_SIMGPU_TESTS_FAKE_CUPTI_CLIENT_H_
#define GPUATTR_TESTS_SIMGPU_TESTS_FAKE_CUPTI_CLIENT_H_

#include <cupti.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "simgpu_control.h"

namespace gpuattr::simgpu::testing {

struct FakeCupti {
  void* handle = nullptr;
#define GPUATTR_SIMGPU_FN(name) decltype(&::name) name = nullptr;
#define GPUATTR_SIMGPU_FNS(X)               \
  X(cuptiGetVersion)                        \
  X(cuptiGetResultString)                   \
  X(cuptiGetLastError)                      \
  X(cuptiGetCallbackName)                   \
  X(cuptiSubscribe)                         \
  X(cuptiSubscribe_v2)                      \
  X(cuptiUnsubscribe)                       \
  X(cuptiEnableCallback)                    \
  X(cuptiEnableDomain)                      \
  X(cuptiSetThreadIdType)                   \
  X(cuptiGetThreadIdType)                   \
  X(cuptiGetTimestamp)                      \
  X(cuptiActivityRegisterTimestampCallback) \
  X(cuptiActivitySetAttribute)              \
  X(cuptiActivityGetAttribute)              \
  X(cuptiActivityRegisterCallbacks)         \
  X(cuptiActivityEnable)                    \
  X(cuptiActivityDisable)                   \
  X(cuptiActivityFlushAll)                  \
  X(cuptiActivityFlushPeriod)               \
  X(cuptiActivityGetNextRecord)             \
  X(cuptiActivityGetNumDroppedRecords)      \
  X(cuptiGetGraphNodeId)                    \
  X(cuptiGetGraphId)                        \
  X(cuptiFinalize)                          \
  X(simgpu_now)                             \
  X(simgpu_api_enter)                       \
  X(simgpu_api_exit)                        \
  X(simgpu_activity_submit)
  GPUATTR_SIMGPU_FNS(GPUATTR_SIMGPU_FN)
#undef GPUATTR_SIMGPU_FN

  // Loads the fake; false when it or one of the functions is missing.
  bool Load() {
    handle = dlopen(SIMGPU_FAKE_CUPTI_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) return false;
    bool ok = true;
#define GPUATTR_SIMGPU_BIND(name)                                \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name)); \
  ok = ok && name != nullptr;
    GPUATTR_SIMGPU_FNS(GPUATTR_SIMGPU_BIND)
#undef GPUATTR_SIMGPU_BIND
    return ok;
  }
};
#undef GPUATTR_SIMGPU_FNS

// The fake, loaded once per test process (dlopen returns the same library every time anyway).
inline FakeCupti& Fake() {
  static FakeCupti fake = [] {
    FakeCupti f;
    REQUIRE(f.Load());
    return f;
  }();
  return fake;
}

}  // namespace gpuattr::simgpu::testing

#endif  // GPUATTR_TESTS_SIMGPU_TESTS_FAKE_CUPTI_CLIENT_H_
