// Which processes have reached the CUDA driver: what `gpuattr attach` checks before it touches a
// process (docs/attach.md §Refusals). A process that never loaded libcuda.so has no GPU work to
// attach to: a launcher, a shell, torchrun's agent. When one of its descendants has loaded it,
// that is the process the user most likely meant, and the refusal names it.
//
// Reads /proc only (stat, comm, maps and environ of the processes below the one named); a
// process that goes away or cannot be read while it is looked at is passed over. Runs on: any
// thread.
#ifndef GPUATTR_COLLECTOR_PTRACE_PROCESS_TREE_H_
#define GPUATTR_COLLECTOR_PTRACE_PROCESS_TREE_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gpuattr::collector {

struct CudaProcess {
  pid_t pid = 0;
  std::string name;         // /proc/PID/comm
  std::optional<int> rank;  // RANK in its environment (torchrun's), when readable
};

// Whether `pid` has mapped the CUDA driver (a file named libcuda.so*); nullopt when its maps
// cannot be read (gone, or not ours).
std::optional<bool> HasCudaDriver(pid_t pid);

// The descendants of `pid` (children, their children, ...) that have mapped the CUDA driver, by
// pid, at most `limit` of them.
std::vector<CudaProcess> FindCudaDescendants(pid_t pid, size_t limit);

// "4242 (python, rank 0)".
std::string DescribeProcess(const CudaProcess& process);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_PTRACE_PROCESS_TREE_H_
