#include "cupti/subscriber.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "cupti/cbid_table.h"
#include "cupti/cupti_mux.h"
#include "cupti/cupti_v2.h"
#include "cupti/mux_faces.h"
#include "cupti/v2_bridge.h"
#include "runtime/clock.h"
#include "runtime/shim_log.h"
#include "runtime/shim_state.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

// Bits kept in CUPTI's per-invocation correlationData slot between ENTER and EXIT.
constexpr uint64_t kMarkEntered = 1u << 0;
constexpr uint64_t kMarkNested = 1u << 1;
constexpr uint64_t kMarkGraphSetup = 1u << 2;
constexpr uint64_t kMarkSilent = 1u << 3;  // entered while not recording: no ApiEnter was written

constexpr uint32_t kCuptiVersionDeclineOk = 130000;  // NULL buffers are safe from CUDA 13 on

constexpr CUpti_ActivityKind kRequiredKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET};

std::atomic<bool> g_setup_claimed{false};
const char* g_library = nullptr;  // where CUPTI was bound from; written once, before cupti_bound

// Records produced outside the hot path (setup, fatal errors) go through the calling thread's
// ring like everything else, so they are ordered with that thread's other records.
template <typename Body>
void Emit(const Body& body) noexcept {
  if (ThreadState* thread = CurrentThread(); thread != nullptr) {
    thread->ring.Push(wire::RecordTypeOf<Body>::kType, body);
  }
}

void EmitCuptiState(int32_t result, uint32_t version, const char* library) noexcept {
  const uint32_t library_string = library != nullptr ? Shim().strings.Intern(library) : 0;
  Emit(wire::CuptiState{result, version, library_string, 0});
}

wire::ApiKind KindOf(CbidRole role) noexcept {
  switch (role) {
    case CbidRole::kGraph:
      return wire::ApiKind::kGraph;
    case CbidRole::kMemcpy:
      return wire::ApiKind::kMemcpy;
    case CbidRole::kMemset:
      return wire::ApiKind::kMemset;
    case CbidRole::kCapture:
      return wire::ApiKind::kCapture;
    case CbidRole::kKernel:
    case CbidRole::kGraphSetup:
    case CbidRole::kNone:
      break;
  }
  return wire::ApiKind::kKernel;
}

// Runs on: app thread inside a CUPTI runtime or driver API callback. `record`: a capture is
// recording (always, outside armed mode); otherwise only the nesting bookkeeping is kept, so a
// call that spans a window's edge still balances.
void OnApi(wire::ApiDomain domain, CbidRole role, CUpti_CallbackId cbid,
           const CUpti_CallbackData& data, bool record) noexcept {
  if (role == CbidRole::kNone) return;
  ThreadState* t = CurrentThread();
  if (t == nullptr) return;
  const bool runtime = domain == wire::ApiDomain::kRuntime;
  if (data.callbackSite == CUPTI_API_ENTER) {
    const bool nested = !runtime && t->runtime_depth > 0;
    uint64_t mark = kMarkEntered;
    if (record) {
      Shim().window.SyncThread(t);
    } else {
      mark |= kMarkSilent;
    }
    if (runtime) ++t->runtime_depth;
    if (nested) {
      mark |= kMarkNested;
    } else if (t->api_depth++ == 0) {
      t->outer_correlation = data.correlationId;
    }
    if (role == CbidRole::kGraphSetup) {
      mark |= kMarkGraphSetup;
      ++t->graph_setup_depth;
    } else if (!nested && record) {
      const wire::ApiEnter enter{RecordClockNs(),
                                 data.correlationId,
                                 t->tid,
                                 t->current_node,
                                 static_cast<uint16_t>(cbid),
                                 static_cast<uint8_t>(domain),
                                 static_cast<uint8_t>(KindOf(role))};
      t->ring.Push(wire::RecordType::kApiEnter, enter);
    }
    if (data.correlationData != nullptr) *data.correlationData = mark;
    return;
  }
  // EXIT.
  const uint64_t mark = data.correlationData != nullptr ? *data.correlationData : kMarkEntered;
  if ((mark & kMarkEntered) == 0) return;  // its ENTER happened before we subscribed
  if (data.correlationData != nullptr) *data.correlationData = 0;
  if (runtime && t->runtime_depth > 0) --t->runtime_depth;
  const bool nested = (mark & kMarkNested) != 0;
  if (!nested && t->api_depth > 0 && --t->api_depth == 0) t->outer_correlation = 0;
  if ((mark & kMarkGraphSetup) != 0) {
    if (t->graph_setup_depth > 0) --t->graph_setup_depth;
    return;
  }
  if (!nested && (mark & kMarkSilent) == 0 && record) {
    t->ring.Push(wire::RecordType::kApiExit,
                 wire::ApiExit{RecordClockNs(), data.correlationId, t->tid});
  }
}

