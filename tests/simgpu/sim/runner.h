// Runner: executes one scenario process inside the current OS process and writes its truth part.
//
// The process's first thread runs on the calling (main) thread; start_thread runs another
// thread's ops on a new OS thread, join_thread waits for it. NVTX calls go through the real NVTX3
// headers (NVTX_INJECTION64_PATH reaches the shim by itself); CUDA work goes through Driver.
// A fork op forks the OS process: the child runs the named thread's ops and writes its own part
// (`PART.fork.PID`) next to the parent's. exit/crash ops write the part first, then end the
// process as asked.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_RUNNER_H_
#define GPUATTR_TESTS_SIMGPU_SIM_RUNNER_H_

#include <cstddef>
#include <string>

#include "scenario.h"

namespace gpuattr::simgpu {

// Runs scenario.processes[index]; writes {"processes": [this process]} to `truth_part`.
// Returns the process's exit status (0), or 2 after a scenario error found at run time.
int RunProcess(const Scenario& scenario, size_t index, const std::string& truth_part);

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_RUNNER_H_
