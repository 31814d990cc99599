// The fake's multi-subscriber mode (SIMGPU_CUPTI_MODE=multi_subscriber, fake_core.h): CUDA
// 13.3+'s rules, which the shim's V2 bridge (inject/cupti/v2_bridge.h) relies on.
#include <time.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "cupti/cupti_v2.h"
#include "fake_cupti_client.h"

namespace {

using gpuattr::simgpu::testing::Fake;
using gpuattr::simgpu::testing::FakeCupti;
namespace v2 = gpuattr::cupti_v2;

// The fake's V2 functions, bound as the shim binds them (cupti_v2.h).
gpuattr::inject::CuptiV2Api BindV2(void* handle) {
  gpuattr::inject::CuptiV2Api api;
  REQUIRE(gpuattr::inject::BindCuptiV2(handle, &api));
  return api;
}

// The kinds each subscriber's completion callback received, in order.
std::vector<uint32_t> g_first_kinds;
std::vector<uint32_t> g_second_kinds;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records,
                      v2::BufferRequestInfo* info) {
  REQUIRE(info != nullptr);
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void Collect(std::vector<uint32_t>* kinds, uint8_t* buffer, size_t valid_size) {
  CUpti_Activity* record = nullptr;
  while (Fake().cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    kinds->push_back(record->kind);
  }
  std::free(buffer);
}
void CUPTIAPI CompleteFirst(uint8_t* buffer, size_t, size_t valid_size, v2::BufferCompleteInfo*) {
  Collect(&g_first_kinds, buffer, valid_size);
}
void CUPTIAPI CompleteSecond(uint8_t* buffer, size_t, size_t valid_size, v2::BufferCompleteInfo*) {
  Collect(&g_second_kinds, buffer, valid_size);
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A finished kernel and a finished memset, each inside its API call.
void LaunchKernelAndMemset() {
  FakeCupti& f = Fake();
  const uint64_t start = MonotonicNs() - 1000000;
  SimgpuActivity a{};
  a.type = SIMGPU_ACTIVITY_KERNEL;
  a.correlation_id =
      f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "_Z1kv", 0, 0);
  a.start_ns = start;
  a.end_ns = start + 1000;
  a.name = "_Z1kv";
  REQUIRE(f.simgpu_activity_submit(&a) == 0);
  f.simgpu_api_exit(0);
  SimgpuActivity m{};
  m.type = SIMGPU_ACTIVITY_MEMSET;
  m.correlation_id = f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                                        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "", 0, 0);
  m.start_ns = start + 2000;
  m.end_ns = start + 3000;
  m.bytes = 64;
  REQUIRE(f.simgpu_activity_submit(&m) == 0);
  f.simgpu_api_exit(0);
}

}  // namespace

TEST_CASE("multi-subscriber mode: the first subscriber lets others in, each with its own records",
          "[simgpu][modes]") {
  FakeCupti& f = Fake();
  const gpuattr::inject::CuptiV2Api api = BindV2(f.handle);
  uint32_t version = 0;
  REQUIRE(f.cuptiGetVersion(&version) == CUPTI_SUCCESS);
  CHECK(version >= 130300);

  v2::SubscriberParams first_params{};
  first_params.struct_size = v2::kSubscriberParamsSize;
  first_params.subscriber_name = "first";
  first_params.allow_multiple_subscribers = 1;
  CUpti_SubscriberHandle first = nullptr;
  REQUIRE(api.subscribe(&first, nullptr, nullptr, &first_params) == CUPTI_SUCCESS);
  // A later subscriber needs no flag of its own: the first one decided, and CUPTI names it.
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams second_params{};
  second_params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  second_params.subscriberName = "second";
  second_params.oldSubscriberName = old_name;
  second_params.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle second = nullptr;
  REQUIRE(f.cuptiSubscribe_v2(&second, nullptr, nullptr, &second_params) == CUPTI_SUCCESS);
  CHECK(std::string(old_name) == "first");

  REQUIRE(api.register_callbacks(first, Request, CompleteFirst) == CUPTI_SUCCESS);
  REQUIRE(api.register_callbacks(second, Request, CompleteSecond) == CUPTI_SUCCESS);
  REQUIRE(api.enable(first, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr) == CUPTI_SUCCESS);
  REQUIRE(api.enable(second, CUPTI_ACTIVITY_KIND_MEMSET, nullptr) == CUPTI_SUCCESS);
  // The V1 activity API in a process that uses the V2 one.
  CHECK(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

  LaunchKernelAndMemset();
  // One flush reaches both subscribers' buffers.
  REQUIRE(f.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(g_first_kinds == std::vector<uint32_t>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  CHECK(g_second_kinds == std::vector<uint32_t>{CUPTI_ACTIVITY_KIND_MEMSET});

  // cuptiFinalize returns at once while two are subscribed: the first still traces.
  REQUIRE(f.cuptiFinalize() == CUPTI_SUCCESS);
  LaunchKernelAndMemset();
  REQUIRE(f.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(g_first_kinds.size() == 2);
  CHECK(g_second_kinds.size() == 2);

  // Alone, the first is finalized with everything else.
  REQUIRE(f.cuptiUnsubscribe(second) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiFinalize() == CUPTI_SUCCESS);
  CHECK(api.enable(first, CUPTI_ACTIVITY_KIND_MEMSET, nullptr) == CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_CASE("multi-subscriber mode: a first subscriber that did not ask keeps the slot alone",
          "[simgpu][modes]") {
  FakeCupti& f = Fake();
  CUpti_SubscriberHandle first = nullptr;
  REQUIRE(f.cuptiSubscribe(&first, nullptr, nullptr) == CUPTI_SUCCESS);
  v2::SubscriberParams params{};
  params.struct_size = v2::kSubscriberParamsSize;
  params.allow_multiple_subscribers = 1;
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  params.old_subscriber_name = old_name;
  params.old_subscriber_size = sizeof(old_name);
  CUpti_SubscriberHandle second = nullptr;
  CHECK(BindV2(f.handle).subscribe(&second, nullptr, nullptr, &params) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(std::string(old_name) == "CUPTI");
  REQUIRE(f.cuptiUnsubscribe(first) == CUPTI_SUCCESS);
}