// Runs on: app thread inside a CUPTI resource callback (between its API's ENTER and EXIT), only
// while recording.
void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data) noexcept {
  ShimState& shim = Shim();
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
      ThreadState* t = CurrentThread();
      if (t == nullptr || t->graph_setup_depth > 0) return;  // a clone: see GRAPHNODE_CLONED
      const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
      if (graph == nullptr) return;
      wire::GraphNodeCreated created{};
      created.timestamp_ns = RecordClockNs();
      shim.cupti.cuptiGetGraphNodeId(graph->node, &created.graph_node_id);
      shim.cupti.cuptiGetGraphId(graph->graph, &created.graph_id);
      created.correlation_id = t->api_depth > 0 ? t->outer_correlation : 0;
      created.tid = t->tid;
      created.node = t->current_node;
      t->ring.Push(wire::RecordType::kGraphNodeCreated, created);
      return;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
      ThreadState* t = CurrentThread();
      const auto* graph = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
      if (t == nullptr || graph == nullptr) return;
      wire::GraphNodeCloned cloned{};
      cloned.timestamp_ns = RecordClockNs();
      shim.cupti.cuptiGetGraphNodeId(graph->node, &cloned.graph_node_id);
      shim.cupti.cuptiGetGraphNodeId(graph->originalNode, &cloned.original_graph_node_id);
      shim.cupti.cuptiGetGraphId(graph->graph, &cloned.graph_id);
      t->ring.Push(wire::RecordType::kGraphNodeCloned, cloned);
      return;
    }
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      // Last chance for this context's records. No lock of ours is held; bufferCompleted only
      // enqueues. (Never do this from STREAM_DESTROY_STARTING: CUPTI deadlocks there.)
      shim.cupti.cuptiActivityFlushAll(0);
      return;
    default:
      return;
  }
}

// Runs on: whichever thread CUPTI reports a fatal error on.
void OnFatalError(const CUpti_StateData& data) noexcept {
  // CUPTI finalizes itself after this callback: never call it again.
  Shim().cupti_active.store(false, std::memory_order_release);
  char cause[256];
  snprintf(cause, sizeof(cause), "CUPTI reported a fatal error (%s): %s",
           CuptiResultName(&Shim().cupti, data.notification.result),
           data.notification.message != nullptr ? data.notification.message : "no details");
  EmitShimRefusal(wire::RefusalCode::kCuptiFatalError,
                  static_cast<int32_t>(data.notification.result), cause);
}

// Runs on: an app thread at a CUDA API exit, when the flush thread asked for a detach
// (cupti-notes §5: unsubscribe, then finalize, at an API exit; the flush thread already forced a
// flush). Exactly one thread wins the claim.
void DetachHere() noexcept {
  ShimState& shim = Shim();
  if (!shim.window.ClaimDetach()) return;
  shim.cupti_active.store(false, std::memory_order_release);
  if (CUpti_SubscriberHandle subscriber = shim.subscriber.exchange(nullptr)) {
    shim.cupti.cuptiUnsubscribe(subscriber);
  }
  shim.cupti.cuptiFinalize();
  shim.window.DetachDone(MonotonicNs());
}

