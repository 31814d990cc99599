// CuptiMux, the activity API: kinds and their windows, clocks, and the distribution of every real
// buffer into copies for the sides (cupti_mux.h).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "cupti/cupti_mux.h"
#include "cupti/mux_records.h"
#include "runtime/clock.h"

namespace gpuattr::inject {
namespace {

constexpr uint64_t kMinRateSpanNs = 1000000;  // shorter spans estimate a rate too coarsely

bool Belongs(const CuptiMux::KindWindows& kind, bool has_correlation, uint32_t correlation) {
  if (!has_correlation) return kind.open();
  for (uint8_t i = 0; i < kind.count; ++i) {
    if (correlation > kind.windows[i].after && correlation <= kind.windows[i].upto) return true;
  }
  return false;
}

// One side's share of one real buffer.
struct Delivery {
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc side_clock = nullptr;
  uint64_t anchor_ours = 0;
  uint64_t anchor_theirs = 0;
  ClockMap clock;
  CuptiMux::KindWindows kinds[CuptiMux::kKinds];
  uint8_t* out = nullptr;
  size_t out_size = 0;
  size_t used = 0;
  size_t dropped = 0;

  void CompleteOut() {
    if (out != nullptr) complete(nullptr, 0, out, out_size, used);
    out = nullptr;
  }
  // Room for `bytes` more in a buffer of the side's own, asking it for a new one when needed.
  bool Reserve(size_t bytes) {
    if (out != nullptr && used + bytes <= out_size) return true;
    CompleteOut();
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    request(&buffer, &size, &max_records);
    if (buffer == nullptr) return false;
    out = buffer;
    out_size = size;
    used = 0;
    return bytes <= size;
  }
  void Copy(const CUpti_Activity* record, size_t bytes) {
    auto* copy = reinterpret_cast<CUpti_Activity*>(out + used);
    memcpy(copy, record, bytes);
    MapRecordTimes(copy, clock);
    used += bytes;
  }
};

ClockMap MapInto(CUpti_TimestampCallbackFunc mux_clock, const Delivery& delivery) {
  ClockMap map;
  if (delivery.side_clock == mux_clock) return map;
  map.identity = false;
  map.anchor_ours = mux_clock();
  if (delivery.side_clock == nullptr) {
    map.anchor_theirs = RealtimeNs();  // CUPTI's default clock
    return map;
  }
  map.anchor_theirs = delivery.side_clock();
  const uint64_t span = map.anchor_ours - delivery.anchor_ours;
  if (delivery.anchor_ours != 0 && span >= kMinRateSpanNs) {
    map.rate =
        static_cast<double>(map.anchor_theirs - delivery.anchor_theirs) / static_cast<double>(span);
  }
  return map;
}

}  // namespace

CUptiResult CuptiMux::RegisterBufferCallbacks(MuxSide which,
                                              CUpti_BuffersCallbackRequestFunc request,
                                              CUpti_BuffersCallbackCompleteFunc complete) noexcept {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(session_mu_);
  side(which).request.store(request, std::memory_order_release);
  side(which).complete.store(complete, std::memory_order_release);
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::RegisterTimestampCallback(MuxSide which,
                                                CUpti_TimestampCallbackFunc clock) noexcept {
  const uint64_t ours = clock != nullptr && clock_ != nullptr ? clock_() : 0;
  const uint64_t theirs = clock != nullptr ? clock() : 0;
  std::lock_guard<std::mutex> lock(data_mu_);
  Side& s = side(which);
  s.clock = clock;
  s.clock_anchor_ours = ours;
  s.clock_anchor_theirs = theirs;
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::GetTimestamp(MuxSide which, uint64_t* timestamp) noexcept {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  CUpti_TimestampCallbackFunc clock = nullptr;
  {
    std::lock_guard<std::mutex> lock(data_mu_);
    clock = side(which).clock;
  }
  *timestamp = clock != nullptr ? clock() : RealtimeNs();
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::SetThreadIdType(MuxSide which, CUpti_ActivityThreadIdType type) noexcept {
  std::lock_guard<std::mutex> lock(session_mu_);
  // The real setting is gpuattr's; the program's is kept for it to read back (its API records
  // carry gpuattr's thread ids: CUPTI cannot record both).
  if (which == MuxSide::kGpuattr) {
    const CUptiResult result = real_.cuptiSetThreadIdType(type);
    if (result != CUPTI_SUCCESS) return result;
  }
  side(which).thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::GetThreadIdType(MuxSide which, CUpti_ActivityThreadIdType* type) noexcept {
  if (type == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(session_mu_);
  *type = side(which).thread_id_type;
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::Enable(MuxSide which, CUpti_ActivityKind kind) noexcept {
  if (static_cast<uint32_t>(kind) >= kKinds) return CUPTI_ERROR_INVALID_KIND;
  std::lock_guard<std::mutex> lock(session_mu_);
  KindWindows& windows = side(which).kinds[kind];
  if (windows.open()) return CUPTI_SUCCESS;
  CUptiResult result = EnsureRealSessionLocked(nullptr, 0);
  if (result != CUPTI_SUCCESS) return result;
  if (real_kind_users_[kind] == 0) {
    result = real_.cuptiActivityEnable(kind);
    if (result != CUPTI_SUCCESS) return result;
  }
  ++real_kind_users_[kind];
  std::lock_guard<std::mutex> data_lock(data_mu_);
  if (windows.count == kWindows) {
    memmove(&windows.windows[0], &windows.windows[1], sizeof(Window) * (kWindows - 1));
    --windows.count;
  }
  windows.windows[windows.count++] = {watermark_.load(std::memory_order_acquire), UINT32_MAX};
  return CUPTI_SUCCESS;
}

CUptiResult CuptiMux::Disable(MuxSide which, CUpti_ActivityKind kind) noexcept {
  if (static_cast<uint32_t>(kind) >= kKinds) return CUPTI_ERROR_INVALID_KIND;
  std::lock_guard<std::mutex> lock(session_mu_);
  CloseKindLocked(side(which), kind);
  return CUPTI_SUCCESS;
}

void CuptiMux::CloseKindLocked(Side& s, uint32_t kind) noexcept {
  {
    std::lock_guard<std::mutex> data_lock(data_mu_);
    KindWindows& windows = s.kinds[kind];
    if (!windows.open()) return;
    windows.windows[windows.count - 1].upto = watermark_.load(std::memory_order_acquire);
  }
  // CUPTI may complete buffers here, on this thread: data_mu_ is free for their distribution.
  if (real_kind_users_[kind] > 0 && --real_kind_users_[kind] == 0 && real_subscriber_ != nullptr) {
    real_.cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind));
  }
}

CUptiResult CuptiMux::FlushAll(MuxSide which, uint32_t flag) noexcept {
  // CUPTI's buffers hold both sides' records: flushing them delivers to both, which only makes
  // the other side's delivery earlier; but forcing would cut the other side's in-flight records
  // (cupti_mux.h, Forced flushes).
  if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 && which == MuxSide::kGpuattr &&
      OtherSideTracing(which)) {
    return Drain();
  }
  return real_.cuptiActivityFlushAll(flag);
}

bool CuptiMux::OtherSideTracing(MuxSide which) noexcept {
  std::lock_guard<std::mutex> lock(data_mu_);
  for (size_t index = 0; index < kSides; ++index) {
    if (index != static_cast<size_t>(which) && Tracing(sides_[index])) return true;
  }
  return false;
}

CUptiResult CuptiMux::Drain() noexcept {
  uint8_t* waiting[kMaxOutstanding];
  size_t waiting_count = 0;
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    waiting_count = outstanding_count_;
    memcpy(waiting, outstanding_, sizeof(uint8_t*) * waiting_count);
  }
  const uint64_t deadline = MonotonicNs() + kDrainNs;
  for (;;) {
    const CUptiResult result = real_.cuptiActivityFlushAll(0);
    if (result != CUPTI_SUCCESS) return result;
    bool back = true;
    {
      std::lock_guard<std::mutex> lock(spare_mu_);
      for (size_t i = 0; i < waiting_count && back; ++i) {
        for (size_t j = 0; j < outstanding_count_ && back; ++j)
          back = outstanding_[j] != waiting[i];
      }
    }
    if (back) return CUPTI_SUCCESS;
    if (MonotonicNs() > deadline)
      return real_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

CUptiResult CuptiMux::GetNumDroppedRecords(MuxSide which, CUcontext context, uint32_t stream,
                                           size_t* dropped) noexcept {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t real_dropped = 0;
  const CUptiResult result =
      real_.cuptiActivityGetNumDroppedRecords(context, stream, &real_dropped);
  if (result != CUPTI_SUCCESS) return result;
  // CUPTI's own drops (resetting its counter) are the loss of every side that was tracing.
  if (real_dropped > 0) {
    std::lock_guard<std::mutex> lock(data_mu_);
    for (Side& s : sides_) {
      bool tracing = false;
      for (const KindWindows& kind : s.kinds) tracing = tracing || kind.count > 0;
      if (tracing) s.dropped.fetch_add(real_dropped, std::memory_order_relaxed);
    }
  }
  *dropped = side(which).dropped.exchange(0, std::memory_order_relaxed);
  return CUPTI_SUCCESS;
}

void CuptiMux::RequestRealBuffer(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *max_records = 0;
  uint8_t* spare = nullptr;
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (spare_count_ > 0) spare = spare_[--spare_count_];
  }
  if (spare == nullptr) spare = static_cast<uint8_t*>(std::aligned_alloc(8, kRealBufferBytes));
  if (spare != nullptr) {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (outstanding_count_ < kMaxOutstanding) outstanding_[outstanding_count_++] = spare;
  }
  *buffer = spare;
  *size = spare != nullptr ? kRealBufferBytes : 0;
}

void CuptiMux::CompleteRealBuffer(uint8_t* buffer, size_t valid_size) noexcept {
  if (buffer == nullptr) return;
  DistributeRealBuffer(buffer, valid_size);
  std::lock_guard<std::mutex> lock(spare_mu_);
  // Back only now, distributed: a drain waiting for it then finds its records delivered.
  for (size_t i = 0; i < outstanding_count_; ++i) {
    if (outstanding_[i] == buffer) {
      outstanding_[i] = outstanding_[--outstanding_count_];
      break;
    }
  }
  if (spare_count_ < kSpareBuffers) {
    spare_[spare_count_++] = buffer;
  } else {
    std::free(buffer);
  }
}

void CuptiMux::DistributeRealBuffer(uint8_t* buffer, size_t valid_size) noexcept {
  Delivery deliveries[kSides];
  {
    std::lock_guard<std::mutex> lock(data_mu_);
    for (size_t i = 0; i < kSides; ++i) {
      const Side& s = sides_[i];
      Delivery& d = deliveries[i];
      d.request = s.request.load(std::memory_order_acquire);
      d.complete = s.complete.load(std::memory_order_acquire);
      d.side_clock = s.clock;
      d.anchor_ours = s.clock_anchor_ours;
      d.anchor_theirs = s.clock_anchor_theirs;
      memcpy(d.kinds, s.kinds, sizeof(d.kinds));
    }
  }
  for (Delivery& d : deliveries) d.clock = MapInto(clock_, d);

  CUpti_Activity* record = nullptr;
  CUptiResult at = real_.cuptiActivityGetNextRecord(buffer, valid_size, &record);
  while (at == CUPTI_SUCCESS) {
    CUpti_Activity* next = record;
    at = real_.cuptiActivityGetNextRecord(buffer, valid_size, &next);
    const auto* begin = reinterpret_cast<const uint8_t*>(record);
    const size_t bytes = at == CUPTI_SUCCESS ? reinterpret_cast<const uint8_t*>(next) - begin
                                             : buffer + valid_size - begin;
    uint32_t correlation = 0;
    const bool has_correlation = CorrelationOf(record, &correlation);
    const uint32_t kind = static_cast<uint32_t>(record->kind);
    for (Delivery& d : deliveries) {
      if (kind >= kKinds || !Belongs(d.kinds[kind], has_correlation, correlation)) continue;
      if (d.complete == nullptr || d.request == nullptr || !d.Reserve(bytes)) {
        ++d.dropped;
        continue;
      }
      d.Copy(record, bytes);
    }
    record = next;
  }
  for (size_t i = 0; i < kSides; ++i) {
    deliveries[i].CompleteOut();
    if (deliveries[i].dropped > 0) {
      sides_[i].dropped.fetch_add(deliveries[i].dropped, std::memory_order_relaxed);
    }
  }
}

}  // namespace gpuattr::inject
