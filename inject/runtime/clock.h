// The shim's single clock. Every timestamp the shim produces (NVTX events, API callbacks, and, via
// cuptiActivityRegisterTimestampCallback, every CUPTI activity record) is CLOCK_MONOTONIC
// nanoseconds, so the collector joins host and device times without calibration.
//
// Called from any thread, including app threads on the hot path: clock_gettime(CLOCK_MONOTONIC) is
// served by the vDSO on Linux x86-64 and aarch64 and does not enter the kernel.
#ifndef GPUATTR_INJECT_RUNTIME_CLOCK_H_
#define GPUATTR_INJECT_RUNTIME_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace gpuattr::inject {

inline uint64_t MonotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The MonotonicNs() that is `ms` milliseconds from now: a deadline for bounded waits.
inline uint64_t MonotonicNsAfterMs(int ms) noexcept {
  return MonotonicNs() + static_cast<uint64_t>(ms) * 1000000ull;
}

inline uint64_t RealtimeNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_CLOCK_H_
