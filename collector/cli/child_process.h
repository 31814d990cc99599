// Starting the traced command: its environment (the shim preloaded and named as the CUDA and
// NVTX injection library, the collector's socket) and the spawn itself.
//
// The child inherits stdin, stdout, stderr (unless asked for /dev/null), cwd, rlimits and ignored
// signals untouched, and the
// signal mask gpuattr had before it blocked the signals it handles. Every descriptor gpuattr
// opens itself is close-on-exec, so the child sees none of them. Called on the main thread.
#ifndef GPUATTR_COLLECTOR_CLI_CHILD_PROCESS_H_
#define GPUATTR_COLLECTOR_CLI_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr char kSocketEnv[] = "GPUATTR_SOCKET";
// "armed": the shim registers with the daemon and records nothing until a window opens
// (docs/attach.md); `gpuattr run --armed` sets it.
inline constexpr char kModeEnv[] = "GPUATTR_MODE";

// The Python annotator (docs/pytorch.md): "modules", "ops" or "off"; read by its sitecustomize.
inline constexpr char kPytorchEnv[] = "GPUATTR_PYTORCH";
// Where the annotator writes the kernel maps of compiled graphs (a directory; <pid>.jsonl each).
inline constexpr char kKernelMapsEnv[] = "GPUATTR_KERNEL_MAPS";
// The NVTX library the annotator calls through ctypes when torch has no NVTX binding of its own.
inline constexpr char kNvtxLibraryEnv[] = "GPUATTR_NVTX_LIBRARY";
// The annotator's FLOP counter (docs/pytorch.md §FLOPs): "1" counts (gpuattr run --flops), with
// the rule file GPUATTR_FLOP_RULES names before the built-in rules.
inline constexpr char kFlopsEnv[] = "GPUATTR_FLOPS";
inline constexpr char kFlopRulesEnv[] = "GPUATTR_FLOP_RULES";
// The step timer of `gpuattr run --clean-steps` (docs/attribution.md §FLOPs): the file a process
// appends "<pid> <rank> <CLOCK_MONOTONIC ns>" to at each optimizer step's end; the same
// sitecustomize installs it, and nothing else, when this is set.
inline constexpr char kStepTimerEnv[] = "GPUATTR_STEP_TIMER";

// Replaces (or adds) NAME=value in `environment` (NAME=value entries).
void SetVariable(std::vector<std::string>* environment, std::string_view name,
                 const std::string& value);

// `environment` (NAME=value entries) with LD_PRELOAD led by `shim` (kept ahead of any value
// already there, and not repeated when already listed), CUDA_INJECTION64_PATH and
// NVTX_INJECTION64_PATH set to `shim`, and GPUATTR_SOCKET set to `socket_path`.
std::vector<std::string> BuildChildEnvironment(const std::vector<std::string>& environment,
                                               const std::string& shim,
                                               const std::string& socket_path);

// `environment` with the Python annotator set up for `mode`: "modules" and "ops" put
// `python_site` first on PYTHONPATH (not repeated when already listed) and name `nvtx_library`
// in GPUATTR_NVTX_LIBRARY unless the environment names one already (or `nvtx_library` is
// empty); every mode sets GPUATTR_PYTORCH to `mode`. Non-Python commands ignore all three.
void AddPythonAnnotator(std::vector<std::string>* environment, const std::string& mode,
                        const std::string& python_site, const std::string& nvtx_library);

// `environment` with the step timer only (the clean run of --clean-steps): `python_site` first on
// PYTHONPATH, GPUATTR_STEP_TIMER set to `timer_path` and GPUATTR_PYTORCH to off.
void AddStepTimer(std::vector<std::string>* environment, const std::string& python_site,
                  const std::string& timer_path);

// The current process environment as NAME=value entries.
std::vector<std::string> CurrentEnvironment();

struct SpawnResult {
  pid_t pid = -1;      // > 0 when the command started
  int exec_error = 0;  // errno of the failed exec when it did not (ENOENT, EACCES, ...)
};

// Where the command's stdin, stdout and stderr go: gpuattr's own (the traced run), or /dev/null
// (the clean run of --clean-steps, whose output would repeat the traced run's).
enum class ChildStdio { kInherited, kDevNull };

// Starts argv[0], searched on PATH like a shell does, with `environment` and `signal_mask`.
// A command that cannot be executed is a SpawnResult with exec_error, not an error: the caller
// answers it like a shell (126/127). Only a failure to spawn at all is a Status.
StatusOr<SpawnResult> SpawnChild(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& environment,
                                 const sigset_t& signal_mask,
                                 ChildStdio stdio = ChildStdio::kInherited);

// The shell's exit status for a wait(2) status: the exit code, or 128 + the signal.
int ShellExitStatus(int wait_status);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_CHILD_PROCESS_H_
