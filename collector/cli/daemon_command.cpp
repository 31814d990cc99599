#include "cli/daemon_command.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "cli/attach_command.h"
#include "cli/cli.h"
#include "cli/daemon_socket.h"
#include "ingest/daemon_server.h"

namespace gpuattr::collector {
namespace {

namespace fs = std::filesystem;

// The reports directory, created when missing, as an absolute path: the daemon hands report
// paths to attach clients that run in other working directories.
StatusOr<std::string> PrepareReportsDir(const std::string& reports_dir) {
  if (reports_dir.empty()) return InvalidArgumentError("--reports-dir is empty");
  std::error_code error;
  const bool created = fs::create_directories(reports_dir, error);
  if (error) {
    return InvalidArgumentError("cannot create the reports directory " + reports_dir + ": " +
                                error.message());
  }
  // Reports name executables and ranges: a directory we make is ours alone.
  if (created) fs::permissions(reports_dir, fs::perms::owner_all, error);
  const fs::path absolute = fs::canonical(reports_dir, error);
  if (error || !fs::is_directory(absolute, error)) {
    return InvalidArgumentError("the reports directory " + reports_dir + " is not a directory");
  }
  if (access(absolute.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgumentError("cannot write into the reports directory " + absolute.string() +
                                ": " + std::strerror(errno));
  }
  return absolute.string();
}

int Fail(const Status& status) {
  std::fprintf(stderr, "gpuattr daemon: %s\n", status.message().c_str());
  switch (status.code()) {
    case StatusCode::kPermissionDenied:
    case StatusCode::kFailedPrecondition:
      return kExitData;
    default:
      return ExitCodeFor(status);
  }
}

// True when a SIGINT or SIGTERM is pending on the signalfd (all of them are read).
StatusOr<bool> StopRequested(int signal_fd) {
  bool stop = false;
  for (;;) {
    signalfd_siginfo info{};
    const ssize_t got = read(signal_fd, &info, sizeof(info));
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return stop;
      return InternalError(std::string("reading the signalfd: ") + std::strerror(errno));
    }
    if (got != static_cast<ssize_t>(sizeof(info))) return InternalError("short signalfd read");
    stop = true;
  }
}

constexpr char kDaemonFooter[] =
    R"(Serves one user's processes on a Unix socket until SIGINT or SIGTERM
(docs/attach.md). Processes traced from the start (the shim pointed at the socket with
GPUATTR_SOCKET) get a report each when they end; armed processes (gpuattr run --armed) register
and wait for `gpuattr attach`, whose reports the daemon writes too. Reports go into
--reports-dir under names the daemon makes up: run-<pid>-<UTC>-<n>.json, attach-<n>-<UTC>.json.
The socket's directory is created mode 0700 and must be ours; another uid's peers are refused.
As a systemd user service: scripts/gpuattr-daemon.service.

Exit status: 0 after SIGINT or SIGTERM; 2 usage or an unusable reports directory; 3 the socket
directory is not safely ours, or a daemon already listens on the socket; 4 internal error.

Examples:
  gpuattr daemon --reports-dir ~/.local/share/gpuattr/reports
  gpuattr daemon --socket /tmp/my-gpuattr/daemon.sock --reports-dir reports --attach-timeout 30m)";

}  // namespace

Subcommand AddDaemonSubcommand(CLI::App& app) {
  auto line = std::make_shared<DaemonCommandLine>();
  CLI::App* command = app.add_subcommand(
      "daemon", "Serve armed and traced processes of this user; write reports into a directory");
  command->add_option("--socket", line->options.socket_path,
                      "The socket to listen on; default: $GPUATTR_SOCKET, else "
                      "$XDG_RUNTIME_DIR/gpuattr/daemon.sock, else /tmp/gpuattr-$UID/daemon.sock");
  command
      ->add_option("--reports-dir", line->options.reports_dir,
                   "Directory the reports are written into (created when missing)")
      ->required();
  command->add_option("--attach-timeout", line->attach_timeout,
                      "Close an attach's windows this long after the request at the latest "
                      "(default 10m)");
  command->add_flag("-q,--quiet", line->options.quiet, "Nothing on stderr but errors");
  command->footer(kDaemonFooter);
  return {command, [line] { return DaemonSubcommand(*line); }};
}