int32_t SubscribeBoundCupti(const char* library) noexcept;

void UseCuptiTable(const CuptiApi& api) noexcept {
  Shim().cupti = api;
  Shim().cupti_bound.store(true, std::memory_order_release);
}

}  // namespace

void EmitShimRefusal(wire::RefusalCode code, int32_t result, std::string_view cause) noexcept {
  ShimLog("refusal %u: %.*s", static_cast<unsigned>(code), static_cast<int>(cause.size()),
          cause.data());
  Emit(wire::Refusal{static_cast<uint32_t>(code), result, Shim().strings.Intern(cause), 0});
}

void EmitShimDevice(uint32_t device, std::string_view name) noexcept {
  Emit(wire::Device{device, Shim().strings.Intern(name)});
}

uint64_t CUPTIAPI CuptiTimestamp() noexcept { return RecordClockNs(); }

void CUPTIAPI CuptiCallback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data) noexcept {
  try {
    if (data == nullptr) return;
    const EventMode mode = CurrentEventMode();
    if (mode == EventMode::kIgnore) return;
    if (domain == CUPTI_CB_DOMAIN_STATE) {
      if (cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
        OnFatalError(*static_cast<const CUpti_StateData*>(data));
      }
      return;
    }
    if (!Shim().cupti_active.load(std::memory_order_relaxed)) return;
    const bool record = mode == EventMode::kRecord;
    switch (domain) {
      case CUPTI_CB_DOMAIN_RUNTIME_API:
      case CUPTI_CB_DOMAIN_DRIVER_API: {
        const auto& api = *static_cast<const CUpti_CallbackData*>(data);
        const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
        OnApi(runtime ? wire::ApiDomain::kRuntime : wire::ApiDomain::kDriver,
              runtime ? RuntimeRole(cbid) : DriverRole(cbid), cbid, api, record);
        // cupti-notes §5: an API exit is the safe place to finalize CUPTI.
        if (api.callbackSite == CUPTI_API_EXIT && Shim().window.DetachRequested()) DetachHere();
        return;
      }
      case CUPTI_CB_DOMAIN_RESOURCE:
        if (record) OnResource(cbid, *static_cast<const CUpti_ResourceData*>(data));
        return;
      default:
        return;
    }
  } catch (...) {
    DisableShim();
  }
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  try {
    *max_records = 0;  // no limit: as many as fit
    Shim().buffers.Request(buffer, size);
  } catch (...) {
    DisableShim();
  }
}

void CUPTIAPI BufferCompleted(CUcontext /*context*/, uint32_t /*stream_id*/, uint8_t* buffer,
                              size_t /*size*/, size_t valid_size) noexcept {
  try {
    Shim().buffers.Complete(buffer, valid_size);
  } catch (...) {
    DisableShim();
  }
}

int32_t SetupCuptiWith(const CuptiApi& api, const char* library) noexcept {
  UseCuptiTable(api);
  return SubscribeBoundCupti(library);
}

