// CUPTI setup and the callback switchboard, against a test double of the CuptiApi table.
#include "cupti/subscriber.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ring_records.h"
#include "runtime/shim_state.h"
#include "runtime/thread_state.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

struct FakeCupti {
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  CUpti_ActivityKind fail_enable_of = CUPTI_ACTIVITY_KIND_INVALID;
  std::vector<std::string> calls;
  std::set<std::pair<int, uint32_t>> callbacks;  // (domain, cbid)
  std::set<int> kinds;
  bool unsubscribed = false;
};
FakeCupti* g_fake = nullptr;

CUptiResult CUPTIAPI GetVersion(uint32_t* version) {
  *version = 130001;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI GetResultString(CUptiResult, const char** name) {
  *name = "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*,
                               CUpti_SubscriberParams* params) {
  g_fake->calls.push_back("subscribe:" + std::string(params->subscriberName));
  if (g_fake->subscribe_result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    strncpy(params->oldSubscriberName, "Nsight Systems", params->oldSubscriberSize);
  } else if (g_fake->subscribe_result == CUPTI_SUCCESS) {
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(0x1);
  }
  return g_fake->subscribe_result;
}
CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle) {
  g_fake->unsubscribed = true;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI EnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (enable != 0) g_fake->callbacks.emplace(domain, cbid);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI SetThreadIdType(CUpti_ActivityThreadIdType type) {
  g_fake->calls.push_back("thread_id_type:" + std::to_string(type));
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI RegisterTimestamp(CUpti_TimestampCallbackFunc) {
  g_fake->calls.push_back("timestamp");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI RegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                       CUpti_BuffersCallbackCompleteFunc) {
  g_fake->calls.push_back("buffers");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Enable(CUpti_ActivityKind kind) {
  g_fake->calls.push_back("enable:" + std::to_string(kind));
  if (kind == g_fake->fail_enable_of) return CUPTI_ERROR_NOT_COMPATIBLE;
  g_fake->kinds.insert(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI Disable(CUpti_ActivityKind kind) {
  g_fake->kinds.erase(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI FlushAll(uint32_t) { return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI GetNextRecord(uint8_t*, size_t, CUpti_Activity**) {
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
}
CUptiResult CUPTIAPI GetDropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI GetGraphNodeId(CUgraphNode node, uint64_t* id) {
  *id = reinterpret_cast<uintptr_t>(node);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI GetGraphId(CUgraph graph, uint32_t* id) {
  *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph));
  return CUPTI_SUCCESS;
}

CuptiApi FakeApi() {
  CuptiApi api;
  api.cuptiGetVersion = &GetVersion;
  api.cuptiGetResultString = &GetResultString;
  api.cuptiSubscribe_v2 = &Subscribe;
  api.cuptiUnsubscribe = &Unsubscribe;
  api.cuptiEnableCallback = &EnableCallback;
  api.cuptiSetThreadIdType = &SetThreadIdType;
  api.cuptiActivityRegisterTimestampCallback = &RegisterTimestamp;
  api.cuptiActivityRegisterCallbacks = &RegisterCallbacks;
  api.cuptiActivityEnable = &Enable;
  api.cuptiActivityDisable = &Disable;
  api.cuptiActivityFlushAll = &FlushAll;
  api.cuptiActivityGetNextRecord = &GetNextRecord;
  api.cuptiActivityGetNumDroppedRecords = &GetDropped;
  api.cuptiGetGraphNodeId = &GetGraphNodeId;
  api.cuptiGetGraphId = &GetGraphId;
  return api;
}

using testing::DrainMyRing;
using Record = testing::RingRecord;

// One API callback as CUPTI delivers it, with a per-invocation correlationData slot.
struct Call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  uint32_t correlation;
  uint64_t slot = 0;

  void Site(CUpti_ApiCallbackSite site) {
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.functionName = "fake";
    data.correlationId = correlation;
    data.correlationData = &slot;
    CuptiCallback(nullptr, domain, cbid, &data);
  }
  void Enter() { Site(CUPTI_API_ENTER); }
  void Exit() { Site(CUPTI_API_EXIT); }
};

void Resource(CUpti_CallbackId cbid, uintptr_t node, uintptr_t original, uintptr_t graph) {
  CUpti_GraphData graph_data{};
  graph_data.graph = reinterpret_cast<CUgraph>(graph);
  graph_data.node = reinterpret_cast<CUgraphNode>(node);
  graph_data.originalNode = reinterpret_cast<CUgraphNode>(original);
  CUpti_ResourceData data{};
  data.resourceDescriptor = &graph_data;
  CuptiCallback(nullptr, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

std::string StringOf(uint32_t id) { return std::string(Shim().strings.Get(id)); }

TEST_CASE("a held subscriber slot is a subscriber_conflict refusal naming the holder", "[cupti]") {
  FakeCupti fake;
  fake.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  g_fake = &fake;
  Shim().cupti_active.store(false);
  DrainMyRing();
  CHECK(SetupCuptiWith(FakeApi(), "/fake/libcupti.so.13") == 39);
  CHECK_FALSE(Shim().cupti_active.load());
  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 2);
  REQUIRE(records[0].type == wire::RecordType::kRefusal);
  const auto refusal = records[0].As<wire::Refusal>();
  CHECK(refusal.code == static_cast<uint32_t>(wire::RefusalCode::kCuptiSubscriberConflict));
  CHECK(refusal.cupti_result == 39);
  CHECK_THAT(StringOf(refusal.cause_string),
             Catch::StartsWith("CUPTI is already in use by Nsight Systems: run without that tool"));
  REQUIRE(records[1].type == wire::RecordType::kCuptiState);
  CHECK(records[1].As<wire::CuptiState>().result == 39);
  CHECK(StringOf(records[1].As<wire::CuptiState>().library_string) == "/fake/libcupti.so.13");
}

TEST_CASE("a failing setup step is a cupti_unavailable refusal and frees the slot", "[cupti]") {
  FakeCupti fake;
  fake.fail_enable_of = CUPTI_ACTIVITY_KIND_MEMCPY2;
  g_fake = &fake;
  Shim().cupti_active.store(false);
  DrainMyRing();
  CHECK(SetupCuptiWith(FakeApi(), "libcupti.so.13") == CUPTI_ERROR_NOT_COMPATIBLE);
  CHECK_FALSE(Shim().cupti_active.load());
  CHECK(fake.unsubscribed);
  CHECK(fake.kinds.empty());  // what had been enabled was disabled again
  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 2);
  const auto refusal = records[0].As<wire::Refusal>();
  CHECK(refusal.code == static_cast<uint32_t>(wire::RefusalCode::kCuptiUnavailable));
  CHECK(refusal.cupti_result == CUPTI_ERROR_NOT_COMPATIBLE);
  CHECK(StringOf(refusal.cause_string).rfind("cuptiActivityEnable failed", 0) == 0);
}

TEST_CASE("setup subscribes, sets the clock before enabling, and enables per CBID", "[cupti]") {
  FakeCupti fake;
  g_fake = &fake;
  DrainMyRing();
  REQUIRE(SetupCuptiWith(FakeApi(), "libcupti.so.13") == 0);
  CHECK(Shim().cupti_active.load());
  REQUIRE(fake.calls.size() >= 5);
  CHECK(fake.calls[0] == "subscribe:gpuattr");
  CHECK(fake.calls[1] == "thread_id_type:" + std::to_string(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  CHECK(fake.calls[2] == "timestamp");
  CHECK(fake.calls[3] == "buffers");
  CHECK(fake.calls[4].rfind("enable:", 0) == 0);
  for (int kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_DEVICE}) {
    CHECK(fake.kinds.count(kind) == 1);
  }
  const auto enabled = [&](CUpti_CallbackDomain domain, uint32_t cbid) {
    return fake.callbacks.count({domain, cbid}) == 1;
  };
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API,
                CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API,
                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000));
  CHECK(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020));
  CHECK(
      enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000));
  CHECK(enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  CHECK(enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  CHECK(enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2));
  CHECK(enabled(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED));
  CHECK(enabled(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
  CHECK(enabled(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  CHECK(enabled(CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR));
  CHECK_FALSE(enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  CHECK_FALSE(enabled(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING));

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 1);
  CHECK(records[0].type == wire::RecordType::kCuptiState);
  CHECK(records[0].As<wire::CuptiState>().result == 0);
  CHECK(records[0].As<wire::CuptiState>().cupti_version == 130001);
}

TEST_CASE("a nested driver launch yields one ApiEnter/ApiExit pair, tagged with the path",
          "[cupti]") {
  FakeCupti fake;
  g_fake = &fake;
  REQUIRE(SetupCuptiWith(FakeApi(), "libcupti.so.13") == 0);
  DrainMyRing();
  CurrentThread()->current_node = 17;  // as if an NVTX range were open

  Call runtime{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 7};
  Call driver{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 7};
  runtime.Enter();
  driver.Enter();
  driver.Exit();
  runtime.Exit();

  Call direct{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, 8};
  direct.Enter();
  direct.Exit();
  Call untraced{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 9};
  untraced.Enter();
  untraced.Exit();
  Call late{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 10};
  late.Exit();  // its ENTER happened before we subscribed

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 4);
  REQUIRE(records[0].type == wire::RecordType::kApiEnter);
  const auto enter = records[0].As<wire::ApiEnter>();
  CHECK(records[0].flags == 0);
  CHECK(enter.correlation_id == 7);
  CHECK(enter.cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
  CHECK(enter.domain == static_cast<uint8_t>(wire::ApiDomain::kRuntime));
  CHECK(enter.kind == static_cast<uint8_t>(wire::ApiKind::kKernel));
  CHECK(enter.node == 17);
  CHECK(enter.tid == CurrentThreadIfAny()->tid);
  REQUIRE(records[1].type == wire::RecordType::kApiExit);
  CHECK(records[1].As<wire::ApiExit>().correlation_id == 7);
  CHECK(records[1].As<wire::ApiExit>().timestamp_ns >= enter.timestamp_ns);
  const auto graph = records[2].As<wire::ApiEnter>();
  CHECK(graph.domain == static_cast<uint8_t>(wire::ApiDomain::kDriver));
  CHECK(graph.kind == static_cast<uint8_t>(wire::ApiKind::kGraph));
  CHECK(graph.correlation_id == 8);
  CHECK(records[3].type == wire::RecordType::kApiExit);
  CHECK(CurrentThreadIfAny()->runtime_depth == 0);
  CHECK(CurrentThreadIfAny()->api_depth == 0);
}

TEST_CASE("graph nodes: created during capture is recorded, inside instantiate only as clone",
          "[cupti]") {
  FakeCupti fake;
  g_fake = &fake;
  REQUIRE(SetupCuptiWith(FakeApi(), "libcupti.so.13") == 0);
  DrainMyRing();
  CurrentThread()->current_node = 3;

  Call launch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 21};
  launch.Enter();
  Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 0x500, 0, 0x9);
  launch.Exit();
  Call instantiate{CUPTI_CB_DOMAIN_RUNTIME_API,
                   CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040, 22};
  instantiate.Enter();
  Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 0x600, 0, 0xA);
  Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 0x600, 0x500, 0xA);
  instantiate.Exit();

  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 4);  // launch enter, created, launch exit, cloned
  REQUIRE(records[1].type == wire::RecordType::kGraphNodeCreated);
  const auto created = records[1].As<wire::GraphNodeCreated>();
  CHECK(created.graph_node_id == 0x500);
  CHECK(created.graph_id == 0x9);
  CHECK(created.correlation_id == 21);
  CHECK(created.node == 3);
  REQUIRE(records[3].type == wire::RecordType::kGraphNodeCloned);
  const auto cloned = records[3].As<wire::GraphNodeCloned>();
  CHECK(cloned.graph_node_id == 0x600);
  CHECK(cloned.original_graph_node_id == 0x500);
  CHECK(cloned.graph_id == 0xA);
}

TEST_CASE("a CUPTI fatal error is a refusal and silences later callbacks", "[cupti]") {
  FakeCupti fake;
  g_fake = &fake;
  REQUIRE(SetupCuptiWith(FakeApi(), "libcupti.so.13") == 0);
  DrainMyRing();
  CUpti_StateData state{};
  state.notification.result = CUPTI_ERROR_UNKNOWN;
  state.notification.message = "device lost";
  CuptiCallback(nullptr, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR, &state);
  CHECK_FALSE(Shim().cupti_active.load());
  Call launch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 30};
  launch.Enter();
  launch.Exit();
  const std::vector<Record> records = DrainMyRing();
  REQUIRE(records.size() == 1);
  const auto refusal = records[0].As<wire::Refusal>();
  CHECK(refusal.code == static_cast<uint32_t>(wire::RefusalCode::kCuptiFatalError));
  CHECK(refusal.cupti_result == CUPTI_ERROR_UNKNOWN);
  CHECK(StringOf(refusal.cause_string).find("device lost") != std::string::npos);
}

TEST_CASE("activity buffers: aligned, recycled, declined and counted when exhausted", "[cupti]") {
  auto pool = std::make_unique<BufferPool>();
  REQUIRE(pool->Init(4096, /*may_decline=*/true));
  std::vector<uint8_t*> buffers;
  for (uint32_t i = 0; i < BufferPool::kPoolBuffers; ++i) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    pool->Request(&buffer, &size);
    REQUIRE(buffer != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(buffer) % 8 == 0);
    CHECK(size == 4096);
    buffers.push_back(buffer);
  }
  uint8_t* declined = reinterpret_cast<uint8_t*>(1);
  size_t size = 0;
  pool->Request(&declined, &size);
  CHECK(declined == nullptr);
  CHECK(pool->declined() == 1);

  pool->Complete(buffers[3], 128);
  pool->Complete(buffers[5], 0);
  std::vector<std::pair<uint8_t*, size_t>> completed;
  pool->TakeCompleted(
      [&](uint8_t* buffer, size_t valid) { completed.emplace_back(buffer, valid); });
  REQUIRE(completed.size() == 2);
  CHECK(completed[0] == std::make_pair(buffers[5], size_t{0}));
  CHECK(completed[1] == std::make_pair(buffers[3], size_t{128}));
  uint8_t* again = nullptr;
  pool->Request(&again, &size);
  CHECK((again == buffers[3] || again == buffers[5]));
}

TEST_CASE("an older CUPTI is never declined a buffer: it gets an overflow buffer", "[cupti]") {
  auto pool = std::make_unique<BufferPool>();
  REQUIRE(pool->Init(4096, /*may_decline=*/false));
  size_t size = 0;
  for (uint32_t i = 0; i < BufferPool::kPoolBuffers; ++i) {
    uint8_t* buffer = nullptr;
    pool->Request(&buffer, &size);
    REQUIRE(buffer != nullptr);
  }
  uint8_t* overflow = nullptr;
  pool->Request(&overflow, &size);
  REQUIRE(overflow != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(overflow) % 8 == 0);
  CHECK(pool->declined() == 0);
  pool->Complete(overflow, 64);
  size_t seen = 0;
  pool->TakeCompleted([&](uint8_t* buffer, size_t valid) {
    CHECK(buffer == overflow);
    seen += valid;
  });
  CHECK(seen == 64);
}

}  // namespace
}  // namespace gpuattr::inject
