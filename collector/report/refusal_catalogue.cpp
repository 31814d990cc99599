#include "report/refusal_catalogue.h"

#include "wire/protocol.h"

namespace gpuattr::collector {

namespace {

constexpr RefusalEntry kCuptiUnavailable{
    "cupti_unavailable",
    "CUPTI could not be loaded or set up in the traced process, so no device time was recorded "
    "(without a GPU driver CUPTI returns CUPTI_ERROR_UNKNOWN, 999).",
    "Run on a host with an NVIDIA driver and the CUDA 13 CUPTI library (libcupti.so.13) on the "
    "library path, or name it with GPUATTR_CUPTI_LIBRARY."};

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

constexpr RefusalEntry kCudaNotInitialized{
    "cuda_not_initialized",
    "The process never initialised CUDA (or exited before it did), so only NVTX ranges were "
    "recorded.",
    "Nothing to do if the process uses no GPU; otherwise check that it really runs CUDA work."};

constexpr RefusalEntry kDeviceTimeUnavailable{
    "device_time_unavailable",
    "The traced process reported a refusal this collector does not know (a newer shim).",
    "Use a gpuattr collector at least as new as the injected library."};

}  // namespace

const RefusalEntry& RefusalForWireCode(uint32_t wire_code) {
  switch (static_cast<wire::RefusalCode>(wire_code)) {
    case wire::RefusalCode::kCuptiUnavailable:
      return kCuptiUnavailable;
    case wire::RefusalCode::kCuptiSubscriberConflict:
      return kCuptiSubscriberConflict;
    case wire::RefusalCode::kCuptiFatalError:
      return kCuptiFatalError;
  }
  return kDeviceTimeUnavailable;
}

const RefusalEntry& CudaNotInitializedRefusal() { return kCudaNotInitialized; }

}  // namespace gpuattr::collector
