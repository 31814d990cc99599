// The fake libcupti.so.13's per-subscriber ("V2") activity API of CUDA 13.3+ (cupti_v2_abi.h),
// over fake_core.h. In the multi-subscriber mode each call works on its subscriber's own
// ActivityStore; in the other modes every call answers NOT_SUPPORTED (the library has the names,
// the driver not the feature), so a client has to probe, as it must on a real machine.
//
// These names are not in the CUDA 13.0 headers: they are declared here, under default visibility,
// with the signatures of CUPTI 13.4 (pointer arguments as void* where the struct is not used).
#pragma GCC visibility push(default)
#include <cupti.h>

#include "cupti/cupti_v2_abi.h"

extern "C" {
CUptiResult CUPTIAPI cuptiActivityEnable_v2(CUpti_SubscriberHandle subscriber,
                                            CUpti_ActivityKind kind, void* config);
CUptiResult CUPTIAPI cuptiActivityDisable_v2(CUpti_SubscriberHandle subscriber,
                                             CUpti_ActivityKind kind, void* config);
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle subscriber,
                                                       gpuattr::cupti_v2::RequestFunc requested,
                                                       gpuattr::cupti_v2::CompleteFunc completed);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord_v2(CUpti_SubscriberHandle subscriber,
                                                   uint8_t* buffer, size_t valid_size,
                                                   CUpti_Activity** record);
CUptiResult CUPTIAPI cuptiGetTimestamp_v2(CUpti_SubscriberHandle subscriber, uint64_t* timestamp);
CUptiResult CUPTIAPI cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                  CUpti_ActivityAttribute attr, size_t* size,
                                                  void* value);
CUptiResult CUPTIAPI cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                  CUpti_ActivityAttribute attr, size_t* size,
                                                  void* value);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords_v2(CUpti_SubscriberHandle subscriber,
                                                          CUcontext context, uint32_t stream,
                                                          size_t* dropped);
}
#pragma GCC visibility pop

#include <cstring>

#include "fake_core.h"
#include "record_layout.h"

namespace {

using gpuattr::simgpu::ActivityFamily;
using gpuattr::simgpu::ActivityStore;
using gpuattr::simgpu::Fake;
using gpuattr::simgpu::Result;
namespace v2 = gpuattr::cupti_v2;

// The store a V2 call on `subscriber` works on, or the error the call answers. `claims`: the call
// changes activity state, so the process's activity API becomes the V2 one.
CUptiResult StoreFor(CUpti_SubscriberHandle subscriber, bool claims, ActivityStore** store) {
  Fake& fake = Fake::Get();
  if (fake.no_driver()) return CUPTI_ERROR_UNKNOWN;
  if (!fake.multi_mode()) return CUPTI_ERROR_NOT_SUPPORTED;
  *store = fake.StoreOf(subscriber);
  if (*store == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  return claims ? fake.ClaimFamily(ActivityFamily::kV2) : CUPTI_SUCCESS;
}

CUptiResult SetEnabled(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind, bool enable) {
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, true, &store); result != CUPTI_SUCCESS) {
    return result;
  }
  if (gpuattr::simgpu::RecordSize(kind) == 0) return CUPTI_ERROR_INVALID_KIND;
  store->SetEnabled(kind, enable);
  return CUPTI_SUCCESS;
}

}  // namespace

CUptiResult CUPTIAPI cuptiActivityEnable_v2(CUpti_SubscriberHandle subscriber,
                                            CUpti_ActivityKind kind, void* /*config*/) {
  return Result(SetEnabled(subscriber, kind, true));
}

CUptiResult CUPTIAPI cuptiActivityDisable_v2(CUpti_SubscriberHandle subscriber,
                                             CUpti_ActivityKind kind, void* /*config*/) {
  return Result(SetEnabled(subscriber, kind, false));
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle subscriber,
                                                       v2::RequestFunc requested,
                                                       v2::CompleteFunc completed) {
  if (requested == nullptr || completed == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, true, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  store->RegisterCallbacksV2(requested, completed);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord_v2(CUpti_SubscriberHandle subscriber,
                                                   uint8_t* buffer, size_t valid_size,
                                                   CUpti_Activity** record) {
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, false, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  return Result(gpuattr::simgpu::NextRecord(buffer, valid_size, record));
}

CUptiResult CUPTIAPI cuptiGetTimestamp_v2(CUpti_SubscriberHandle subscriber, uint64_t* timestamp) {
  if (timestamp == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, false, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  *timestamp = store->CuptiNow();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                  CUpti_ActivityAttribute attr, size_t* size,
                                                  void* value) {
  if (size == nullptr || value == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  const bool per_subscriber = attr == v2::kAttrTimestampCallback || attr == v2::kAttrThreadIdType;
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, per_subscriber, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  if (attr == v2::kAttrTimestampCallback) {
    if (*size < sizeof(CUpti_TimestampCallbackFunc)) {
      return Result(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
    }
    CUpti_TimestampCallbackFunc clock = nullptr;
    std::memcpy(&clock, value, sizeof(clock));
    store->SetClock(clock != nullptr ? clock : &gpuattr::simgpu::RealtimeNs);
    return CUPTI_SUCCESS;
  }
  if (attr == v2::kAttrThreadIdType) {
    uint32_t type = 0;
    if (*size < sizeof(type)) return Result(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
    std::memcpy(&type, value, sizeof(type));
    if (type >= CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE) return Result(CUPTI_ERROR_INVALID_PARAMETER);
    store->SetThreadIdType(type);
    return CUPTI_SUCCESS;
  }
  if (attr == v2::kAttrMultipleSubscriberState) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  return Result(Fake::Get().SetAttribute(attr, size, value));
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                  CUpti_ActivityAttribute attr, size_t* size,
                                                  void* value) {
  if (size == nullptr || value == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, false, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  auto answer = [&](const auto& held) {
    if (*size < sizeof(held)) return Result(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
    std::memcpy(value, &held, sizeof(held));
    *size = sizeof(held);
    return CUPTI_SUCCESS;
  };
  if (attr == v2::kAttrTimestampCallback) {
    CUpti_TimestampCallbackFunc clock = store->clock();
    return answer(clock == &gpuattr::simgpu::RealtimeNs ? nullptr : clock);
  }
  if (attr == v2::kAttrThreadIdType) return answer(store->thread_id_type());
  if (attr == v2::kAttrMultipleSubscriberState) {
    return answer(Fake::Get().MultipleSubscriberState());
  }
  return Result(Fake::Get().GetAttribute(attr, size, value));
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords_v2(CUpti_SubscriberHandle subscriber,
                                                          CUcontext /*context*/,
                                                          uint32_t /*stream*/, size_t* dropped) {
  if (dropped == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  ActivityStore* store = nullptr;
  if (CUptiResult result = StoreFor(subscriber, false, &store); result != CUPTI_SUCCESS) {
    return Result(result);
  }
  *dropped = store->TakeDropped();
  return CUPTI_SUCCESS;
}
