// The CUPTI multiplexer (inject/cupti/cupti_mux.h) against the fake CUPTI, which enforces CUDA
// 13.0's one subscriber slot and process-global activity API: the gpuattr side through the shim's
// table (GpuattrFace), the program side through CUPTI's own exports after InstallProgramFace —
// and, built again with SIMGPU_TEST_V2_BRIDGE, the V2 bridge (inject/cupti/v2_bridge.h) against
// the fake's multi-subscriber mode (CUDA 13.3+), through BridgeGpuattrFace and
// InstallBridgeProgramFace, where the same cases must hold —
// called here as a client linked against libcupti calls them (this test links the fake; a
// library linked so is also loaded afterwards), and looked up with dlsym as Kineto does. Work runs
// on the simulated driver; each TEST_CASE runs in its own process under ctest (the redirect is for
// the life of the process).
#include "cupti/cupti_mux.h"

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/cupti_v2.h"
#include "cupti/mux_faces.h"
#include "cupti/v2_bridge.h"
#include "driver.h"
#include "runtime/clock.h"

namespace {

using gpuattr::inject::BindCupti;
using gpuattr::inject::CuptiApi;
using gpuattr::inject::CuptiBinding;
using gpuattr::inject::GpuattrFace;
using gpuattr::inject::InstallProgramFace;
using gpuattr::inject::Mux;
using gpuattr::simgpu::CaptureSite;
using gpuattr::simgpu::DeviceWork;
using gpuattr::simgpu::Driver;

struct Kernel {
  uint64_t start;
  uint64_t end;
  uint64_t buffer;
};

// What one side received. Callbacks run on app threads and the fake's worker and flushing
// threads; assertions happen on the test thread afterwards.
struct SideLog {
  std::mutex mu;
  std::map<uint32_t, Kernel> kernels;  // by correlation id
  size_t kernel_records = 0;
  std::multiset<uint32_t> enters;  // API ENTER callbacks, by correlation id
  uint64_t buffers = 0;
  std::atomic<int> slot_mismatches{0};  // an EXIT whose correlationData is not its ENTER's
  uint64_t slot_mark = 0;               // what this side writes into correlationData
};
SideLog g_gpuattr;
SideLog g_program;
const CuptiApi* g_real = nullptr;  // record walking (stateless: CUPTI's own)

void CUPTIAPI OnCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId,
                         const void* data) {
  auto* log = static_cast<SideLog*>(userdata);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite == CUPTI_API_ENTER) {
    *call->correlationData = log->slot_mark + call->correlationId;
    std::lock_guard<std::mutex> lock(log->mu);
    log->enters.insert(call->correlationId);
  } else if (*call->correlationData != log->slot_mark + call->correlationId) {
    log->slot_mismatches.fetch_add(1);
  }
}

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, 1 << 16));
  *size = 1 << 16;
  *max_records = 0;
}

void Collect(SideLog* log, uint8_t* buffer, size_t valid) {
  std::lock_guard<std::mutex> lock(log->mu);
  CUpti_Activity* record = nullptr;
  while (g_real->cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    log->kernels[kernel->correlationId] = {kernel->start, kernel->end, log->buffers};
    ++log->kernel_records;
  }
  ++log->buffers;
  std::free(buffer);
}
void CUPTIAPI CompleteGpuattr(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collect(&g_gpuattr, buffer, valid);
}
void CUPTIAPI CompleteProgram(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collect(&g_program, buffer, valid);
}

constexpr CUpti_CallbackId kLaunchCbid = CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000;

// The simulated driver with CUPTI shared: the gpuattr side subscribed and tracing kernels, as the
// shim is at setup.
struct Shared {
  Driver driver{2000, 1000};
  CuptiApi real;
  CuptiApi gpuattr;
  CuptiBinding binding;
  CUpti_SubscriberHandle gpuattr_subscriber = nullptr;

