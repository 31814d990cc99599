// `gpuattr attach`: asks the daemon (docs/attach.md) to open a capture window in armed processes,
// waits until every window has ended, and copies the report the daemon wrote to -o.
//
//   --pid P: /proc/P must exist (exit 3) and be ours (else an attach_other_user report);
//   connect, SO_PEERCRED: the daemon must run as us (else a daemon_unreachable report);
//   AttachRequest{selector, duration_ns | steps, step name} --> one AttachReply:
//     kDone          the report at the path the daemon named (a regular file of ours, absolute)
//                    is copied to -o atomically; one summary line on stderr; exit 0
//     kRequiresShim  --pid without --no-inject: a process that never loaded the CUDA driver is
//                    an attach_no_cuda_driver report naming its descendants that did (exit 3,
//                    never touched; collector/cli/shim_loading.h); else the shim is loaded into
//                    the process (collector/ptrace/library_injector.h; its entry
//                    GpuattrAttachLate starts an armed session towards the daemon's socket),
//                    the request is repeated until
//                    the process has registered (at most 5 s), and goes on as above; a failed
//                    injection is a report with its typed refusal (attach_ptrace_denied, ...);
//                    exit 3. Otherwise an attach_requires_shim report; exit 3
//     kBusy          a selected process has a window open already: a message; exit 3
//     kFailed        the daemon's message; exit 4
//
// A refusal report is schema-valid: capture.mode "attach" and one process entry, status
// "refused", with the refusal (pid 0 when the selector named no pid).
//
// The attach timeout is the daemon's (AttachRequest has no field for it): --timeout only bounds
// how long this command waits for the reply. When it passes, the command disconnects and exits
// 4; the daemon then closes the windows and still writes the report into its reports directory.
// Runs on the main thread.
#ifndef GPUATTR_COLLECTOR_CLI_ATTACH_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_ATTACH_COMMAND_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "cli/subcommand.h"
#include "wire/protocol.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct AttachOptions {
  wire::AttachSelector selector = wire::AttachSelector::kPid;
  int32_t value = 0;         // the pid or the rank
  uint64_t duration_ns = 0;  // exactly one of duration_ns and steps is > 0
  uint32_t steps = 0;
  std::string step_name;         // with steps only; empty: the shim's built-in step names
  std::string socket_path;       // empty: DefaultDaemonSocketPath()
  std::string output;            // expanded by RunAttach (output_names.h)
  bool force_overwrite = false;  // replace an existing report
  uint64_t timeout_ns = 600'000'000'000 + 30'000'000'000;  // the daemon's default, and a margin
  bool quiet = false;                                      // no summary line
  bool no_inject = false;  // --pid of an unregistered process: refuse, never ptrace
};

// "30s", "500ms", "2m", "1h", or plain (possibly fractional) seconds, to nanoseconds. Zero and
// negative durations are kInvalidArgument, as is anything longer than a week.
StatusOr<uint64_t> ParseDuration(const std::string& text);

// Runs the attach and returns gpuattr's exit status.
int RunAttach(const AttachOptions& options);

// The command line as parsed, before the checks that need all of it.
struct AttachCommandLine {
  AttachOptions options;
  int selectors = 0;     // how many of --pid, --all, --rank were given
  std::string duration;  // as typed; empty: not given
  std::string timeout;
};

// Adds `gpuattr attach` to `app`.
Subcommand AddAttachSubcommand(CLI::App& app);

// Checks `line` (exit 2 on a usage error), then RunAttach.
int AttachSubcommand(AttachCommandLine line);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_ATTACH_COMMAND_H_
