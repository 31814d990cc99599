// The catalogue of refusals: why some data could not be collected, and what to do about it; and
// of advice: what would make a report say more.
//
// One table, owned here, maps each reason to its stable report code (DESIGN §3: `refusals[].code`)
// with a generic cause and a remedy. The shim sends wire::RefusalCode plus the concrete cause it
// saw; the collector adds reasons of its own (an import without device activity, an attach it
// could not make). Pure data; any thread.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_REFUSAL_CATALOGUE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_REFUSAL_CATALOGUE_H_

#include <cstdint>

namespace gpuattr::collector {

struct RefusalEntry {
  const char* code;    // the report's refusals[].code
  const char* cause;   // what it means, in words
  const char* remedy;  // what the user can do
};

// A refusal the shim sent (wire::RefusalCode). Unknown codes map to `device_time_unavailable`.
// A process that never initialised CUDA has none: it is host_only (process_facts.h).
const RefusalEntry& RefusalForWireCode(uint32_t wire_code);

// `gpuattr import` refusals: the file holds no device activity at all (recorded without CUDA
// activities, or on a machine without a GPU); the file is the legacy autograd profiler's event
// list (a PyTorch built without Kineto), which holds host ranges only.
const RefusalEntry& NoDeviceActivityInTraceRefusal();
const RefusalEntry& LegacyProfilerTraceRefusal();

// `gpuattr attach` refusals (docs/attach.md §Refusals): no armed process matches a --all or
// --rank selector; the process belongs to another uid; no daemon of ours answers on the socket.
const RefusalEntry& AttachRequiresShimRefusal();
const RefusalEntry& AttachOtherUserRefusal();
const RefusalEntry& DaemonUnreachableRefusal();

// `gpuattr attach --pid` of a process started without the shim that never loaded the CUDA
// driver: refused before any ptrace.
const RefusalEntry& AttachNoCudaDriverRefusal();

// `gpuattr attach --pid` could not load the shim into a process started without it
// (docs/attach.md §Injection): the kernel refused ptrace (Yama, another uid, no CAP_SYS_PTRACE);
// a debugger traces it; it is statically linked; its libc is not glibc; no thread came to a safe
// point; loading or calling the shim failed inside it.
const RefusalEntry& AttachPtraceDeniedRefusal();
const RefusalEntry& AttachTargetTracedRefusal();
const RefusalEntry& AttachStaticTargetRefusal();
const RefusalEntry& AttachNonGlibcTargetRefusal();
const RefusalEntry& AttachNoSafePointRefusal();
const RefusalEntry& AttachInjectionFailedRefusal();

// What a window of a late-attached process (the shim loaded by gpuattr attach) cannot know: NVTX
// ranges (NVTX binds at its first call, before the shim was there); device work launched before
// the attach and still running in it; the PyTorch annotator (it starts with the interpreter).
const RefusalEntry& NvtxBoundBeforeAttachRefusal();
const RefusalEntry& LaunchesInFlightAtAttachRefusal();
const RefusalEntry& PytorchAnnotatorRequiresStartRefusal();

// FLOPs (docs/attribution.md §FLOPs): FLOPs were asked for and the PyTorch annotator's counter
// did not count; achieved FLOP/s without a device join that passed its gate; MFU without the
// uninstrumented step time; a device whose peak FLOP/s gpuattr does not know. And not a refusal
// but the remedy of the unknown-op ledger.
const RefusalEntry& FlopsNotCountedRefusal();
const RefusalEntry& KernelUtilizationRequiresDeviceJoinRefusal();
const RefusalEntry& MfuDenominatorInvalidRefusal();
const RefusalEntry& PeakFlopsUnknownRefusal();
const char* UnknownOpsRemedy();

// Not a refusal but advice, the report's `advice` (nothing was lost, the numbers stand): no
// process of the capture has a range, so nothing can be attributed to a pass. Says how to get
// ranges: the PyTorch annotator, NVTX.
const RefusalEntry& NoRangesAdvice();

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_REFUSAL_CATALOGUE_H_
