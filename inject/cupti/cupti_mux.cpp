// CuptiMux, the callback API and the real session (the activity API: cupti_mux_activity.cpp).
#include "cupti/cupti_mux.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "cupti/cbid_table.h"

namespace gpuattr::inject {
namespace {

constexpr size_t kCallSlotDepth = 64;  // nested API calls per thread with their own slots
// In CUPTI's slot: the level below, for an EXIT; the shim's own marks use the low bits only.
constexpr uint64_t kSharedSlotTag = uint64_t{1} << 63;

// Per thread, for API calls whose ENTER a program callback saw: each side's correlationData slot
// for every open call, a stack indexed by the level the multiplexer keeps in CUPTI's own slot
// (tagged kSharedSlotTag); and how many program callbacks this thread is inside of (so a program
// that unsubscribes from inside one does not wait for itself).
struct ThreadCalls {
  uint64_t slots[kCallSlotDepth][CuptiMux::kSides];
  uint32_t depth = 0;
  uint32_t callbacks = 0;
};
// On the heap, made at a thread's first shared call: a kilobyte of thread-local storage in the
// shim made LeakSanitizer's tracer crash at exit in the asan tier (one in a few runs).
thread_local std::unique_ptr<ThreadCalls> t_calls_state;

ThreadCalls& Calls() {
  if (t_calls_state == nullptr) t_calls_state = std::make_unique<ThreadCalls>();
  return *t_calls_state;
}

void CUPTIAPI RealDispatch(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                           const void* data) {
  static_cast<CuptiMux*>(userdata)->Dispatch(domain, cbid, data);
}
void CUPTIAPI RealRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  Mux().RequestRealBuffer(buffer, size, max_records);
}
void CUPTIAPI RealComplete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  Mux().CompleteRealBuffer(buffer, valid_size);
}

uint32_t DomainSize(CUpti_CallbackDomain domain) {
  switch (domain) {
    case CUPTI_CB_DOMAIN_DRIVER_API:
      return CUPTI_DRIVER_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RUNTIME_API:
      return CUPTI_RUNTIME_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RESOURCE:
      return CUPTI_CBID_RESOURCE_SIZE;
    case CUPTI_CB_DOMAIN_SYNCHRONIZE:
      return CUPTI_CBID_SYNCHRONIZE_SIZE;
    case CUPTI_CB_DOMAIN_NVTX:
      return CUPTI_CBID_NVTX_SIZE;
    case CUPTI_CB_DOMAIN_STATE:
      return CUPTI_CBID_STATE_SIZE;
    default:
      return 0;
  }
}

bool IsApiDomain(CUpti_CallbackDomain domain) {
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API;
}

// The launch callbacks the real session keeps on for the watermark (cbid_table.h).
bool WatermarkCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return RuntimeRole(cbid) != CbidRole::kNone;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return DriverRole(cbid) != CbidRole::kNone;
  return false;
}

void CopyName(char* to, size_t size, const char* from) {
  snprintf(to, size, "%s", from != nullptr ? from : "");
}

}  // namespace

CuptiMux& Mux() noexcept {
  static CuptiMux mux;
  return mux;
}

void CuptiMux::Bind(const CuptiApi& real, CUpti_TimestampCallbackFunc clock) noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  real_ = real;
  clock_ = clock;
  bound_.store(true, std::memory_order_release);
}

CUpti_SubscriberHandle CuptiMux::HandleOf(MuxSide which) noexcept {
  return reinterpret_cast<CUpti_SubscriberHandle>(&side(which));
}

bool CuptiMux::Wants(const Side& side, CUpti_CallbackDomain domain,
                     CUpti_CallbackId cbid) const noexcept {
  if (static_cast<uint32_t>(domain) >= kDomains || cbid >= kCbids) return false;
  return (side.cbids[domain][cbid / 64].load(std::memory_order_relaxed) >> (cbid % 64) & 1u) != 0;
}

