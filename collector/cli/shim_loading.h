// `gpuattr attach --pid` of a process started without gpuattr (docs/attach.md §Injection): first
// the check that the process runs CUDA at all, then the shim loaded into it with ptrace
// (collector/ptrace/library_injector.h) and its late-attach entry called, which starts an armed
// session towards the daemon's socket. Either step's failure is a typed refusal with what was
// seen; a refused process was never touched.
// Runs on the main thread.
#ifndef GPUATTR_COLLECTOR_CLI_SHIM_LOADING_H_
#define GPUATTR_COLLECTOR_CLI_SHIM_LOADING_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "analysis/refusal_catalogue.h"

namespace gpuattr::collector {

struct Refused {
  const RefusalEntry* refusal;
  std::string seen;
};

// attach_no_cuda_driver when `pid` has not mapped the CUDA driver, naming the processes below it
// that have (did you mean ...?); nullopt when it has.
std::optional<Refused> RefuseWithoutCudaDriver(pid_t pid);

// Loads the shim into `pid` and has it start an armed session towards `socket_path`; nullopt when
// the shim's session started. Unless `quiet`, one line on stderr says how long a thread stopped.
std::optional<Refused> LoadShimInto(pid_t pid, const std::string& socket_path, bool quiet);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_SHIM_LOADING_H_