namespace {

// The setup sequence of subscriber.h against the bound table, from cuptiGetVersion on. Runs at
// cuInit, or on the flush thread for each capture window of an armed process.
int32_t SubscribeBoundCupti(const char* library) noexcept {
  ShimState& shim = Shim();
  const CuptiApi& api = shim.cupti;
  uint32_t version = 0;
  if (api.cuptiGetVersion(&version) != CUPTI_SUCCESS) version = 0;
  shim.cupti_version.store(version, std::memory_order_relaxed);
  const bool may_decline = version >= kCuptiVersionDeclineOk;
  if (!shim.buffers.ready() && !shim.buffers.Init(BufferPool::kBufferBytes, may_decline)) {
    EmitShimRefusal(wire::RefusalCode::kCuptiUnavailable, 0,
                    "cannot map memory for CUPTI activity buffers");
    EmitCuptiState(CUPTI_ERROR_OUT_OF_MEMORY, version, library);
    return CUPTI_ERROR_OUT_OF_MEMORY;
  }

  CUpti_SubscriberHandle subscriber = nullptr;
  char holder[128] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpuattr";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof(holder);
  CUptiResult result = api.cuptiSubscribe_v2(&subscriber, &CuptiCallback, nullptr, &params);
  char cause[512];  // the holder's name (< 128) and the remedy
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    snprintf(cause, sizeof(cause),
             "CUPTI is already in use by %s: run without that tool; for the program's own "
             "profiler, start the program under gpuattr (gpuattr run, or armed for attach) "
             "so that the two share CUPTI",
             holder[0] != '\0' ? holder : "another tool");
    EmitShimRefusal(wire::RefusalCode::kCuptiSubscriberConflict, result, cause);
    EmitCuptiState(result, version, library);
    return result;
  }

  const char* failed = nullptr;
  CUpti_ActivityKind enabled[5];
  size_t enabled_count = 0;
  auto step = [&](const char* name, CUptiResult r) {
    if (failed == nullptr && r != CUPTI_SUCCESS) {
      failed = name;
      result = r;
    }
    return failed == nullptr;
  };
  if (step("cuptiSubscribe_v2", result) &&
      step("cuptiSetThreadIdType",
           api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) &&
      step("cuptiActivityRegisterTimestampCallback",
           api.cuptiActivityRegisterTimestampCallback(&CuptiTimestamp)) &&
      step("cuptiActivityRegisterCallbacks",
           api.cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted))) {
    for (CUpti_ActivityKind kind : kRequiredKinds) {
      if (!step("cuptiActivityEnable", api.cuptiActivityEnable(kind))) break;
      enabled[enabled_count++] = kind;
    }
  }
  if (failed == nullptr) {
    // Device names are a nicety: a CUPTI that cannot report devices still traces.
    if (api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS) {
      enabled[enabled_count++] = CUPTI_ACTIVITY_KIND_DEVICE;
    } else {
      ShimLog("cuptiActivityEnable(DEVICE) failed; device names will be missing");
    }
    for (const CbidEntry& entry : RuntimeCbids()) {
      if (!step("cuptiEnableCallback",
                api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, entry.cbid)))
        break;
    }
    for (const CbidEntry& entry : DriverCbids()) {
      if (failed != nullptr ||
          !step("cuptiEnableCallback",
                api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, entry.cbid)))
        break;
    }
    constexpr CUpti_CallbackId kResourceCbids[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                   CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                                   CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING};
    for (CUpti_CallbackId cbid : kResourceCbids) {
      if (failed != nullptr ||
          !step("cuptiEnableCallback",
                api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid)))
        break;
    }
    if (failed == nullptr) {
      step("cuptiEnableCallback", api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_STATE,
                                                          CUPTI_CBID_STATE_FATAL_ERROR));
    }
  }

  if (failed != nullptr) {
    for (size_t i = 0; i < enabled_count; ++i) api.cuptiActivityDisable(enabled[i]);
    if (subscriber != nullptr) api.cuptiUnsubscribe(subscriber);
    snprintf(cause, sizeof(cause), "%s failed: %s (%d)", failed, CuptiResultName(&api, result),
             static_cast<int>(result));
    EmitShimRefusal(wire::RefusalCode::kCuptiUnavailable, result, cause);
    EmitCuptiState(result, version, library);
    return result;
  }
  shim.subscriber.store(subscriber, std::memory_order_release);
  shim.cupti_active.store(true, std::memory_order_release);
  EmitCuptiState(0, version, library);
  ShimLog("CUPTI %u subscribed from %s", version, library != nullptr ? library : "?");
  return 0;
}

}  // namespace

