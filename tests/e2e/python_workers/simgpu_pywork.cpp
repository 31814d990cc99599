// libsimgpu_pywork.so: the simulated GPU, callable from Python through ctypes, so that an
// interpreter does traced work.
//
// simgpu_run_scenario_process: one scenario process, so that a plain interpreter (no torch) does
// traced work: multiprocessing children started with fork and with spawn, in
// multiprocess_e2e_test.cpp. It runs scenario process `index` in the calling OS process exactly
// as `simgpu-run --run-process` does (the simulated driver, the fake CUPTI named by
// GPUATTR_CUPTI_LIBRARY, NVTX through the real NVTX3 headers, so NVTX_INJECTION64_PATH reaches
// the shim) and writes that process's truth part to `truth_part`.
// The scenario process's `env` is applied first (setenv), before any NVTX or CUDA call, so the
// shim, which reads RANK and LOCAL_RANK when its session starts, sees them.
// Returns the process's exit status (0), or 2 when the scenario cannot be read or used; a
// scenario's own exit or crash op ends the calling process, as in simgpu-run.
// Runs on: the calling Python thread; call it once per process (the Driver is per call, and a
// second call would re-initialise the simulated CUDA of a process that already did).
//
// simgpu_launch_kernel / simgpu_copy_to_host / simgpu_synchronize: one kernel or copy at a time
// on device 0, stream 0 of a process-wide simulated driver (initialised at the first launch, as
// cuInit is), from the calling thread: the PyTorch tests' dispatch mode launches what each aten op
// would run on a GPU (tests/simgpu/python/simgpu_kernels.py), on the thread that runs the op, and
// writes its own truth from what each launch returns. Runs on: any thread.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "driver.h"
#include "runner.h"
#include "scenario.h"

extern "C" __attribute__((visibility("default"))) int simgpu_run_scenario_process(
    const char* scenario_path, int index, const char* truth_part) {
  if (scenario_path == nullptr || truth_part == nullptr || index < 0) {
    std::fprintf(stderr, "simgpu_pywork: bad arguments\n");
    return 2;
  }
  std::ifstream in(scenario_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "simgpu_pywork: %s: %s\n", scenario_path, std::strerror(errno));
    return 2;
  }
  std::ostringstream text;
  text << in.rdbuf();
  // Never freed: RunProcess keeps a reference in state that outlives the call (runner.cpp).
  auto* scenario = new gpuattr::simgpu::Scenario;
  std::string error;
  if (!gpuattr::simgpu::ParseScenario(text.str(), scenario, &error)) {
    std::fprintf(stderr, "simgpu_pywork: %s: %s\n", scenario_path, error.c_str());
    return 2;
  }
  if (static_cast<size_t>(index) >= scenario->processes.size()) {
    std::fprintf(stderr, "simgpu_pywork: %s has no process %d\n", scenario_path, index);
    return 2;
  }
  for (const auto& [key, value] : scenario->processes[static_cast<size_t>(index)].env) {
    setenv(key.c_str(), value.c_str(), 1);
  }
  return gpuattr::simgpu::RunProcess(*scenario, static_cast<size_t>(index), truth_part);
}

namespace {

// Never freed: launches may come from any thread until the process exits.
gpuattr::simgpu::Driver& KernelDriver() {
  constexpr uint64_t kLaunchLatencyNs = 2000;
  static auto* driver = new gpuattr::simgpu::Driver(kLaunchLatencyNs, /*graph_node_gap_ns=*/0);
  return *driver;
}

// Writes an executed launch's host entry time and device start and end to times[0..2] and its
// correlation id (0 without CUPTI) to *correlation_id; returns 0.
int WriteLaunch(const gpuattr::simgpu::WorkResult& result, uint64_t* times,
                uint32_t* correlation_id) {
  times[0] = result.launch_ns;
  times[1] = result.start_ns;
  times[2] = result.end_ns;
  *correlation_id = result.correlation_id.value_or(0);
  return 0;
}

}  // namespace

// Launches kernel `name` of `duration_ns`; writes the host time the launch API was entered and
// the kernel's device start and end (CLOCK_MONOTONIC ns) to times[0..2], and its correlation id
// to *correlation_id (0 without CUPTI). Returns 0, or 2 when the launch did not execute.
extern "C" __attribute__((visibility("default"))) int simgpu_launch_kernel(
    const char* name, uint64_t duration_ns, uint64_t* times, uint32_t* correlation_id) {
  if (name == nullptr || times == nullptr || correlation_id == nullptr) return 2;
  gpuattr::simgpu::DeviceWork work;
  work.name = name;
  work.duration_ns = duration_ns;
  const gpuattr::simgpu::WorkResult result = KernelDriver().Submit(work, {});
  if (!result.executed) return 2;
  return WriteLaunch(result, times, correlation_id);
}

// A device-to-host copy of `bytes` lasting `duration_ns` (cudaMemcpyAsync DtoH, as `.item()`
// issues), then a wait for it, as the synchronous copy does; outputs as simgpu_launch_kernel's.
extern "C" __attribute__((visibility("default"))) int simgpu_copy_to_host(
    uint64_t bytes, uint64_t duration_ns, uint64_t* times, uint32_t* correlation_id) {
  if (times == nullptr || correlation_id == nullptr) return 2;
  gpuattr::simgpu::DeviceWork work;
  work.type = SIMGPU_ACTIVITY_MEMCPY;
  work.name = "DtoH";
  work.bytes = bytes;
  work.duration_ns = duration_ns;
  const gpuattr::simgpu::WorkResult result = KernelDriver().Submit(work, {});
  if (!result.executed) return 2;
  KernelDriver().Sync(0, 0);
  return WriteLaunch(result, times, correlation_id);
}

// cudaDeviceSynchronize of device 0: returns once every launched kernel has completed.
extern "C" __attribute__((visibility("default"))) void simgpu_synchronize() {
  KernelDriver().Sync(0, std::nullopt);
}
