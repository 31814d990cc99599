// The shim's clocks. Every timestamp the shim produces (NVTX events, API callbacks, and, via
// cuptiActivityRegisterTimestampCallback, every CUPTI activity record) is on one record clock,
// RecordClockNs, so the collector joins host and device times without calibration. It is
// CLOCK_MONOTONIC nanoseconds, unless the process brings its own clock: a program that runs on
// simulated time (the test simulator, tests/simgpu/sim/sim_clock.h) exports
// `extern "C" uint64_t (*gpuattr_host_clock(void))(void)`, which the shim asks once, when it is
// loaded; a non-null answer is the record clock from then on. Waits and deadlines always use
// MonotonicNs: they are about real time.
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

// The process's own clock (see the header comment); null for nearly every process. Written once,
// by a load-time constructor that runs before the shim's others, and only read afterwards.
using HostClock = uint64_t (*)();
extern HostClock process_host_clock;

inline uint64_t RecordClockNs() noexcept {
  return process_host_clock != nullptr ? process_host_clock() : MonotonicNs();
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
