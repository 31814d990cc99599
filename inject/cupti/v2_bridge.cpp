#include "cupti/v2_bridge.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/clock.h"

namespace gpuattr::inject {
namespace {

constexpr const char* kProgramSubscriberName = "the program's V1 client (via gpuattr)";
constexpr const char* kProbeName = "gpuattr probe";

template <MuxSide kSide>
struct BufferCallbacks {
  static void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records,
                               cupti_v2::BufferRequestInfo* /*info*/) {
    Bridge().Request(kSide, buffer, size, max_records);
  }
  static void CUPTIAPI Complete(uint8_t* buffer, size_t size, size_t valid_size,
                                cupti_v2::BufferCompleteInfo* /*info*/) {
    Bridge().Complete(kSide, buffer, size, valid_size);
  }
};

}  // namespace

bool V2Bridge::Open(const CuptiApi& real, const CuptiV2Api& v2, CUpti_CallbackFunc gpuattr_callback,
                    void* gpuattr_userdata) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  real_ = real;
  v2_ = v2;
  CUpti_SubscriberHandle gpuattr = nullptr;
  if (SubscribeV2("gpuattr", gpuattr_callback, gpuattr_userdata, &gpuattr, nullptr, 0) !=
      CUPTI_SUCCESS) {
    return false;
  }
  char first[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  uint64_t timestamp = 0;
  if (!Probe(first, sizeof(first)) || v2_.get_timestamp(gpuattr, &timestamp) != CUPTI_SUCCESS) {
    real_.cuptiUnsubscribe(gpuattr);
    return false;
  }
  side(MuxSide::kGpuattr).subscriber.store(gpuattr, std::memory_order_release);
  // The first subscriber is gpuattr unless someone subscribed before it.
  others_before_ = first[0] != '\0' && std::strcmp(first, "gpuattr") != 0;
  return true;
}

bool V2Bridge::Probe(char* first, size_t first_size) noexcept {
  CUpti_SubscriberHandle probe = nullptr;
  if (SubscribeV2(kProbeName, nullptr, nullptr, &probe, first, first_size) != CUPTI_SUCCESS) {
    return false;
  }
  real_.cuptiUnsubscribe(probe);
  return true;
}

CUptiResult V2Bridge::SubscribeV2(const char* name, CUpti_CallbackFunc callback, void* userdata,
                                  CUpti_SubscriberHandle* subscriber, char* first,
                                  size_t first_size) noexcept {
  cupti_v2::SubscriberParams params{};
  params.struct_size = cupti_v2::kSubscriberParamsSize;
  params.subscriber_name = name;
  params.old_subscriber_name = first;
  params.old_subscriber_size = first_size;
  params.allow_multiple_subscribers = 1;
  return v2_.subscribe(subscriber, callback, userdata, &params);
}

bool V2Bridge::Tracing(const Side& side) noexcept {
  for (const auto& word : side.kinds) {
    if (word.load(std::memory_order_acquire) != 0) return true;
  }
  return false;
}

CUpti_SubscriberHandle V2Bridge::SubscriberOf(MuxSide which) noexcept {
  Side& s = side(which);
  if (CUpti_SubscriberHandle held = s.subscriber.load(std::memory_order_acquire)) return held;
  if (which != MuxSide::kProgram) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  CUpti_SubscriberHandle made = s.subscriber.load(std::memory_order_acquire);
  if (made == nullptr &&
      SubscribeV2(kProgramSubscriberName, nullptr, nullptr, &made, nullptr, 0) == CUPTI_SUCCESS) {
    s.subscriber.store(made, std::memory_order_release);
  }
  return made;
}

CUptiResult V2Bridge::Subscribe(MuxSide which, CUpti_SubscriberHandle* subscriber,
                                CUpti_CallbackFunc callback, void* userdata,
                                CUpti_SubscriberParams* /*params*/) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  Side& s = side(which);
  std::lock_guard<std::mutex> lock(mu_);
  CUpti_SubscriberHandle held = s.subscriber.load(std::memory_order_acquire);
  if (held == nullptr) {
    const CUptiResult result = SubscribeV2("gpuattr", callback, userdata, &held, nullptr, 0);
    if (result != CUPTI_SUCCESS) return result;
    s.subscriber.store(held, std::memory_order_release);
  }
  *subscriber = held;
  return CUPTI_SUCCESS;
}