int DaemonSubcommand(DaemonCommandLine line) {
  if (!line.attach_timeout.empty()) {
    StatusOr<uint64_t> timeout = ParseDuration(line.attach_timeout);
    if (!timeout.ok()) {
      std::fprintf(stderr, "gpuattr daemon: --attach-timeout: %s\n",
                   timeout.status().message().c_str());
      return kExitUsage;
    }
    line.options.attach_timeout_ns = *timeout;
  }
  return RunDaemon(line.options);
}

int RunDaemon(const DaemonCommandOptions& options) {
  StatusOr<std::string> reports_dir = PrepareReportsDir(options.reports_dir);
  if (!reports_dir.ok()) return Fail(reports_dir.status());
  const std::string socket_path = DaemonSocketPath(options.socket_path);
  if (Status claimed = ClaimDaemonSocket(socket_path); !claimed.ok()) return Fail(claimed);

  // Blocked before the socket exists, so a signal sent once the daemon is reachable is never
  // lost to its default action.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &handled, nullptr) != 0) {
    return Fail(InternalError("cannot block SIGINT and SIGTERM"));
  }
  const int signal_fd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) return Fail(InternalError(std::string("signalfd: ") + std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } signal_fd_closer{signal_fd};

  DaemonOptions daemon_options;
  daemon_options.reports_dir = *reports_dir;
  daemon_options.analysis = options.analysis;
  daemon_options.attach_timeout_ns = options.attach_timeout_ns;
  if (!options.quiet) {
    daemon_options.log = [](const std::string& line) {
      std::fprintf(stderr, "gpuattr daemon: %s\n", line.c_str());
    };
  }
  StatusOr<std::unique_ptr<DaemonServer>> listening =
      DaemonServer::Listen(socket_path, std::move(daemon_options));
  if (!listening.ok()) return Fail(listening.status());
  DaemonServer& daemon = **listening;
  if (!options.quiet) {
    std::fprintf(stderr, "gpuattr daemon: listening on %s, reports into %s\n", socket_path.c_str(),
                 reports_dir->c_str());
  }

  for (;;) {
    pollfd fds[2] = {{signal_fd, POLLIN, 0}, {daemon.fd(), POLLIN, 0}};
    if (poll(fds, 2, daemon.NextTimerMs()) < 0 && errno != EINTR) {
      return Fail(InternalError(std::string("poll: ") + std::strerror(errno)));
    }
    if (fds[0].revents != 0) {
      StatusOr<bool> stop = StopRequested(signal_fd);
      if (!stop.ok()) return Fail(stop.status());
      if (*stop) break;
    }
    // Also when only a timer is due: Service runs the timers after its (non-waiting) turn.
    if (Status served = daemon.Service(0); !served.ok()) return Fail(served);
  }

  daemon.Shutdown();
  if (!options.quiet) {
    const DaemonStats& stats = daemon.stats();
    const IngestStats& ingest = daemon.ingest_stats();
    std::fprintf(stderr,
                 "gpuattr daemon: stopped: %llu traced report(s), %llu attach report(s), %llu "
                 "report(s) not written; %llu connection(s) accepted, %llu rejected, %llu "
                 "message(s) rejected\n",
                 static_cast<unsigned long long>(stats.traced_reports),
                 static_cast<unsigned long long>(stats.attach_reports),
                 static_cast<unsigned long long>(stats.report_failures),
                 static_cast<unsigned long long>(ingest.accepted_connections),
                 static_cast<unsigned long long>(ingest.rejected_connections),
                 static_cast<unsigned long long>(ingest.rejected_messages));
  }
  return daemon.stats().report_failures == 0 ? 0 : kExitInternal;
}

}  // namespace gpuattr::collector
