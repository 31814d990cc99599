// CuptiMux: one real CUPTI session shared by two virtual ones, so that the traced program's own
// CUPTI client (Kineto inside torch.profiler, or any other) keeps working beside gpuattr on a
// CUPTI that allows one subscriber and whose activity API is process-global (CUDA 13.0 to 13.2,
// cupti-notes §6; issue 43).
//
// Sides. kGpuattr is the shim: its CuptiApi table (subscriber.h) is bound to this side
// (mux_faces.h). kProgram is everyone else in the process: CUPTI's own exports are redirected to
// that side (export_redirect.h), so a client that binds CUPTI by linking or by dlopen and dlsym
// reaches it. Each side sees a CUDA 13.0 CUPTI of its own, as if the other were not there:
//   - one subscriber slot (a second subscribe on the same side fails with 39, naming the first);
//   - its own API/resource/state callbacks, for exactly the (domain, cbid) pairs it enabled, each
//     with its own per-invocation correlationData slot;
//   - its own buffer callbacks, receiving a copy of every activity record of the kinds it enabled,
//     for the activities launched while it had that kind on, in buffers from its own request
//     callback, completed on its own completion callback, with its own dropped-record count;
//   - its own timestamp callback (records are converted into its clock, below), thread-id type,
//     cuptiGetTimestamp and cuptiFinalize.
// A side's cuptiUnsubscribe or cuptiFinalize ends only that side; the real session is finalized
// only when the other side holds nothing either.
//
// The real session. Subscribed as "gpuattr" when a side first needs it; it carries the union of
// what the sides enabled (possibly more: a disable reaches CUPTI only once neither side wants the
// callback or kind), the multiplexer's own clock as CUPTI's timestamp callback (registered before
// any kind is enabled), and the multiplexer's buffer callbacks. It also keeps the launch callbacks
// of cbid_table.h on, to know the highest correlation id handed out so far (the watermark).
//
// "Launched while on". A side's Enable(kind) opens a window at the watermark and Disable closes
// it there: a record with a correlation id belongs to the side when it falls in one of the side's
// windows for its kind (a CUPTI that was off for that side would not have recorded it). Records
// without a correlation id go to a side whose kind is on when the buffer is delivered.
//
// Forced flushes. CUPTI's forced flush hands out the records of work still running with start =
// end = 0 (cupti-notes §4.5), and CUPTI never reports them again: one side's forced flush would
// cut the other side's records of its in-flight work. So while the other side traces, the
// gpuattr side's forced flush drains instead — non-forced flushes, which hand out every buffer
// whose records are all complete, until each real buffer outstanding when it began has come back,
// for at most kDrainNs, and only then a forced one — and its finalize flushes nothing (the shim
// drained on its flush thread just before). The program's forced flush stays forced, as CUPTI
// alone would do it (torch.profiler synchronizes the device first); its finalize drains, as a
// real cuptiFinalize synchronizes the device anyway.
//
// Clocks. Real records carry the multiplexer's clock. A side whose timestamp callback is that
// clock gets the times unchanged; a side without one gets CUPTI's default clock (CLOCK_REALTIME),
// one offset per delivered buffer, as CUPTI converts device times once per buffer; a side with
// another callback gets a linear map through the (ours, its) pair sampled at registration and one
// sampled per buffer. Times of record kinds mux_records.h does not know are not converted.
//
// The launch path. Without a program callback for an API call's ENTER, Dispatch hands CUPTI's own
// callback data and correlation slot to the shim and keeps nothing (the cost of the shim before
// the multiplexer, docs/benchmarks.md); with one, each side gets a copy of the data and a slot of
// its own from a per-thread stack, and the level is kept, tagged, in CUPTI's slot for the EXIT.
//
// Threads. Dispatch and the buffer callbacks run on CUPTI's threads with no lock held while any
// side's callback runs. Locks, outer to inner: session_mu_ serializes the functions that change
// the sessions (it is held across the real CUPTI's subscribe, enable and disable calls, which may
// complete buffers on the calling thread, but never across the real cuptiUnsubscribe or
// cuptiFinalize, which wait for callbacks running on other threads); data_mu_ (a leaf) guards
// what a buffer's distribution reads (windows, clocks), and spare_mu_ (a leaf) the spare real
// buffers. The program's Unsubscribe and Finalize wait for its callbacks running on other threads
// to return, as the fake CUPTI's do; the shim's callbacks are never freed.
#ifndef GPUATTR_INJECT_CUPTI_CUPTI_MUX_H_
#define GPUATTR_INJECT_CUPTI_CUPTI_MUX_H_

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "cupti/cupti_api.h"

