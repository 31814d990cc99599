#include "analysis/refusal_catalogue.h"

#include "wire/protocol.h"

namespace gpuattr::collector {

namespace {

constexpr RefusalEntry kCuptiUnavailable{
    "cupti_unavailable",
    "CUDA started in the traced process, but CUPTI could not be loaded or set up there, so no "
    "device time was recorded (on a machine with a driver but no usable GPU, CUPTI answers "
    "CUPTI_ERROR_UNKNOWN, 999).",
    "Check that a GPU is visible (nvidia-smi, CUDA_VISIBLE_DEVICES) and that the CUDA 13 CUPTI "
    "library (libcupti.so.13) is on the library path, or name it with GPUATTR_CUPTI_LIBRARY."};

constexpr RefusalEntry kCuptiSubscriberConflict{
    "cupti_subscriber_conflict",
    "Another tool (a profiler such as Nsight Systems, Kineto or DCGM) holds CUPTI's single "
    "subscriber slot in the traced process, so gpuattr could not subscribe.",
    "Run without the other profiler (e.g. disable torch.profiler or nsys for this run), or let "
    "that tool produce the trace and use `gpuattr import`."};

constexpr RefusalEntry kCuptiFatalError{
    "cupti_fatal_error",
    "CUPTI reported a fatal error and finalized itself; device records stop at that point.",
    "Rerun; if it repeats, report the CUPTI result and the driver version."};

constexpr RefusalEntry kDriverMissing{
    "driver_missing",
    "The process loaded a CUDA runtime, but this machine has no CUDA driver (libcuda.so.1 "
    "cannot be loaded), so CUDA never started and no device time exists to record.",
    "Run on a machine with an NVIDIA GPU and its driver, or install the driver (and, in a "
    "container, expose it: e.g. docker --gpus all with the NVIDIA container toolkit)."};

constexpr RefusalEntry kDeviceTimeUnavailable{
    "device_time_unavailable",
    "The traced process reported a refusal this collector does not know (a newer shim).",
    "Use a gpuattr collector at least as new as the injected library."};

constexpr RefusalEntry kAttachRequiresShim{
    "attach_requires_shim",
    "The process is alive but not registered with the gpuattr daemon: it was not started with "
    "the gpuattr shim in armed mode, so no capture window can be opened in it.",
    "Start it with `gpuattr run --armed -- CMD`, or set LD_PRELOAD, CUDA_INJECTION64_PATH and "
    "NVTX_INJECTION64_PATH to libgpuattr_inject.so with GPUATTR_MODE=armed. (Ptrace-based "
    "injection into unprepared processes may come later.)"};

constexpr RefusalEntry kAttachOtherUser{
    "attach_other_user",
    "The process belongs to another uid; the gpuattr daemon serves only its own user.",
    "Attach as the user that runs the process, through that user's daemon."};

constexpr RefusalEntry kDaemonUnreachable{
    "daemon_unreachable",
    "No gpuattr daemon of ours listens at the socket: nothing accepts there, or the listener "
    "runs under another uid.",
    "Start `gpuattr daemon --reports-dir DIR` (or its systemd user unit, "
    "scripts/gpuattr-daemon.service) as this user, or name its socket with --socket."};

constexpr RefusalEntry kNoDeviceActivityInTrace{
    "no_device_activity_in_trace",
    "The imported trace holds no kernel, memcpy or memset event: it was recorded without CUDA "
    "activities, or on a machine without a GPU, so its device time is unknown (not zero).",
    "Record with torch.profiler's activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (for "
    "Nsight Systems: --trace=cuda) on a machine with a GPU, or run under `gpuattr run`."};

constexpr RefusalEntry kLegacyProfilerTrace{
    "legacy_profiler_trace",
    "The imported file is the legacy autograd profiler's event list (written by a PyTorch built "
    "without Kineto): it holds host ranges only, and any CUDA times in it are CUDA-event "
    "estimates, not device activity.",
    "Record with a PyTorch built with Kineto (torch.profiler with ProfilerActivity.CUDA), or run "
    "the program under `gpuattr run`."};

constexpr RefusalEntry kNoRanges{
    "no_ranges",
    "No process of this capture has an NVTX range, so no time can be attributed to a pass: every "
    "kernel is unattributed (no_open_range) and the pass tree is empty.",
    "PyTorch: run the program under `gpuattr run` with the Python annotator on (the default, "
    "--pytorch modules; GPUATTR_PYTORCH=modules for armed processes): it adds step, module, "
    "backward and optimizer ranges once the program imports torch (docs/pytorch.md). C++ or "
    "other Python: put NVTX ranges around the phases (nvtxRangePushA / nvtxRangePop, "
    "nvtx.annotate, torch.cuda.nvtx.range_push); an imported trace needs its annotations or "
    "torch.profiler's with_modules=True."};

}  // namespace

const RefusalEntry& NoRangesAdvice() { return kNoRanges; }
const RefusalEntry& NoDeviceActivityInTraceRefusal() { return kNoDeviceActivityInTrace; }
const RefusalEntry& LegacyProfilerTraceRefusal() { return kLegacyProfilerTrace; }
const RefusalEntry& AttachRequiresShimRefusal() { return kAttachRequiresShim; }
const RefusalEntry& AttachOtherUserRefusal() { return kAttachOtherUser; }
const RefusalEntry& DaemonUnreachableRefusal() { return kDaemonUnreachable; }

const RefusalEntry& RefusalForWireCode(uint32_t wire_code) {
  switch (static_cast<wire::RefusalCode>(wire_code)) {
    case wire::RefusalCode::kCuptiUnavailable:
      return kCuptiUnavailable;
    case wire::RefusalCode::kCuptiSubscriberConflict:
      return kCuptiSubscriberConflict;
    case wire::RefusalCode::kCuptiFatalError:
      return kCuptiFatalError;
    case wire::RefusalCode::kDriverMissing:
      return kDriverMissing;
  }
  return kDeviceTimeUnavailable;
}

}  // namespace gpuattr::collector
