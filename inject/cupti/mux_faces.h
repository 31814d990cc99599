// The two faces of the CUPTI multiplexer (cupti_mux.h): plain functions with CUPTI's signatures,
// each bound to one side.
//
// GpuattrFace: the shim's CuptiApi table. The functions that keep per-client state in CUPTI
// (subscribe, callbacks, buffer callbacks, kinds, clock, thread-id type, flush, drops, finalize)
// go to the kGpuattr side; the stateless ones (version, result strings, record walking, graph
// ids) stay CUPTI's own.
//
// InstallProgramFace: redirects the same stateful exports of the loaded CUPTI, plus those only
// other clients call (cuptiSubscribe, cuptiEnableDomain, cuptiEnableAllDomains,
// cuptiGetCallbackState, cuptiGetThreadIdType, cuptiGetTimestamp), to the kProgram side
// (export_redirect.h), so that every other CUPTI client in the process reaches it however it
// bound CUPTI. Everything else (external correlation, attributes, flush period, the profiling and
// PC sampling APIs) stays CUPTI's own and is shared as CUPTI shares it.
//
// Both run once, at setup, after Mux().Bind. Where CUPTI offers several subscribers (v2_bridge.h),
// the bridge's faces replace them: BridgeGpuattrFace sends the shim's activity calls to its own
// V2 subscriber, and InstallBridgeProgramFace redirects only the V1 activity functions (subscribe
// and the callback API stay CUPTI's own, per subscriber there).
#ifndef GPUATTR_INJECT_CUPTI_MUX_FACES_H_
#define GPUATTR_INJECT_CUPTI_MUX_FACES_H_

#include "cupti/cupti_api.h"
#include "cupti/export_redirect.h"

namespace gpuattr::inject {

CuptiApi GpuattrFace(const CuptiApi& real) noexcept;

// `library`: the dlopen handle CUPTI was bound through.
RedirectOutcome InstallProgramFace(void* library) noexcept;

CuptiApi BridgeGpuattrFace(const CuptiApi& real) noexcept;
RedirectOutcome InstallBridgeProgramFace(void* library) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_MUX_FACES_H_