namespace gpuattr::inject {

enum class MuxSide : uint8_t { kGpuattr = 0, kProgram = 1 };

class CuptiMux {
 public:
  static constexpr size_t kSides = 2;
  static constexpr uint32_t kDomains = 8;          // CUpti_CallbackDomain values below this
  static constexpr uint32_t kCbids = 2048;         // callback ids below this, per domain
  static constexpr uint32_t kKinds = 128;          // activity kinds below this
  static constexpr size_t kWindows = 4;            // correlation windows kept per side and kind
  static constexpr uint64_t kDrainNs = 200000000;  // a drain's limit before it forces

  // `real`: CUPTI's own functions. `clock`: the timestamp callback the real session gets.
  void Bind(const CuptiApi& real, CUpti_TimestampCallbackFunc clock) noexcept;
  bool bound() const noexcept { return bound_.load(std::memory_order_acquire); }
  const CuptiApi& real() const noexcept { return real_; }

  // Opens the real session now (a late attach probing whether another client holds CUPTI).
  CUptiResult OpenRealSession() noexcept;

  // The callback API, per side (CUPTI's semantics, handles are the side's own).
  CUptiResult Subscribe(MuxSide side, CUpti_SubscriberHandle* subscriber,
                        CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) noexcept;
  CUptiResult Unsubscribe(MuxSide side, CUpti_SubscriberHandle subscriber) noexcept;
  CUptiResult EnableCallback(MuxSide side, uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept;
  CUptiResult EnableDomain(MuxSide side, uint32_t enable, CUpti_SubscriberHandle subscriber,
                           CUpti_CallbackDomain domain) noexcept;
  CUptiResult EnableAllDomains(MuxSide side, uint32_t enable,
                               CUpti_SubscriberHandle subscriber) noexcept;
  CUptiResult GetCallbackState(MuxSide side, uint32_t* enable, CUpti_SubscriberHandle subscriber,
                               CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept;
  CUptiResult Finalize(MuxSide side) noexcept;

  // The activity API, per side.
  CUptiResult RegisterBufferCallbacks(MuxSide side, CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete) noexcept;
  CUptiResult RegisterTimestampCallback(MuxSide side, CUpti_TimestampCallbackFunc clock) noexcept;
  CUptiResult GetTimestamp(MuxSide side, uint64_t* timestamp) noexcept;
  CUptiResult SetThreadIdType(MuxSide side, CUpti_ActivityThreadIdType type) noexcept;
  CUptiResult GetThreadIdType(MuxSide side, CUpti_ActivityThreadIdType* type) noexcept;
  CUptiResult Enable(MuxSide side, CUpti_ActivityKind kind) noexcept;
  CUptiResult Disable(MuxSide side, CUpti_ActivityKind kind) noexcept;
  CUptiResult FlushAll(MuxSide side, uint32_t flag) noexcept;
  CUptiResult GetNumDroppedRecords(MuxSide side, CUcontext context, uint32_t stream,
                                   size_t* dropped) noexcept;

  // The real session's callbacks (public for the plain functions CUPTI calls).
  void Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept;
  void RequestRealBuffer(uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
  void CompleteRealBuffer(uint8_t* buffer, size_t valid_size) noexcept;
  void DistributeRealBuffer(uint8_t* buffer, size_t valid_size) noexcept;

  // For tests and diagnostics: the highest correlation id seen at an API entry.
  uint32_t watermark() const noexcept { return watermark_.load(std::memory_order_acquire); }

  struct Window {
    uint32_t after;  // correlation ids > after ...
    uint32_t upto;   // ... and <= upto (UINT32_MAX while open)
  };
  struct KindWindows {
    Window windows[kWindows];
    uint8_t count = 0;
    bool open() const noexcept { return count > 0 && windows[count - 1].upto == UINT32_MAX; }
  };

 private:
  struct Side {
    // Written under session_mu_, read by Dispatch without a lock.
    std::atomic<CUpti_CallbackFunc> callback{nullptr};
    std::atomic<void*> userdata{nullptr};
    std::atomic<uint64_t> cbids[kDomains][kCbids / 64] = {};
    std::atomic<CUpti_BuffersCallbackRequestFunc> request{nullptr};
    std::atomic<CUpti_BuffersCallbackCompleteFunc> complete{nullptr};
    std::atomic<size_t> dropped{0};
    // Under session_mu_.
    bool subscribed = false;
    char name[64] = {};
    CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    // Under data_mu_ (written under session_mu_ too, but for the clock).
    CUpti_TimestampCallbackFunc clock = nullptr;
    uint64_t clock_anchor_ours = 0;
    uint64_t clock_anchor_theirs = 0;
    KindWindows kinds[kKinds];
  };

  Side& side(MuxSide which) noexcept { return sides_[static_cast<size_t>(which)]; }
  CUpti_SubscriberHandle HandleOf(MuxSide which) noexcept;
  bool Wants(const Side& side, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const noexcept;
  bool AnySideWants(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const noexcept;
  static bool Tracing(const Side& side) noexcept;  // some kind open
  bool Idle(const Side& side) const noexcept;
  // What ending the real session leaves to do once session_mu_ is released.
  struct Teardown {
    CUpti_SubscriberHandle subscriber = nullptr;
    bool finalize = false;
  };
  CUptiResult EnsureRealSessionLocked(char* holder, size_t holder_size) noexcept;
  Teardown EndRealSessionLocked(bool finalize) noexcept;
  void RunTeardown(const Teardown& teardown) noexcept;
  void SetCallbackLocked(Side& side, bool enable, CUpti_CallbackDomain domain,
                         CUpti_CallbackId cbid) noexcept;
  void ForgetCallbacksLocked(Side& side) noexcept;
  void CloseKindLocked(Side& side, uint32_t kind) noexcept;
  void WaitForOtherThreadsCallbacks() noexcept;
  void InvokeProgram(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept;
  bool OtherSideTracing(MuxSide which) noexcept;
  CUptiResult Drain() noexcept;
  void ResetSide(MuxSide which) noexcept;

  std::atomic<bool> bound_{false};
  CuptiApi real_;
  CUpti_TimestampCallbackFunc clock_ = nullptr;

  std::mutex session_mu_;
  std::mutex data_mu_;
  CUpti_SubscriberHandle real_subscriber_ = nullptr;  // under session_mu_
  bool real_initialized_ = false;  // under session_mu_: subscribed since the last cuptiFinalize
  uint32_t real_kind_users_[kKinds] = {};  // under session_mu_: sides with the kind open
  Side sides_[kSides];

  // Real buffers come back once distributed; a few are kept for the next request.
  static constexpr size_t kRealBufferBytes = size_t{1} << 20;
  static constexpr size_t kSpareBuffers = 8;
  static constexpr size_t kMaxOutstanding = 256;
  std::mutex spare_mu_;  // a leaf
  uint8_t* spare_[kSpareBuffers] = {};
  size_t spare_count_ = 0;
  uint8_t* outstanding_[kMaxOutstanding] = {};  // handed to CUPTI, not yet back (a drain's view)
  size_t outstanding_count_ = 0;

  std::atomic<uint32_t> watermark_{0};
  std::atomic<int64_t> program_callbacks_running_{0};
};

// The process's multiplexer.
CuptiMux& Mux() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_CUPTI_MUX_H_
