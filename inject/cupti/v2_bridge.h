// V2Bridge: CUPTI 13.3+'s multi-subscriber mode behind CUDA 13.0's V1 activity API, so that
// gpuattr and the traced program's own CUPTI client each hold a real subscriber of their own and
// CUPTI itself keeps their activity apart (cupti-notes §6; issue 43). Where the mode is not on
// offer, the multiplexer (cupti_mux.h) shares one V1 session instead.
//
// Detection (Open), never a version guess: the V2 functions are bound (cupti_v2.h), "gpuattr"
// subscribes with allowMultipleSubscribers (the first subscriber decides for the process, so this
// runs when the shim binds CUPTI, before the program's client can subscribe), a second probe
// subscriber must succeed too, and cuptiGetTimestamp_v2 must answer for the first. Any refusal
// undoes what was done and the multiplexer takes over.
//
// Sides (MuxSide). Each side's V1 activity calls go to its own V2 subscriber: kGpuattr's is the
// one Open kept (the shim's CuptiApi table, mux_faces.h); kProgram's is made at the program's
// first V1 activity call (its V1 names are redirected, mux_faces.h, as the multiplexer's are,
// because CUPTI answers a process that mixes V1 and V2 activity calls with 39).
// A V2 client in the program keeps calling CUPTI directly and gets a subscriber of its own from
// CUPTI. The callback API is per subscriber in CUPTI already and is not bridged.
//
// Finalize ends the side's own activity and subscriber; CUPTI itself is finalized only when no
// other subscriber is left (the other side's, or one a client made directly: a probe subscriber
// finds out, as CUPTI names the first subscriber to a later one), since with one left CUPTI would
// finalize it too.
//
// What CUPTI still shares: cuptiActivityFlushAll flushes every subscriber's buffers with the same
// flag. A forced flush hands out the records of work still running as start = end = 0, so a
// side's forced flush drains instead while the other side traces (non-forced flushes until the
// side's own buffers are all back, at most kDrainNs, then forced), as the multiplexer's does. A
// V2 client's own forced flush is beyond reach, as it is with two tools on CUPTI alone.
//
// Threads: every function may be called from any thread. mu_ (a leaf) serializes making and
// dropping subscribers; it is never held across a real CUPTI call that can deliver buffers.
#ifndef GPUATTR_INJECT_CUPTI_V2_BRIDGE_H_
#define GPUATTR_INJECT_CUPTI_V2_BRIDGE_H_

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "cupti/cupti_api.h"
#include "cupti/cupti_mux.h"
#include "cupti/cupti_v2.h"

namespace gpuattr::inject {

class V2Bridge {
 public:
  static constexpr uint32_t kKinds = 128;          // activity kinds below this
  static constexpr uint64_t kDrainNs = 200000000;  // a drain's limit before it forces

  // Detects the mode (see above) and keeps gpuattr's subscriber, with `gpuattr_callback`.
  bool Open(const CuptiApi& real, const CuptiV2Api& v2, CUpti_CallbackFunc gpuattr_callback,
            void* gpuattr_userdata) noexcept;
  // Whether another client had subscribed before Open (CUPTI named it the first subscriber).
  bool others_before() const noexcept { return others_before_; }

  // V1 functions, per side.
  // `params` is not read: gpuattr's subscriber is always "gpuattr", allowing several.
  CUptiResult Subscribe(MuxSide side, CUpti_SubscriberHandle* subscriber,
                        CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) noexcept;
  CUptiResult Unsubscribe(MuxSide side, CUpti_SubscriberHandle subscriber) noexcept;
  CUptiResult RegisterBufferCallbacks(MuxSide side, CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete) noexcept;
  CUptiResult Enable(MuxSide side, CUpti_ActivityKind kind) noexcept;
  CUptiResult Disable(MuxSide side, CUpti_ActivityKind kind) noexcept;
  CUptiResult FlushAll(MuxSide side, uint32_t flag) noexcept;
  CUptiResult GetNextRecord(MuxSide side, uint8_t* buffer, size_t valid_size,
                            CUpti_Activity** record) noexcept;
  CUptiResult GetNumDroppedRecords(MuxSide side, CUcontext context, uint32_t stream,
                                   size_t* dropped) noexcept;
  CUptiResult RegisterTimestampCallback(MuxSide side, CUpti_TimestampCallbackFunc clock) noexcept;
  CUptiResult SetThreadIdType(MuxSide side, CUpti_ActivityThreadIdType type) noexcept;
  CUptiResult GetTimestamp(MuxSide side, uint64_t* timestamp) noexcept;
  CUptiResult Finalize(MuxSide side) noexcept;

  // CUPTI's V2 buffer callbacks, per side (public for the plain functions CUPTI calls).
  void Request(MuxSide side, uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
  void Complete(MuxSide side, uint8_t* buffer, size_t size, size_t valid_size) noexcept;

 private:
  struct Side {
    std::atomic<CUpti_SubscriberHandle> subscriber{nullptr};
    std::atomic<CUpti_BuffersCallbackRequestFunc> request{nullptr};
    std::atomic<CUpti_BuffersCallbackCompleteFunc> complete{nullptr};
    std::atomic<uint64_t> requested{0};  // buffers handed to CUPTI ...
    std::atomic<uint64_t> completed{0};  // ... and handed back
    std::atomic<uint64_t> kinds[kKinds / 64] = {};
  };

  Side& side(MuxSide which) noexcept { return sides_[static_cast<size_t>(which)]; }
  static bool Tracing(const Side& side) noexcept;
  // The side's subscriber; the program's is made on first use. Null when CUPTI refused.
  CUpti_SubscriberHandle SubscriberOf(MuxSide which) noexcept;
  // `first` (may be null): where CUPTI writes the first subscriber's name.
  CUptiResult SubscribeV2(const char* name, CUpti_CallbackFunc callback, void* userdata,
                          CUpti_SubscriberHandle* subscriber, char* first,
                          size_t first_size) noexcept;
  // Disables what the side enabled and unsubscribes it, outside mu_.
  void Drop(MuxSide which) noexcept;
  CUptiResult SetAttribute(MuxSide which, uint32_t attribute, void* value, size_t size) noexcept;
  CUptiResult Drain(const Side& side) noexcept;
  // Subscribes a probe and unsubscribes it: false when CUPTI refused it. `first` gets the name
  // CUPTI gives the first subscriber (to a later one, where several are allowed).
  bool Probe(char* first, size_t first_size) noexcept;
  // Whether CUPTI has a subscriber this bridge did not make.
  bool OthersSubscribed() noexcept;

  bool others_before_ = false;  // written by Open
  CuptiApi real_;
  CuptiV2Api v2_;
  std::mutex mu_;
  Side sides_[CuptiMux::kSides];
};

V2Bridge& Bridge() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_V2_BRIDGE_H_