bool CuptiMux::AnySideWants(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const noexcept {
  for (const Side& side : sides_) {
    if (Wants(side, domain, cbid)) return true;
  }
  return WatermarkCbid(domain, cbid);
}

bool CuptiMux::Tracing(const Side& side) noexcept {
  for (const KindWindows& kind : side.kinds) {
    if (kind.open()) return true;
  }
  return false;
}

bool CuptiMux::Idle(const Side& side) const noexcept { return !side.subscribed && !Tracing(side); }

CUptiResult CuptiMux::EnsureRealSessionLocked(char* holder, size_t holder_size) noexcept {
  if (real_subscriber_ != nullptr) return CUPTI_SUCCESS;
  char old_name[128] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpuattr";
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult result = real_.cuptiSubscribe_v2(&subscriber, &RealDispatch, this, &params);
  if (result != CUPTI_SUCCESS) {
    if (holder != nullptr && holder_size > 0) CopyName(holder, holder_size, old_name);
    return result;
  }
  // The clock first: records made before a change keep the old base (cupti-notes §4.7).
  result = real_.cuptiActivityRegisterTimestampCallback(clock_);
  if (result == CUPTI_SUCCESS)
    result = real_.cuptiActivityRegisterCallbacks(&RealRequest, &RealComplete);
  for (const CbidEntry& entry : RuntimeCbids()) {
    if (result != CUPTI_SUCCESS) break;
    result = real_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, entry.cbid);
  }
  for (const CbidEntry& entry : DriverCbids()) {
    if (result != CUPTI_SUCCESS) break;
    result = real_.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, entry.cbid);
  }
  if (result != CUPTI_SUCCESS) {
    real_.cuptiUnsubscribe(subscriber);
    return result;
  }
  real_subscriber_ = subscriber;
  real_initialized_ = true;
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::OpenRealSession() noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  return EnsureRealSessionLocked(nullptr, 0);
}

CuptiMux::Teardown CuptiMux::EndRealSessionLocked(bool finalize) noexcept {
  Teardown teardown;
  // No side has a kind open (both are idle), so CUPTI has none enabled for them either.
  teardown.subscriber = real_subscriber_;
  real_subscriber_ = nullptr;
  teardown.finalize = finalize && real_initialized_;
  if (teardown.finalize) real_initialized_ = false;
  return teardown;
}

void CuptiMux::RunTeardown(const Teardown& teardown) noexcept {
  if (teardown.subscriber != nullptr) real_.cuptiUnsubscribe(teardown.subscriber);
  if (teardown.finalize) real_.cuptiFinalize();
}

void CuptiMux::WaitForOtherThreadsCallbacks() noexcept {
  const int64_t own = t_calls_state != nullptr ? t_calls_state->callbacks : 0;
  while (program_callbacks_running_.load(std::memory_order_seq_cst) > own) {
    std::this_thread::yield();
  }
}

CUptiResult CuptiMux::Subscribe(MuxSide which, CUpti_SubscriberHandle* subscriber,
                                CUpti_CallbackFunc callback, void* userdata,
                                CUpti_SubscriberParams* params) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(session_mu_);
  Side& s = side(which);
  const bool has_holder =
      params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0;
  if (s.subscribed) {
    if (has_holder) CopyName(params->oldSubscriberName, params->oldSubscriberSize, s.name);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  const CUptiResult result = EnsureRealSessionLocked(
      has_holder ? params->oldSubscriberName : nullptr, has_holder ? params->oldSubscriberSize : 0);
  if (result != CUPTI_SUCCESS) return result;
  s.subscribed = true;
  CopyName(s.name, sizeof(s.name), params != nullptr ? params->subscriberName : nullptr);
  s.userdata.store(userdata, std::memory_order_relaxed);
  s.callback.store(callback, std::memory_order_release);
  *subscriber = HandleOf(which);
  return CUPTI_SUCCESS;
}

void CuptiMux::SetCallbackLocked(Side& s, bool enable, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid) noexcept {
  std::atomic<uint64_t>& word = s.cbids[domain][cbid / 64];
  const uint64_t bit = uint64_t{1} << (cbid % 64);
  if (enable) {
    word.fetch_or(bit, std::memory_order_relaxed);
  } else {
    word.fetch_and(~bit, std::memory_order_relaxed);
    if (real_subscriber_ != nullptr && !AnySideWants(domain, cbid)) {
      real_.cuptiEnableCallback(0, real_subscriber_, domain, cbid);
    }
  }
}

