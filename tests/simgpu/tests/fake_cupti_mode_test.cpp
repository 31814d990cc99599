// The fake's fault modes, chosen by SIMGPU_CUPTI_MODE before the library first runs; this file is
// built twice: SIMGPU_TEST_NODRIVER (SIMGPU_CUPTI_MODE=nodriver) and SIMGPU_TEST_CONFLICT
// (SIMGPU_CUPTI_MODE=conflict:nsys).
#include <catch2/catch.hpp>
#include <string>

#include "fake_cupti_client.h"

namespace {

using gpuattr::simgpu::testing::FakeCupti;

using gpuattr::simgpu::testing::Fake;

void Callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
#ifdef SIMGPU_TEST_NODRIVER
void Requested(uint8_t**, size_t*, size_t*) {}
void Completed(CUcontext, uint32_t, uint8_t*, size_t, size_t) {}
uint64_t Clock() { return 42; }
#endif

}  // namespace

#ifdef SIMGPU_TEST_NODRIVER
TEST_CASE("nodriver mode returns the real GPU-less library's 999 pattern", "[simgpu][modes]") {
  FakeCupti& f = Fake();
  CUpti_SubscriberHandle handle = nullptr;
  CHECK(f.cuptiSubscribe(&handle, Callback, nullptr) == CUPTI_ERROR_UNKNOWN);
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  CHECK(f.cuptiSubscribe_v2(&handle, Callback, nullptr, &params) == CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiActivityFlushAll(0) == CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiActivityFlushPeriod(10) == CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiActivityRegisterTimestampCallback(Clock) == CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_ERROR_UNKNOWN);
  size_t value = 0;
  size_t size = sizeof(value);
  CHECK(f.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value) ==
        CUPTI_ERROR_UNKNOWN);
  CHECK(f.cuptiGetLastError() == CUPTI_ERROR_UNKNOWN);

  uint32_t version = 0;
  CHECK(f.cuptiGetVersion(&version) == CUPTI_SUCCESS);
  const char* text = nullptr;
  CHECK(f.cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &text) == CUPTI_SUCCESS);
  uint64_t now = 0;
  CHECK(f.cuptiGetTimestamp(&now) == CUPTI_SUCCESS);
  CHECK(now > 0);
  CHECK(f.cuptiActivityRegisterCallbacks(Requested, Completed) == CUPTI_SUCCESS);
  size_t dropped = 1;
  CHECK(f.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS);
  CHECK(dropped == 0);
  CHECK(f.cuptiFinalize() == CUPTI_SUCCESS);
}
#endif

#ifdef SIMGPU_TEST_CONFLICT
TEST_CASE("conflict mode: the slot is held by the named tool", "[simgpu][modes]") {
  FakeCupti& f = Fake();
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpuattr";
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle handle = nullptr;
  CHECK(f.cuptiSubscribe_v2(&handle, Callback, nullptr, &params) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(old_name) == "nsys");
  CHECK(handle == nullptr);
  // The activity API has no subscriber parameter in 13.0: it still works.
  CHECK(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  CHECK(f.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
}
#endif