namespace {

std::mutex g_bind_mu;  // a leaf: binding runs once, from cuInit or the flush thread

// Binds CUPTI (dlopen) and shares it: where CUPTI allows several subscribers, gpuattr and the
// program each get one through the V2 bridge (v2_bridge.h); elsewhere the multiplexer gets CUPTI's
// own functions, the shim the gpuattr face, every other client in the process the program face
// (cupti_mux.h, mux_faces.h).
// `probe`: another client may already hold CUPTI (a late attach), so the real session is opened
// first and the program face installed only if it could be: redirecting a holder's calls would
// take its session from it. False when no CUPTI could be loaded (a refusal, when `report`).
// Runs under g_bind_mu.
bool BindAndShare(bool probe, bool report) noexcept {
  CuptiApi api;
  const CuptiBinding binding = BindCupti(&api);
  if (!binding.ok) {
    if (report) {
      // No CUptiResult exists for "no library"; NOT_INITIALIZED is what CUPTI itself reports
      // when it cannot initialise. library_string stays 0 when nothing could be loaded.
      EmitShimRefusal(wire::RefusalCode::kCuptiUnavailable, 0, binding.error);
      EmitCuptiState(CUPTI_ERROR_NOT_INITIALIZED, 0, nullptr);
    }
    ShimLog("%s", binding.error);
    return false;
  }
  g_library = binding.library;
  if (CuptiV2Api v2;
      BindCuptiV2(binding.handle, &v2) && Bridge().Open(api, v2, &CuptiCallback, nullptr)) {
    // CUPTI keeps the two apart itself (v2_bridge.h). A late attach after another client
    // subscribed leaves its calls as they are: redirecting them mid-session would take its kinds.
    if (probe && Bridge().others_before()) {
      ShimLog("CUPTI allows several subscribers: gpuattr has its own");
    } else if (const RedirectOutcome shared = InstallBridgeProgramFace(binding.handle); shared.ok) {
      ShimLog("CUPTI allows several subscribers: %zu V1 exports bridged to the program's own",
              shared.symbols_redirected);
    } else {
      ShimLog("CUPTI's V1 activity calls not bridged for other clients: %s", shared.error);
    }
    UseCuptiTable(BridgeGpuattrFace(api));
    return true;
  }
  Mux().Bind(api, &CuptiTimestamp);
  const CUptiResult opened = probe ? Mux().OpenRealSession() : CUPTI_SUCCESS;
  if (opened != CUPTI_SUCCESS) {
    ShimLog("CUPTI not shared: another client holds it (%d)", static_cast<int>(opened));
  } else if (const RedirectOutcome shared = InstallProgramFace(binding.handle); shared.ok) {
    ShimLog("CUPTI shared: %zu exports redirected, %zu bound slots rebound",
            shared.symbols_redirected, shared.slots_rebound);
  } else {
    ShimLog("CUPTI not shared with other clients in this process: %s", shared.error);
  }
  UseCuptiTable(GpuattrFace(api));
  return true;
}

}  // namespace

void InitializeCupti() noexcept {
  bool expected = false;
  if (!g_setup_claimed.compare_exchange_strong(expected, true)) return;
  {
    std::lock_guard<std::mutex> lock(g_bind_mu);
    if (!Shim().cupti_bound.load(std::memory_order_acquire) && !BindAndShare(false, true)) return;
  }
  SubscribeBoundCupti(g_library);
}

void ShareCupti() noexcept {
  std::lock_guard<std::mutex> lock(g_bind_mu);
  if (!Shim().cupti_bound.load(std::memory_order_acquire)) BindAndShare(false, false);
}

int32_t AttachCupti() noexcept {
  if (Shim().cupti_active.load(std::memory_order_acquire)) return 0;
  {
    std::lock_guard<std::mutex> lock(g_bind_mu);
    if (!Shim().cupti_bound.load(std::memory_order_acquire) && !BindAndShare(true, true)) {
      return CUPTI_ERROR_NOT_INITIALIZED;
    }
  }
  return SubscribeBoundCupti(g_library);
}

}  // namespace gpuattr::inject
