// `gpuattr daemon`: the long-running collector of one user (docs/attach.md). It claims the
// daemon socket (cli/daemon_socket.h), serves it with a DaemonServer (ingest/daemon_server.h)
// until SIGINT or SIGTERM, then ends what is open (truncated), writes those reports and unlinks
// the socket.
//
// Threading: the main thread alone, in one poll loop over a signalfd (SIGINT, SIGTERM, blocked
// for the daemon's life) and the server's epoll descriptor, with the window timers as the poll
// timeout.
//
// Exit status: 0 after a signal; 2 usage (no usable reports directory); 3 the socket directory
// is not safely ours, or a live daemon already listens on the socket; 4 internal.
#ifndef GPUATTR_COLLECTOR_CLI_DAEMON_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_DAEMON_COMMAND_H_

#include <cstdint>
#include <string>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "cli/subcommand.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct DaemonCommandOptions {
  std::string socket_path;  // empty: DefaultDaemonSocketPath()
  std::string reports_dir;  // created when missing
  uint64_t attach_timeout_ns = 600'000'000'000;
  AnalysisOptions analysis;
  bool quiet = false;  // nothing on stderr but errors
};

// Runs the daemon until a signal and returns gpuattr's exit status.
int RunDaemon(const DaemonCommandOptions& options);

// The command line as parsed: the options and the attach timeout as typed.
struct DaemonCommandLine {
  DaemonCommandOptions options;
  std::string attach_timeout;  // empty: the default
};

// Adds `gpuattr daemon` to `app`.
Subcommand AddDaemonSubcommand(CLI::App& app);

// Checks `line` (exit 2 on a usage error), then RunDaemon.
int DaemonSubcommand(DaemonCommandLine line);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_DAEMON_COMMAND_H_
