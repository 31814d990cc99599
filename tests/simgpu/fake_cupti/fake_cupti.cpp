// The fake libcupti.so.13's CUPTI entry points of CUDA 13.0 (the V1 API), over fake_core.h.
//
// The first declarations of the exported functions come from the CUDA headers included here under
// default visibility; everything else in the library is hidden, and the version script puts the
// exports in the libcupti.so.13 node.
#pragma GCC visibility push(default)
#include <cupti.h>
#pragma GCC visibility pop

#include "fake_core.h"
#include "fake_names.h"
#include "record_layout.h"

using gpuattr::simgpu::ActivityFamily;
using gpuattr::simgpu::Fake;
using gpuattr::simgpu::Result;

namespace {

constexpr uint32_t kVersion13_0 = 130001;  // CUPTI_API_VERSION of CUDA 13.0 Update 1
constexpr uint32_t kVersion13_4 = 130401;  // of CUDA 13.4 Update 1: the multi-subscriber mode

// Kinds whose enabling the 13.0 library refuses as legacy profiler features (cupti-notes §4.10).
bool LegacyProfilerKind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR:
    case CUPTI_ACTIVITY_KIND_GLOBAL_ACCESS:
    case CUPTI_ACTIVITY_KIND_BRANCH:
    case CUPTI_ACTIVITY_KIND_INSTRUCTION_EXECUTION:
    case CUPTI_ACTIVITY_KIND_SHARED_ACCESS:
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING:
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO:
    case CUPTI_ACTIVITY_KIND_INSTRUCTION_CORRELATION:
      return true;
    default:
      return false;
  }
}

}  // namespace

// ================================ CUPTI entry points ==========================================

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *version = Fake::Get().multi_mode() ? kVersion13_4 : kVersion13_0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  const char* name = gpuattr::simgpu::ResultName(static_cast<uint32_t>(result));
  if (name == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *str = name;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char** str) {
  return cuptiGetResultString(result, str);
}

CUptiResult CUPTIAPI cuptiGetLastError(void) { return gpuattr::simgpu::TakeLastError(); }

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char** name) {
  if (name == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  const char* found = gpuattr::simgpu::CallbackName(domain, cbid);
  if (found == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *name = found;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSupportedDomains(size_t* domainCount, CUpti_DomainTable* domainTable) {
  static CUpti_CallbackDomain kDomains[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_CB_DOMAIN_RESOURCE,   CUPTI_CB_DOMAIN_SYNCHRONIZE,
                                            CUPTI_CB_DOMAIN_NVTX,       CUPTI_CB_DOMAIN_STATE};
  if (domainCount == nullptr || domainTable == nullptr) {
    return Result(CUPTI_ERROR_INVALID_PARAMETER);
  }
  *domainCount = sizeof(kDomains) / sizeof(kDomains[0]);
  *domainTable = kDomains;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  return Result(Fake::Get().Subscribe(subscriber, callback, userdata, nullptr));
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                       CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* pParams) {
  return Result(Fake::Get().Subscribe(subscriber, callback, userdata, pParams));
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  return Result(Fake::Get().Unsubscribe(subscriber));
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return Result(Fake::Get().EnableCallback(enable, subscriber, domain, cbid));
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  return Result(Fake::Get().EnableDomain(enable, subscriber, domain));
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  return Result(Fake::Get().EnableAllDomains(enable, subscriber));
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return Result(Fake::Get().GetCallbackState(enable, subscriber, domain, cbid));
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  return Result(Fake::Get().SetThreadIdType(type));
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (type == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *type = static_cast<CUpti_ActivityThreadIdType>(Fake::Get().store().thread_id_type());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (funcTimestamp == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  if (CUptiResult claimed = Fake::Get().ClaimFamily(ActivityFamily::kV1);
      claimed != CUPTI_SUCCESS) {
    return Result(claimed);
  }
  gpuattr::simgpu::SetTimestampCallback(funcTimestamp);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *timestamp = gpuattr::simgpu::Now();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* valueSize,
                                               void* value) {
  return Result(Fake::Get().SetAttribute(attr, valueSize, value));
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t* valueSize,
                                               void* value) {
  return Result(Fake::Get().GetAttribute(attr, valueSize, value));
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  if (funcBufferRequested == nullptr || funcBufferCompleted == nullptr) {
    return Result(CUPTI_ERROR_INVALID_PARAMETER);
  }
  if (CUptiResult claimed = Fake::Get().ClaimFamily(ActivityFamily::kV1);
      claimed != CUPTI_SUCCESS) {
    return Result(claimed);
  }
  Fake::Get().store().RegisterCallbacks(funcBufferRequested, funcBufferCompleted);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (LegacyProfilerKind(kind)) return Result(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
  if (gpuattr::simgpu::RecordSize(kind) == 0) return Result(CUPTI_ERROR_INVALID_KIND);
  if (CUptiResult claimed = Fake::Get().ClaimFamily(ActivityFamily::kV1);
      claimed != CUPTI_SUCCESS) {
    return Result(claimed);
  }
  Fake::Get().store().SetEnabled(kind, true);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (gpuattr::simgpu::RecordSize(kind) == 0) return Result(CUPTI_ERROR_INVALID_KIND);
  if (CUptiResult claimed = Fake::Get().ClaimFamily(ActivityFamily::kV1);
      claimed != CUPTI_SUCCESS) {
    return Result(claimed);
  }
  Fake::Get().store().SetEnabled(kind, false);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  // Every subscriber's buffers, with the same flag (CUPTI 13.4, cuptiActivityFlushAll).
  const bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  Fake::Get().ForEachStore(
      [forced](gpuattr::simgpu::ActivityStore& store) { store.FlushAll(forced); });
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  Fake::Get().store().SetFlushPeriodMs(time);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity** record) {
  return Result(gpuattr::simgpu::NextRecord(buffer, validBufferSizeBytes, record));
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *dropped = Fake::Get().store().TakeDropped();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* nodeId) {
  if (node == nullptr || nodeId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *nodeId = node->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* pId) {
  if (graph == nullptr || pId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *pId = graph->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t* pId) {
  if (graphExec == nullptr || pId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *pId = graphExec->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t* contextId) {
  if (contextId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  if (context == nullptr) context = Fake::Get().AnyContext();
  if (context == nullptr) return Result(CUPTI_ERROR_INVALID_CONTEXT);
  *contextId = context->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* deviceId) {
  if (deviceId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  if (context == nullptr) context = Fake::Get().AnyContext();
  if (context == nullptr) return Result(CUPTI_ERROR_INVALID_CONTEXT);
  *deviceId = context->device;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream stream, uint8_t, uint32_t* streamId) {
  if (streamId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  // The simulated driver hands out no stream handles (functionParams are zero): NULL is the
  // default stream, id 0.
  if (stream != nullptr) return Result(CUPTI_ERROR_INVALID_STREAM);
  *streamId = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  Fake::Get().Finalize();
  return CUPTI_SUCCESS;
}
