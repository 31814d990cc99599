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
    "Another tool holds CUPTI's single subscriber slot in the traced process (Nsight Systems "
    "or another NVIDIA tool, or the program's own profiler, such as torch.profiler, already "
    "tracing when gpuattr attached), so gpuattr could not subscribe.",
    "Start the program under gpuattr (`gpuattr run`, or `gpuattr run --armed` for later attach "
    "windows): gpuattr then shares CUPTI with the program's own profiler. Nsight Systems and "
    "the other NVIDIA tools cannot share it: run without them, or let that tool produce the "
    "trace and use `gpuattr import`."};

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
    "No process registered with the gpuattr daemon matches the selector: --all and --rank reach "
    "only processes started with the gpuattr shim in armed mode.",
    "Attach to a running process by pid (`gpuattr attach --pid PID` loads the shim into it), or "
    "start the job with `gpuattr run --armed -- CMD` (or LD_PRELOAD, CUDA_INJECTION64_PATH and "
    "NVTX_INJECTION64_PATH set to libgpuattr_inject.so with GPUATTR_MODE=armed)."};

constexpr RefusalEntry kAttachNoCudaDriver{
    "attach_no_cuda_driver",
    "The process has not loaded the CUDA driver (libcuda.so), so it has no GPU work to attach "
    "to, and nothing in it was touched. A launcher, a shell or torchrun's agent runs no CUDA "
    "itself; when a process started by this one has loaded the driver, it is named here.",
    "Attach to the process that runs the CUDA work: the pid named above (`gpuattr attach --pid "
    "PID`), or every armed process of a job started under `gpuattr run --armed` with --all."};

constexpr RefusalEntry kAttachPtraceDenied{
    "attach_ptrace_denied",
    "The kernel did not let gpuattr trace the process, so the shim could not be loaded into it; "
    "nothing in the process was touched.",
    "With Yama (kernel.yama.ptrace_scope 1), run gpuattr as root, give it CAP_SYS_PTRACE "
    "(setcap cap_sys_ptrace+ep gpuattr), or set the sysctl to 0; attach as the process's own "
    "user; a non-dumpable (setuid) process needs CAP_SYS_PTRACE. Or start the job under "
    "`gpuattr run --armed`."};

constexpr RefusalEntry kAttachTargetTraced{
    "attach_target_traced",
    "A debugger or another tracer (gdb, strace, py-spy) is attached to the process; a process has "
    "one tracer at a time, so the shim could not be loaded. Nothing was touched.",
    "Detach the other tool and attach again."};

constexpr RefusalEntry kAttachStaticTarget{
    "attach_static_target",
    "The process is statically linked: it has no dynamic loader, so no library can be loaded "
    "into it. Nothing was touched.",
    "Link the program dynamically, or start it under `gpuattr run --armed`."};

constexpr RefusalEntry kAttachNonGlibcTarget{
    "attach_non_glibc_target",
    "The process does not use glibc (for example musl), or its libc has no dlopen gpuattr can "
    "call, so the shim could not be loaded. Nothing was touched.",
    "Start the job under `gpuattr run --armed` (the shim then loads with the program)."};

constexpr RefusalEntry kAttachNoSafePoint{
    "attach_no_safe_point",
    "No thread of the process stopped at a point where loading a library is safe (outside libc "
    "and the dynamic loader, or blocked in a waiting system call) within the time allowed; each "
    "thread tried was released untouched.",
    "Attach again (a busy process usually reaches a safe point within a few tries), or start the "
    "job under `gpuattr run --armed`."};

constexpr RefusalEntry kAttachInjectionFailed{
    "attach_injection_failed",
    "Loading the shim inside the process, or calling it, failed; the stopped thread's registers, "
    "signal mask and errno were put back before it was released.",
    "Check that libgpuattr_inject.so can be opened by the process (its path, its mount namespace, "
    "its architecture); the cause says what failed. Or start the job under `gpuattr run --armed`."};

constexpr RefusalEntry kNvtxBoundBeforeAttach{
    "nvtx_bound_before_attach",
    "The process was started without gpuattr: each library's NVTX bound at its first call, when "
    "no injection was named, so its ranges reach no tool, and no pass, step or range is recorded "
    "in this window. The device side (kernels, families, busy and idle time, gaps) is complete.",
    "For passes and steps, start the job under `gpuattr run --armed` (or with "
    "NVTX_INJECTION64_PATH set to libgpuattr_inject.so) and attach to it."};

constexpr RefusalEntry kLaunchesInFlightAtAttach{
    "launches_in_flight_at_attach",
    "CUPTI was subscribed when the window opened, after CUDA started: device work launched before "
    "that and still running at the window's begin has no record, so the window counts the work "
    "launched inside it only.",
    "Nothing to do for the window's own work; for a process's whole life, start it under `gpuattr "
    "run`."};

