// SimClock: the host clock of a simulated process, real or simulated.
//
// Real time (the default): CLOCK_MONOTONIC. cpu_us spins for its duration and a sync sleeps until
// the device is done, so the scheduler decides how far apart two host calls land, and a loaded
// machine moves the device timeline against the ranges.
//
// Simulated time (a scenario's "clock": "simulated"): a counter that only the scenario moves. It
// starts at CLOCK_MONOTONIC when first read; cpu_us adds its duration, every host call (an NVTX
// call, each side of a CUDA call) adds kHostCallNs, a sync jumps to the device's completion.
// Everything that tells time in the process reads it: the truth, the device timeline, the fake's
// device clock (simgpu_set_device_clock) and, through gpuattr_host_clock below, the shim's stamps.
// A report is then a function of the scenario alone. A simulated process runs one thread (the
// scenario parser refuses more), so the counter has one writer; the shim's and the fake's own
// threads only read it.
//
// simgpu-run learns the mode from SIMGPU_CLOCK=simulated, which it sets in each scenario
// process's environment: the shim asks for the clock when it is loaded, before main.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_SIM_CLOCK_H_
#define GPUATTR_TESTS_SIMGPU_SIM_SIM_CLOCK_H_

#include <cstdint>

namespace gpuattr::simgpu {

class SimClock {
 public:
  // What one host call costs on the simulated clock: an NVTX call, or one side of a CUDA call.
  static constexpr uint64_t kHostCallNs = 1000;

  static bool Simulated();
  static uint64_t Now();
  // cpu_us: spins for `ns` (real), or adds it.
  static void Spend(uint64_t ns);
  // A sync: sleeps until Now() >= t (real), or jumps there.
  static void WaitUntil(uint64_t t);
  // Before a host call: nothing (real), or kHostCallNs.
  static void HostCall();
};

}  // namespace gpuattr::simgpu

// The clock gpuattr's shim stamps with, when a process brings its own (inject/runtime/clock.h):
// SimClock::Now in simulated time, null in real time. Exported by simgpu-run.
extern "C" uint64_t (*gpuattr_host_clock(void))(void);

#endif  // GPUATTR_TESTS_SIMGPU_SIM_SIM_CLOCK_H_
