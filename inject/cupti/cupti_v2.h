// CuptiV2Api: the per-subscriber activity functions of CUPTI 13.3+ (cupti_v2_abi.h), bound with
// dlsym from the CUPTI the shim loaded (cupti_api.h). Their presence says only that the library
// is new enough; whether the driver allows several subscribers is found out by trying
// (V2Bridge::Open, v2_bridge.h), never from a version number.
#ifndef GPUATTR_INJECT_CUPTI_CUPTI_V2_H_
#define GPUATTR_INJECT_CUPTI_CUPTI_V2_H_

#include "cupti/cupti_v2_abi.h"

namespace gpuattr::inject {

// Each member is CUPTI's function of that meaning: subscribe = cuptiSubscribe_v2,
// enable = cuptiActivityEnable_v2, ..., get_num_dropped_records =
// cuptiActivityGetNumDroppedRecords_v2.
struct CuptiV2Api {
  cupti_v2::SubscribeFn subscribe = nullptr;
  cupti_v2::EnableFn enable = nullptr;
  cupti_v2::EnableFn disable = nullptr;
  cupti_v2::RegisterCallbacksFn register_callbacks = nullptr;
  cupti_v2::GetNextRecordFn get_next_record = nullptr;
  cupti_v2::GetTimestampFn get_timestamp = nullptr;
  cupti_v2::AttributeFn set_attribute = nullptr;
  cupti_v2::GetNumDroppedRecordsFn get_num_dropped_records = nullptr;
};

// Fills `api` from the dlopen handle `library`; false when any function is missing (a CUPTI older
// than 13.3: cuptiActivityGetNextRecord_v2 and cuptiGetTimestamp_v2 arrived then).
bool BindCuptiV2(void* library, CuptiV2Api* api) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_CUPTI_V2_H_
