// CuptiApi: the table of every CUPTI function the shim calls — the seam between the shim and
// libcupti (HPCToolkit's cupti_bind pattern).
//
// The shim has no link-time dependency on libcupti: BindCupti() dlopens it (GPUATTR_CUPTI_LIBRARY,
// else "libcupti.so.13" through the usual search) and fills the table with dlsym. Tests fill a
// table by hand with test doubles. Member names are the CUPTI function names on purpose, so
// `api.cuptiActivityFlushAll(0)` reads like the vendor documentation.
//
// Every function listed here must be exported by any CUPTI the shim is pointed at (the simulated
// GPU's fake libcupti.so.13 included); binding fails, with the missing name as the cause, if one
// is absent.
//
// Threads: BindCupti runs once, in InitializeInjection. The table is immutable afterwards and read
// from any thread.
#ifndef GPUATTR_INJECT_CUPTI_CUPTI_API_H_
#define GPUATTR_INJECT_CUPTI_CUPTI_API_H_

#include <cupti.h>

#include <cstddef>

#define GPUATTR_FOR_EACH_CUPTI_FUNCTION(X)  \
  X(cuptiGetVersion)                        \
  X(cuptiGetResultString)                   \
  X(cuptiSubscribe_v2)                      \
  X(cuptiUnsubscribe)                       \
  X(cuptiEnableCallback)                    \
  X(cuptiEnableDomain)                      \
  X(cuptiSetThreadIdType)                   \
  X(cuptiActivityRegisterTimestampCallback) \
  X(cuptiActivityRegisterCallbacks)         \
  X(cuptiActivityEnable)                    \
  X(cuptiActivityDisable)                   \
  X(cuptiActivityFlushAll)                  \
  X(cuptiActivityGetNextRecord)             \
  X(cuptiActivityGetNumDroppedRecords)      \
  X(cuptiGetGraphNodeId)                    \
  X(cuptiGetGraphId)                        \
  X(cuptiFinalize)

namespace gpuattr::inject {

struct CuptiApi {
#define GPUATTR_CUPTI_MEMBER(name) decltype(&::name) name = nullptr;
  GPUATTR_FOR_EACH_CUPTI_FUNCTION(GPUATTR_CUPTI_MEMBER)
#undef GPUATTR_CUPTI_MEMBER
};

// The outcome of binding.
struct CuptiBinding {
  bool ok = false;
  const char* library = nullptr;  // the name passed to dlopen
  void* handle = nullptr;         // dlopen's handle, when ok
  char error[256] = {};           // dlerror() text or the missing symbol, when !ok
};

// dlopens the CUPTI library and fills `api`. Runs on: the thread running InitializeInjection.
CuptiBinding BindCupti(CuptiApi* api) noexcept;

// A readable name for a CUptiResult, via api.cuptiGetResultString when bound.
const char* CuptiResultName(const CuptiApi* api, CUptiResult result) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_CUPTI_API_H_