void CuptiMux::ForgetCallbacksLocked(Side& s) noexcept {
  for (uint32_t domain = 0; domain < kDomains; ++domain) {
    const auto callback_domain = static_cast<CUpti_CallbackDomain>(domain);
    for (uint32_t cbid = 0; cbid < DomainSize(callback_domain) && cbid < kCbids; ++cbid) {
      if (Wants(s, callback_domain, cbid)) SetCallbackLocked(s, false, callback_domain, cbid);
    }
  }
}

CUptiResult CuptiMux::Unsubscribe(MuxSide which, CUpti_SubscriberHandle subscriber) noexcept {
  Teardown teardown;
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    Side& s = side(which);
    if (!s.subscribed || subscriber != HandleOf(which)) return CUPTI_ERROR_INVALID_PARAMETER;
    s.subscribed = false;
    s.callback.store(nullptr, std::memory_order_seq_cst);
    ForgetCallbacksLocked(s);
    bool all_idle = true;
    for (const Side& other : sides_) all_idle = all_idle && Idle(other);
    if (all_idle) teardown = EndRealSessionLocked(false);
  }
  WaitForOtherThreadsCallbacks();
  RunTeardown(teardown);
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::EnableCallback(MuxSide which, uint32_t enable,
                                     CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
                                     CUpti_CallbackId cbid) noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  Side& s = side(which);
  if (!s.subscribed || subscriber != HandleOf(which) || static_cast<uint32_t>(domain) >= kDomains ||
      cbid >= kCbids) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (enable != 0) {
    const CUptiResult result = real_.cuptiEnableCallback(1, real_subscriber_, domain, cbid);
    if (result != CUPTI_SUCCESS) return result;
  }
  SetCallbackLocked(s, enable != 0, domain, cbid);
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::EnableDomain(MuxSide which, uint32_t enable,
                                   CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain) noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  Side& s = side(which);
  if (!s.subscribed || subscriber != HandleOf(which) || static_cast<uint32_t>(domain) >= kDomains ||
      DomainSize(domain) == 0) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (enable != 0) {
    const CUptiResult result = real_.cuptiEnableDomain(1, real_subscriber_, domain);
    if (result != CUPTI_SUCCESS) return result;
  }
  for (uint32_t cbid = 0; cbid < DomainSize(domain) && cbid < kCbids; ++cbid) {
    SetCallbackLocked(s, enable != 0, domain, cbid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::EnableAllDomains(MuxSide which, uint32_t enable,
                                       CUpti_SubscriberHandle subscriber) noexcept {
  for (uint32_t domain = 1; domain < kDomains; ++domain) {
    const auto callback_domain = static_cast<CUpti_CallbackDomain>(domain);
    if (DomainSize(callback_domain) == 0) continue;
    const CUptiResult result = EnableDomain(which, enable, subscriber, callback_domain);
    if (result != CUPTI_SUCCESS) return result;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::GetCallbackState(MuxSide which, uint32_t* enable,
                                       CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid) noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  if (enable == nullptr || !side(which).subscribed || subscriber != HandleOf(which) ||
      static_cast<uint32_t>(domain) >= kDomains || cbid >= kCbids) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  *enable = Wants(side(which), domain, cbid) ? 1 : 0;
  return CUPTI_SUCCESS;
}

void CuptiMux::Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        const void* data) noexcept {
  const bool api = IsApiDomain(domain) && data != nullptr;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (api && call->callbackSite == CUPTI_API_ENTER) {
    uint32_t seen = watermark_.load(std::memory_order_relaxed);
    while (
        call->correlationId > seen &&
        !watermark_.compare_exchange_weak(seen, call->correlationId, std::memory_order_acq_rel)) {
    }
  }
  Side& gpuattr = side(MuxSide::kGpuattr);
  Side& program = side(MuxSide::kProgram);
  // A first look: InvokeProgram looks again once counted (Unsubscribe's handshake).
  const bool program_wants =
      Wants(program, domain, cbid) && program.callback.load(std::memory_order_relaxed) != nullptr;
  const CUpti_CallbackFunc gpuattr_callback =
      Wants(gpuattr, domain, cbid) ? gpuattr.callback.load(std::memory_order_acquire) : nullptr;
  uint64_t* slot = api ? call->correlationData : nullptr;
  // Without a program callback at ENTER, gpuattr's callback gets CUPTI's own data and slot, and
  // nothing else is done (the launch path's cost, docs/benchmarks.md); an EXIT then finds no
  // tag in the slot.
  const bool shared =
      slot != nullptr &&
      (call->callbackSite == CUPTI_API_ENTER ? program_wants : (*slot & kSharedSlotTag) != 0);
  if (!shared) {
    if (gpuattr_callback != nullptr) gpuattr_callback(gpuattr.userdata.load(), domain, cbid, data);
    if (program_wants) {
      // A non-API callback, or an API EXIT whose ENTER the program did not see: slot 0.
      uint64_t unseen = 0;
      CUpti_CallbackData own{};
      if (api) {
        own = *call;
        own.correlationData = &unseen;
      }
      InvokeProgram(domain, cbid, api ? &own : data);
    }
    return;
  }
  ThreadCalls& calls = Calls();
  uint32_t level = kCallSlotDepth;  // beyond the depth: no slots of its own
  if (call->callbackSite == CUPTI_API_ENTER) {
    if (calls.depth < kCallSlotDepth) {
      level = calls.depth++;
      for (uint64_t& side_slot : calls.slots[level]) side_slot = 0;
    }
    *slot = kSharedSlotTag | level;
  } else {
    level = static_cast<uint32_t>(*slot & ~kSharedSlotTag);
  }
  uint64_t unseen[kSides] = {};
  const auto side_slot = [&](MuxSide which) {
    const auto index = static_cast<size_t>(which);
    return level < kCallSlotDepth ? &calls.slots[level][index] : &unseen[index];
  };
  CUpti_CallbackData own = *call;
  if (gpuattr_callback != nullptr) {
    own.correlationData = side_slot(MuxSide::kGpuattr);
    gpuattr_callback(gpuattr.userdata.load(), domain, cbid, &own);
  }
  if (program_wants) {
    own.correlationData = side_slot(MuxSide::kProgram);
    InvokeProgram(domain, cbid, &own);
  }
  if (call->callbackSite == CUPTI_API_EXIT && level < kCallSlotDepth) calls.depth = level;
}

void CuptiMux::InvokeProgram(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data) noexcept {
  // Counted before the callback is read, so that the program's unsubscribe or finalize (which
  // clears it, then waits for the count) either is waited for or is seen (the shim's callbacks
  // live as long as the process and need no such wait).
  program_callbacks_running_.fetch_add(1, std::memory_order_seq_cst);
  ++Calls().callbacks;
  Side& program = side(MuxSide::kProgram);
  if (const CUpti_CallbackFunc callback = program.callback.load(std::memory_order_seq_cst)) {
    callback(program.userdata.load(), domain, cbid, data);
  }
  --Calls().callbacks;
  program_callbacks_running_.fetch_sub(1, std::memory_order_seq_cst);
}

void CuptiMux::ResetSide(MuxSide which) noexcept {
  Side& s = side(which);
  s.subscribed = false;
  s.callback.store(nullptr, std::memory_order_seq_cst);
  ForgetCallbacksLocked(s);
  for (uint32_t kind = 0; kind < kKinds; ++kind) CloseKindLocked(s, kind);
  s.request.store(nullptr, std::memory_order_release);
  s.complete.store(nullptr, std::memory_order_release);
  s.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  std::lock_guard<std::mutex> lock(data_mu_);
  s.clock = nullptr;
  for (KindWindows& kind : s.kinds) kind.count = 0;
}

CUptiResult CuptiMux::Finalize(MuxSide which) noexcept {
  if (!bound()) return CUPTI_SUCCESS;
  bool initialized = false;
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    initialized = real_initialized_;
  }
  // What the side still has in CUPTI's buffers is its own: deliver it first, as a real
  // cuptiFinalize flushes (cupti-notes §5). A CUPTI never set up is left alone; while the other
  // side traces, the program's finalize drains and gpuattr's flushes nothing (Forced flushes).
  if (initialized) {
    if (!OtherSideTracing(which)) {
      real_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    } else if (which == MuxSide::kProgram) {
      Drain();
    }
  }
  Teardown teardown;
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    ResetSide(which);
    bool all_idle = true;
    for (const Side& other : sides_) all_idle = all_idle && Idle(other);
    if (all_idle) teardown = EndRealSessionLocked(true);
  }
  WaitForOtherThreadsCallbacks();
  RunTeardown(teardown);
  return CUPTI_SUCCESS;
}

}  // namespace gpuattr::inject