  Shared() {
    driver.EnsureInit();
    binding = BindCupti(&real);
    REQUIRE(binding.ok);
    g_real = &real;
    g_gpuattr.slot_mark = 1000000;
    g_program.slot_mark = 2000000;
#ifdef SIMGPU_TEST_V2_BRIDGE
    gpuattr::inject::CuptiV2Api v2;
    REQUIRE(gpuattr::inject::BindCuptiV2(binding.handle, &v2));
    REQUIRE(gpuattr::inject::Bridge().Open(real, v2, &OnCallback, &g_gpuattr));
    REQUIRE(gpuattr::inject::InstallBridgeProgramFace(binding.handle).ok);
    gpuattr = gpuattr::inject::BridgeGpuattrFace(real);
#else
    Mux().Bind(real, &gpuattr::inject::MonotonicNs);
    REQUIRE(InstallProgramFace(binding.handle).ok);
    gpuattr = GpuattrFace(real);
#endif
    REQUIRE(gpuattr.cuptiSubscribe_v2(&gpuattr_subscriber, &OnCallback, &g_gpuattr, nullptr) ==
            CUPTI_SUCCESS);
    REQUIRE(gpuattr.cuptiActivityRegisterTimestampCallback(&gpuattr::inject::MonotonicNs) ==
            CUPTI_SUCCESS);
    REQUIRE(gpuattr.cuptiActivityRegisterCallbacks(&Request, &CompleteGpuattr) == CUPTI_SUCCESS);
    REQUIRE(gpuattr.cuptiEnableCallback(1, gpuattr_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                        kLaunchCbid) == CUPTI_SUCCESS);
    REQUIRE(gpuattr.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  }

  uint32_t Launch(uint64_t duration_ns = 5000) {
    DeviceWork work;
    work.name = "kernel";
    work.duration_ns = duration_ns;
    const auto result = driver.Submit(work, CaptureSite{"main", {}});
    REQUIRE(result.correlation_id.has_value());
    return *result.correlation_id;
  }
  void SyncAndFlush() {
    driver.Sync(0, std::nullopt);
    REQUIRE(gpuattr.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  }
};

// The program side as a Kineto-like client linked against libcupti: subscribes, registers its own
// buffers, traces kernels (no timestamp callback: CUPTI's default clock).
CUpti_SubscriberHandle StartProgram() {
  CUpti_SubscriberHandle subscriber = nullptr;
  REQUIRE(cuptiSubscribe(&subscriber, &OnCallback, &g_program) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunchCbid) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks(&Request, &CompleteProgram) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  return subscriber;
}

std::set<uint32_t> Keys(const std::map<uint32_t, Kernel>& kernels) {
  std::set<uint32_t> keys;
  for (const auto& [id, kernel] : kernels) keys.insert(id);
  return keys;
}

#ifdef SIMGPU_TEST_V2_BRIDGE
TEST_CASE("a V1 client gets a subscriber of its own from CUPTI beside gpuattr's", "[mux]") {
  Shared shared;
  // The V1 activity functions reach the bridge, however the client bound them; subscribe and
  // the callback API stay CUPTI's own.
  void* enable = dlsym(shared.binding.handle, "cuptiActivityEnable");
  CHECK(enable != reinterpret_cast<void*>(shared.real.cuptiActivityEnable));
  CHECK(reinterpret_cast<void*>(&cuptiActivityEnable) == enable);
  CHECK(dlsym(shared.binding.handle, "cuptiSubscribe_v2") ==
        reinterpret_cast<void*>(shared.real.cuptiSubscribe_v2));
  // CUPTI lets the program in, naming gpuattr, the first subscriber, which allowed several.
  char first[64] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "program";
  params.oldSubscriberName = first;
  params.oldSubscriberSize = sizeof(first);
  CUpti_SubscriberHandle program = nullptr;
  REQUIRE(cuptiSubscribe_v2(&program, &OnCallback, &g_program, &params) == CUPTI_SUCCESS);
  CHECK(std::string(first) == "gpuattr");
  CHECK(program != shared.gpuattr_subscriber);
  REQUIRE(cuptiUnsubscribe(program) == CUPTI_SUCCESS);
}
#else
TEST_CASE("a client that links CUPTI or looks it up with dlsym reaches the program side", "[mux]") {
  Shared shared;
  void* looked_up = dlsym(shared.binding.handle, "cuptiSubscribe_v2");
  CHECK(looked_up != reinterpret_cast<void*>(shared.real.cuptiSubscribe_v2));
  CHECK(reinterpret_cast<void*>(&cuptiSubscribe_v2) == looked_up);
  CHECK(dlsym(RTLD_DEFAULT, "cuptiActivityEnable") ==
        reinterpret_cast<void*>(&cuptiActivityEnable));
  // A library linked against CUPTI and loaded now binds to the program side too.
  void* late = dlopen(SIMGPU_LATE_CLIENT_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(late != nullptr);
  auto late_address = reinterpret_cast<void* (*)()>(dlsym(late, "LateClientSubscribeAddress"));
  REQUIRE(late_address != nullptr);
  CHECK(late_address() == looked_up);
  // Stateless functions stay CUPTI's own.
  CHECK(dlsym(shared.binding.handle, "cuptiActivityGetNextRecord") ==
        reinterpret_cast<void*>(shared.real.cuptiActivityGetNextRecord));
  // CUDA 13.0 has one slot, which gpuattr holds: yet the program subscribes, and a second
  // subscriber of its own is refused naming its first, as CUPTI alone would.
  CUpti_SubscriberHandle first = StartProgram();
  CHECK(first != shared.gpuattr_subscriber);
  char holder[64] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "second";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof(holder);
  CUpti_SubscriberHandle second = nullptr;
  auto subscribe_v2 = reinterpret_cast<decltype(&cuptiSubscribe_v2)>(looked_up);
  CHECK(subscribe_v2(&second, &OnCallback, nullptr, &params) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK(cuptiUnsubscribe(first) == CUPTI_SUCCESS);
  CHECK(subscribe_v2(&second, &OnCallback, &g_program, &params) == CUPTI_SUCCESS);
}

#endif

TEST_CASE("each side gets exactly what was launched while it was on, with its own callbacks",
          "[mux]") {
  Shared shared;
  std::vector<uint32_t> before{shared.Launch(), shared.Launch()};
  CUpti_SubscriberHandle program = StartProgram();
  std::vector<uint32_t> during{shared.Launch(), shared.Launch(), shared.Launch()};
  shared.driver.Sync(0, std::nullopt);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiUnsubscribe(program) == CUPTI_SUCCESS);
  std::vector<uint32_t> after{shared.Launch(), shared.Launch()};
  shared.SyncAndFlush();

  std::set<uint32_t> all(before.begin(), before.end());
  all.insert(during.begin(), during.end());
  all.insert(after.begin(), after.end());
  CHECK(Keys(g_gpuattr.kernels) == all);
  CHECK(Keys(g_program.kernels) == std::set<uint32_t>(during.begin(), during.end()));
  CHECK(std::set<uint32_t>(g_gpuattr.enters.begin(), g_gpuattr.enters.end()) == all);
  CHECK(g_program.enters == std::multiset<uint32_t>(during.begin(), during.end()));
  CHECK(g_gpuattr.slot_mismatches == 0);
  CHECK(g_program.slot_mismatches == 0);
  // The same kernels, to the ns: gpuattr's on its own clock, the program's on CUPTI's default
  // clock, one offset per buffer.
  std::map<uint64_t, std::set<int64_t>> offsets;
  for (uint32_t id : during) {
    const Kernel& ours = g_gpuattr.kernels[id];
    const Kernel& theirs = g_program.kernels[id];
    CHECK(theirs.end - theirs.start == ours.end - ours.start);
    offsets[theirs.buffer].insert(static_cast<int64_t>(theirs.start - ours.start));
  }
  for (const auto& [buffer, offset] : offsets) CHECK(offset.size() == 1);
}

TEST_CASE("a program that finalizes CUPTI mid-run leaves gpuattr's session whole", "[mux]") {
  Shared shared;
  CUpti_SubscriberHandle program = StartProgram();
  std::vector<uint32_t> launched{shared.Launch(), shared.Launch()};
  shared.driver.Sync(0, std::nullopt);
  // As Kineto's teardown (TEARDOWN_CUPTI=1): unsubscribe, then finalize, so that gpuattr's is the
  // only subscriber CUPTI still has.
  REQUIRE(cuptiUnsubscribe(program) == CUPTI_SUCCESS);
  REQUIRE(cuptiFinalize() == CUPTI_SUCCESS);
  CHECK(Keys(g_program.kernels) == std::set<uint32_t>(launched.begin(), launched.end()));
  launched.push_back(shared.Launch());
  launched.push_back(shared.Launch());
  shared.SyncAndFlush();
  CHECK(Keys(g_gpuattr.kernels) == std::set<uint32_t>(launched.begin(), launched.end()));
  CHECK(std::set<uint32_t>(g_gpuattr.enters.begin(), g_gpuattr.enters.end()) ==
        std::set<uint32_t>(launched.begin(), launched.end()));
  CHECK(g_program.kernels.size() == 2);
}

TEST_CASE("gpuattr detaching while the program traces takes nothing from the program", "[mux]") {
  Shared shared;
  CUpti_SubscriberHandle program = StartProgram();
  std::vector<uint32_t> launched{shared.Launch()};
  shared.driver.Sync(0, std::nullopt);
  // The shim's detach (cupti-notes §5): forced flush, unsubscribe, finalize.
  REQUIRE(shared.gpuattr.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiUnsubscribe(shared.gpuattr_subscriber) == CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiFinalize() == CUPTI_SUCCESS);
  launched.push_back(shared.Launch());
  launched.push_back(shared.Launch());
  shared.driver.Sync(0, std::nullopt);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(Keys(g_program.kernels) == std::set<uint32_t>(launched.begin(), launched.end()));
  CHECK(g_program.enters == std::multiset<uint32_t>(launched.begin(), launched.end()));
  CHECK(g_gpuattr.kernels.size() == 1);
  // A later attach window joins the program's session.
  REQUIRE(shared.gpuattr.cuptiSubscribe_v2(&shared.gpuattr_subscriber, &OnCallback, &g_gpuattr,
                                           nullptr) == CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiActivityRegisterCallbacks(&Request, &CompleteGpuattr) ==
          CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ==
          CUPTI_SUCCESS);
  const uint32_t rejoined = shared.Launch();
  shared.SyncAndFlush();
  CHECK(Keys(g_gpuattr.kernels) == std::set<uint32_t>{launched[0], rejoined});
  REQUIRE(cuptiUnsubscribe(program) == CUPTI_SUCCESS);
}

TEST_CASE("gpuattr detaching leaves alone a program that has only subscribed its callbacks",
          "[mux]") {
  Shared shared;
  CUpti_SubscriberHandle program = nullptr;
  REQUIRE(cuptiSubscribe(&program, &OnCallback, &g_program) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableCallback(1, program, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunchCbid) ==
          CUPTI_SUCCESS);
  // The shim's detach: forced flush, unsubscribe, finalize. CUPTI is the program's alone after.
  REQUIRE(shared.gpuattr.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiUnsubscribe(shared.gpuattr_subscriber) == CUPTI_SUCCESS);
  REQUIRE(shared.gpuattr.cuptiFinalize() == CUPTI_SUCCESS);
  const uint32_t after = shared.Launch();
  CHECK(g_program.enters == std::multiset<uint32_t>{after});
  CHECK(g_program.slot_mismatches == 0);
  REQUIRE(cuptiUnsubscribe(program) == CUPTI_SUCCESS);
}

TEST_CASE("gpuattr's forced flush while the program traces cuts none of its running work",
          "[mux]") {
  Shared shared;
  StartProgram();
  // 50 ms of device work, still running when gpuattr forces a flush (as at a window's close):
  // CUPTI alone would hand it out with start = end = 0 and never again.
  const uint32_t running = shared.Launch(50'000'000);
  REQUIRE(shared.gpuattr.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  shared.driver.Sync(0, std::nullopt);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  REQUIRE(g_program.kernels.count(running) == 1);
  CHECK(g_program.kernels[running].end - g_program.kernels[running].start == 50'000'000);
  REQUIRE(g_gpuattr.kernels.count(running) == 1);
  CHECK(g_gpuattr.kernels[running].end - g_gpuattr.kernels[running].start == 50'000'000);
}

TEST_CASE("a program flushing on its own thread while gpuattr flushes gets every record once",
          "[mux]") {
  Shared shared;
  StartProgram();
  std::atomic<bool> done{false};
  std::thread program_flusher([&] {
    while (!done.load()) cuptiActivityFlushAll(0);
  });
  std::thread gpuattr_flusher([&] {
    while (!done.load()) shared.gpuattr.cuptiActivityFlushAll(0);
  });
  std::set<uint32_t> launched;
  for (int i = 0; i < 200; ++i) launched.insert(shared.Launch());
  shared.driver.Sync(0, std::nullopt);
  done = true;
  program_flusher.join();
  gpuattr_flusher.join();
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(Keys(g_program.kernels) == launched);
  CHECK(Keys(g_gpuattr.kernels) == launched);
  CHECK(g_program.kernel_records == launched.size());
  CHECK(g_gpuattr.kernel_records == launched.size());
  size_t dropped = 1;
  CHECK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS);
  CHECK(dropped == 0);
}

}  // namespace
