// The per-subscriber ("V2") activity API of CUPTI 13.3 and later, declared here because the CUDA
// 13.0 headers the project builds against predate it.
//
// Layouts, signatures and attribute values are those of CUPTI 13.4's cupti_callbacks.h and
// cupti_activity.h (the nvidia-cuda-cupti 13.4.92 wheel): CUpti_SubscriberParams grew
// allowMultipleSubscribers after oldSubscriberSize (structSize 40), the buffer callbacks take an
// info struct, and the timestamp callback and thread-id type became per-subscriber attributes.
// The info structs are read only through their size and thread id.
//
// Both the shim (cupti_v2.h) and the simulated GPU's fake CUPTI include this header, so the two
// agree on the ABI by construction; a real 13.3+ library is the check that both agree with NVIDIA
// (scripts/gpu-check.sh).
#ifndef GPUATTR_INJECT_CUPTI_CUPTI_V2_ABI_H_
#define GPUATTR_INJECT_CUPTI_CUPTI_V2_ABI_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace gpuattr::cupti_v2 {

// CUpti_SubscriberParams of 13.2+ (members in the house style; the layout is what counts).
struct SubscriberParams {
  size_t struct_size;
  const char* subscriber_name;
  char* old_subscriber_name;
  size_t old_subscriber_size;
  uint8_t allow_multiple_subscribers;  // 1 asks for several (the first subscriber decides)
  uint8_t padding[7];
};
inline constexpr size_t kSubscriberParamsSize = sizeof(SubscriberParams);
static_assert(kSubscriberParamsSize == 40, "CUpti_SubscriberParams_STRUCT_SIZE of CUPTI 13.2+");

struct BufferRequestInfo {
  size_t struct_size;
};
struct BufferCompleteInfo {
  size_t struct_size;
  uint64_t thread_id;
  void** record_layouts;  // user-defined records only
  size_t record_layout_count;
};

// CUpti_ActivityAttribute values added after 13.0.
inline constexpr uint32_t kAttrMultipleSubscriberState = 12;  // uint8_t: 0 one, 1 several, 2 unset
inline constexpr uint32_t kAttrThreadIdType = 21;             // CUpti_ActivityThreadIdType
inline constexpr uint32_t kAttrTimestampCallback = 22;        // CUpti_TimestampCallbackFunc

using RequestFunc = void(CUPTIAPI*)(uint8_t** buffer, size_t* size, size_t* max_records,
                                    BufferRequestInfo* info);
using CompleteFunc = void(CUPTIAPI*)(uint8_t* buffer, size_t size, size_t valid_size,
                                     BufferCompleteInfo* info);

using SubscribeFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*,
                                           SubscriberParams*);
using EnableFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, CUpti_ActivityKind, void* config);
using RegisterCallbacksFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, RequestFunc,
                                                   CompleteFunc);
using GetNextRecordFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, uint8_t*, size_t,
                                               CUpti_Activity**);
using GetTimestampFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, uint64_t*);
using AttributeFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, CUpti_ActivityAttribute, size_t*,
                                           void*);
using GetNumDroppedRecordsFn = CUptiResult(CUPTIAPI*)(CUpti_SubscriberHandle, CUcontext, uint32_t,
                                                      size_t*);

}  // namespace gpuattr::cupti_v2

#endif  // GPUATTR_INJECT_CUPTI_CUPTI_V2_ABI_H_