CUptiResult V2Bridge::Unsubscribe(MuxSide which, CUpti_SubscriberHandle subscriber) noexcept {
  if (subscriber == nullptr || subscriber != side(which).subscriber.load()) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  Drop(which);
  return CUPTI_SUCCESS;
}

void V2Bridge::Drop(MuxSide which) noexcept {
  Side& s = side(which);
  CUpti_SubscriberHandle subscriber = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    subscriber = s.subscriber.exchange(nullptr, std::memory_order_acq_rel);
  }
  if (subscriber == nullptr) return;
  for (uint32_t kind = 0; kind < kKinds; ++kind) {
    const uint64_t bit = uint64_t{1} << (kind % 64);
    if ((s.kinds[kind / 64].fetch_and(~bit) & bit) != 0) {
      v2_.disable(subscriber, static_cast<CUpti_ActivityKind>(kind), nullptr);
    }
  }
  real_.cuptiUnsubscribe(subscriber);
}

CUptiResult V2Bridge::RegisterBufferCallbacks(MuxSide which,
                                              CUpti_BuffersCallbackRequestFunc request,
                                              CUpti_BuffersCallbackCompleteFunc complete) noexcept {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_SubscriberHandle subscriber = SubscriberOf(which);
  if (subscriber == nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  Side& s = side(which);
  s.request.store(request, std::memory_order_release);
  s.complete.store(complete, std::memory_order_release);
  return which == MuxSide::kGpuattr
             ? v2_.register_callbacks(subscriber, &BufferCallbacks<MuxSide::kGpuattr>::Request,
                                      &BufferCallbacks<MuxSide::kGpuattr>::Complete)
             : v2_.register_callbacks(subscriber, &BufferCallbacks<MuxSide::kProgram>::Request,
                                      &BufferCallbacks<MuxSide::kProgram>::Complete);
}

CUptiResult V2Bridge::Enable(MuxSide which, CUpti_ActivityKind kind) noexcept {
  CUpti_SubscriberHandle subscriber = SubscriberOf(which);
  if (subscriber == nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  const CUptiResult result = v2_.enable(subscriber, kind, nullptr);
  if (result == CUPTI_SUCCESS && static_cast<uint32_t>(kind) < kKinds) {
    side(which).kinds[kind / 64].fetch_or(uint64_t{1} << (kind % 64));
  }
  return result;
}

CUptiResult V2Bridge::Disable(MuxSide which, CUpti_ActivityKind kind) noexcept {
  CUpti_SubscriberHandle subscriber = side(which).subscriber.load(std::memory_order_acquire);
  if (subscriber == nullptr) return CUPTI_SUCCESS;  // nothing of this side's is on
  if (static_cast<uint32_t>(kind) < kKinds) {
    side(which).kinds[kind / 64].fetch_and(~(uint64_t{1} << (kind % 64)));
  }
  return v2_.disable(subscriber, kind, nullptr);
}

CUptiResult V2Bridge::FlushAll(MuxSide which, uint32_t flag) noexcept {
  const MuxSide other = which == MuxSide::kGpuattr ? MuxSide::kProgram : MuxSide::kGpuattr;
  if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 && Tracing(side(other))) {
    return Drain(side(which));
  }
  return real_.cuptiActivityFlushAll(flag);
}

CUptiResult V2Bridge::Drain(const Side& s) noexcept {
  const uint64_t waiting_for = s.requested.load(std::memory_order_acquire);
  const uint64_t deadline = MonotonicNs() + kDrainNs;
  for (;;) {
    const CUptiResult result = real_.cuptiActivityFlushAll(0);
    if (result != CUPTI_SUCCESS) return result;
    if (s.completed.load(std::memory_order_acquire) >= waiting_for) return CUPTI_SUCCESS;
    if (MonotonicNs() > deadline) {
      return real_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

CUptiResult V2Bridge::GetNextRecord(MuxSide which, uint8_t* buffer, size_t valid_size,
                                    CUpti_Activity** record) noexcept {
  CUpti_SubscriberHandle subscriber = side(which).subscriber.load(std::memory_order_acquire);
  if (subscriber == nullptr) return real_.cuptiActivityGetNextRecord(buffer, valid_size, record);
  return v2_.get_next_record(subscriber, buffer, valid_size, record);
}

CUptiResult V2Bridge::GetNumDroppedRecords(MuxSide which, CUcontext context, uint32_t stream,
                                           size_t* dropped) noexcept {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_SubscriberHandle subscriber = side(which).subscriber.load(std::memory_order_acquire);
  *dropped = 0;
  if (subscriber == nullptr) return CUPTI_SUCCESS;
  return v2_.get_num_dropped_records(subscriber, context, stream, dropped);
}

CUptiResult V2Bridge::SetAttribute(MuxSide which, uint32_t attribute, void* value,
                                   size_t size) noexcept {
  CUpti_SubscriberHandle subscriber = SubscriberOf(which);
  if (subscriber == nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  return v2_.set_attribute(subscriber, static_cast<CUpti_ActivityAttribute>(attribute), &size,
                           value);
}

CUptiResult V2Bridge::RegisterTimestampCallback(MuxSide which,
                                                CUpti_TimestampCallbackFunc clock) noexcept {
  if (clock == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  return SetAttribute(which, cupti_v2::kAttrTimestampCallback, &clock, sizeof(clock));
}

CUptiResult V2Bridge::SetThreadIdType(MuxSide which, CUpti_ActivityThreadIdType type) noexcept {
  return SetAttribute(which, cupti_v2::kAttrThreadIdType, &type, sizeof(type));
}

CUptiResult V2Bridge::GetTimestamp(MuxSide which, uint64_t* timestamp) noexcept {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_SubscriberHandle subscriber = SubscriberOf(which);
  if (subscriber == nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  return v2_.get_timestamp(subscriber, timestamp);
}

CUptiResult V2Bridge::Finalize(MuxSide which) noexcept {
  // A side's own activity ends here. CUPTI would finalize with one subscriber left, and that one
  // is someone else's (the other side's, or a client's own): its session is not this side's to
  // end. Only a process with no other subscriber is finalized.
  Drop(which);
  const MuxSide other = which == MuxSide::kGpuattr ? MuxSide::kProgram : MuxSide::kGpuattr;
  if (side(other).subscriber.load(std::memory_order_acquire) != nullptr || OthersSubscribed()) {
    return CUPTI_SUCCESS;
  }
  return real_.cuptiFinalize();
}

bool V2Bridge::OthersSubscribed() noexcept {
  // A refused probe means someone holds CUPTI alone; a probe let in hears of another first one.
  char first[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  if (!Probe(first, sizeof(first))) return true;
  return first[0] != '\0' && std::strcmp(first, kProbeName) != 0;
}

void V2Bridge::Request(MuxSide which, uint8_t** buffer, size_t* size,
                       size_t* max_records) noexcept {
  Side& s = side(which);
  CUpti_BuffersCallbackRequestFunc request = s.request.load(std::memory_order_acquire);
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (request != nullptr) request(buffer, size, max_records);
  if (*buffer != nullptr) s.requested.fetch_add(1, std::memory_order_acq_rel);
}

void V2Bridge::Complete(MuxSide which, uint8_t* buffer, size_t size, size_t valid_size) noexcept {
  Side& s = side(which);
  if (CUpti_BuffersCallbackCompleteFunc complete = s.complete.load(std::memory_order_acquire)) {
    complete(nullptr, 0, buffer, size, valid_size);  // buffers are global since CUDA 6.0
  }
  s.completed.fetch_add(1, std::memory_order_acq_rel);
}

V2Bridge& Bridge() noexcept {
  static V2Bridge* bridge = new V2Bridge();  // never destroyed: CUPTI calls in until exit
  return *bridge;
}

}  // namespace gpuattr::inject