constexpr RefusalEntry kPytorchAnnotatorRequiresStart{
    "pytorch_annotator_requires_start",
    "The process has torch loaded, but the PyTorch annotator (module, backward and optimizer "
    "ranges) starts with the interpreter and is not running: started now its ranges would go "
    "through NVTX, which bound before the attach, so the window has no passes.",
    "Start the job under `gpuattr run --armed -- python ...` (the annotator starts with it) and "
    "attach to it (docs/pytorch.md)."};

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

constexpr RefusalEntry kFlopsNotCounted{
    "flops_not_counted",
    "FLOPs were asked for (--flops), but the PyTorch annotator's FLOP counter did not count in "
    "this process: no op's FLOPs are known, which is not zero FLOPs.",
    "Run the PyTorch program under `gpuattr run --flops` with the annotator on (--pytorch modules "
    "or ops) on torch >= 1.13 and the CUDA toolkit's libnvtx3interop; a rule file the counter "
    "could not use is named in the cause (docs/pytorch.md §FLOPs)."};

constexpr RefusalEntry kKernelUtilizationRequiresDeviceJoin{
    "kernel_utilization_requires_device_join",
    "Achieved FLOP/s divides counted FLOPs by the device time joined to the same pass; this "
    "process's device join did not pass its gate (coverage overall, and forward and backward "
    "separately, at least the threshold), so no such figure would be sound.",
    "Look at coverage.unattributed for why kernels were not joined to a pass and put that work "
    "in ranges (the PyTorch annotator, NVTX), or lower --coverage-threshold knowingly; without a "
    "GPU there is no device time to join."};

constexpr RefusalEntry kMfuDenominatorInvalid{
    "mfu_denominator_invalid",
    "MFU divides a step's FLOPs by the uninstrumented end-to-end step wall time times the "
    "device's peak FLOP/s; no valid uninstrumented step time is known (the instrumented step "
    "time and the kernel busy union are not valid denominators).",
    "Add --clean-steps N: gpuattr runs the program a second time with only a step timer (no "
    "shim, no ranges) and takes the median of N steps; or state the step time with "
    "--clean-step-ms X."};

constexpr RefusalEntry kPeakFlopsUnknown{
    "peak_flops_unknown",
    "The device's peak FLOP/s for the dtype that carried most FLOPs is not in gpuattr's device "
    "table, so MFU has no peak to divide by.",
    "State the peak with --peak-flops F (FLOP/s, dense, for that dtype), or add the device to "
    "collector/data/device_peaks.json with its datasheet."};

constexpr char kUnknownOpsRemedy[] =
    "Each op here ran without a FLOP rule: its FLOPs are unknown, not zero, so every FLOP count "
    "it ran under is a lower bound. Add a rule for it to a rule file and pass it with "
    "--flop-rules FILE (docs/pytorch.md §FLOPs).";

}  // namespace

const RefusalEntry& FlopsNotCountedRefusal() { return kFlopsNotCounted; }
const RefusalEntry& KernelUtilizationRequiresDeviceJoinRefusal() {
  return kKernelUtilizationRequiresDeviceJoin;
}
const RefusalEntry& MfuDenominatorInvalidRefusal() { return kMfuDenominatorInvalid; }
const RefusalEntry& PeakFlopsUnknownRefusal() { return kPeakFlopsUnknown; }
const char* UnknownOpsRemedy() { return kUnknownOpsRemedy; }
const RefusalEntry& NoRangesAdvice() { return kNoRanges; }
const RefusalEntry& NoDeviceActivityInTraceRefusal() { return kNoDeviceActivityInTrace; }
const RefusalEntry& LegacyProfilerTraceRefusal() { return kLegacyProfilerTrace; }
const RefusalEntry& AttachRequiresShimRefusal() { return kAttachRequiresShim; }
const RefusalEntry& AttachOtherUserRefusal() { return kAttachOtherUser; }
const RefusalEntry& DaemonUnreachableRefusal() { return kDaemonUnreachable; }
const RefusalEntry& AttachNoCudaDriverRefusal() { return kAttachNoCudaDriver; }
const RefusalEntry& AttachPtraceDeniedRefusal() { return kAttachPtraceDenied; }
const RefusalEntry& AttachTargetTracedRefusal() { return kAttachTargetTraced; }
const RefusalEntry& AttachStaticTargetRefusal() { return kAttachStaticTarget; }
const RefusalEntry& AttachNonGlibcTargetRefusal() { return kAttachNonGlibcTarget; }
const RefusalEntry& AttachNoSafePointRefusal() { return kAttachNoSafePoint; }
const RefusalEntry& AttachInjectionFailedRefusal() { return kAttachInjectionFailed; }
const RefusalEntry& NvtxBoundBeforeAttachRefusal() { return kNvtxBoundBeforeAttach; }
const RefusalEntry& LaunchesInFlightAtAttachRefusal() { return kLaunchesInFlightAtAttach; }
const RefusalEntry& PytorchAnnotatorRequiresStartRefusal() {
  return kPytorchAnnotatorRequiresStart;
}

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
