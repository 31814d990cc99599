// The CUPTI side of the shim: setup in InitializeInjection, the callback switchboard, and the
// activity-buffer callbacks.
//
// Setup order (each step's failure is a Refusal; the process runs on, NVTX-only):
//   bind (dlopen) -> cuptiGetVersion -> cuptiSubscribe_v2("gpuattr")        [39: subscriber
//   conflict, naming the holder; anything else: cupti_unavailable] -> cuptiSetThreadIdType(SYSTEM)
//   -> cuptiActivityRegisterTimestampCallback(the record clock), before anything is enabled ->
//   cuptiActivityRegisterCallbacks -> enable CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET (DEVICE
//   best effort) -> ENTER/EXIT callbacks per CBID (cbid_table.h) -> resource GRAPHNODE_CREATED,
//   GRAPHNODE_CLONED, CONTEXT_DESTROY_STARTING -> state FATAL_ERROR -> CuptiState(0).
// A failure after subscribing disables what was enabled and unsubscribes, freeing the slot.
//
// API callbacks (runtime and driver domains) run on the app thread making the call. They keep,
// per thread, the depth of open traced runtime calls: a driver callback while a traced runtime
// call is open is *nested* (CUPTI gives it the runtime call's correlation id) and produces no
// record at all — one ApiEnter/ApiExit pair per outermost call (kApiFlagNested is never sent).
// ENTER's per-invocation correlationData slot remembers what ENTER did, so an EXIT whose ENTER
// was not seen (CUPTI subscribed mid-call) is ignored. Graph instantiate/clone calls produce no
// record; they only make GRAPHNODE_CREATED callbacks inside them be skipped (the clones are
// reported by GRAPHNODE_CLONED), as NVIDIA's cuda_graphs_trace sample does.
//
// Hot-path rules (exemplars §9.6): callbacks write one record into the thread's ring; no lock,
// no malloc, no syscall. CONTEXT_DESTROY_STARTING flushes CUPTI opportunistically (never from
// STREAM_DESTROY_STARTING, which deadlocks). FATAL_ERROR makes the shim stop calling CUPTI.
#ifndef GPUATTR_INJECT_CUPTI_SUBSCRIBER_H_
#define GPUATTR_INJECT_CUPTI_SUBSCRIBER_H_

#include <cupti.h>

#include <cstdint>
#include <string_view>

#include "cupti/cupti_api.h"
#include "wire/protocol.h"

namespace gpuattr::inject {

// Binds CUPTI and runs the setup once per process image; later calls return at once.
// Runs on: the thread in InitializeInjection (inside cuInit).
void InitializeCupti() noexcept;

// Armed mode, at cuInit: binds CUPTI and shares it (cupti_mux.h) without subscribing, so that a
// client in the program that starts before the first capture window goes through the multiplexer
// and a window later joins it. Silent when no CUPTI could be loaded (the window reports it).
// Runs on: the thread in InitializeInjection.
void ShareCupti() noexcept;

// Armed mode: subscribes CUPTI for a capture window, binding it first if no window has yet.
// Returns 0 when CUPTI is active (already, or now); otherwise the setup's result, after the
// Refusal and CuptiState records went into the calling thread's ring.
// Runs on: the gpuattr-flush thread.
int32_t AttachCupti() noexcept;

// A Refusal record (the shim's cause in words, CUPTI's result or 0) into the calling thread's
// ring, ordered with its other records; also logged (GPUATTR_LOG). Runs on: any thread.
void EmitShimRefusal(wire::RefusalCode code, int32_t result, std::string_view cause) noexcept;

// A Device record (the device's ordinal and name) into the calling thread's ring, for devices
// named other than by CUPTI's device records (late_attach.h). Runs on: any thread.
void EmitShimDevice(uint32_t device, std::string_view name) noexcept;

// The setup sequence against an already bound table (tests pass a test double). `library` is
// the name CUPTI was loaded from, for CuptiState. Returns the CuptiState result (0: active).
int32_t SetupCuptiWith(const CuptiApi& api, const char* library) noexcept;

// The callbacks CUPTI is given, exposed so tests can call them as CUPTI would.
void CUPTIAPI CuptiCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data) noexcept;
void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid_size) noexcept;
// The clock CUPTI is given: RecordClockNs (runtime/clock.h).
uint64_t CUPTIAPI CuptiTimestamp() noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_SUBSCRIBER_H_
