#include "cli/run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/os.h"
#include "cli/analysis_flags.h"
#include "cli/child_process.h"
#include "cli/cli.h"
#include "cli/daemon_socket.h"
#include "cli/kept_kernel_maps.h"
#include "cli/output_names.h"
#include "cli/private_dir.h"
#include "cli/shim_locator.h"
#include "gpuattr_version.h"
#include "ingest/socket_server.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "views/run_summary.h"

namespace gpuattr::collector {
namespace {

constexpr char kSocketName[] = "collector.sock";
constexpr char kStepTimerName[] = "clean-steps";  // the clean run's step timer file
// The annotator's kernel maps of compiled graphs, one <pid>.jsonl per process
// (analysis/kernel_maps.h).
constexpr char kKernelMapsName[] = "kernel-maps";

// What the poll loop learned from the signalfd and from reaping.
struct SignalEvents {
  bool child_exited = false;
  int wait_status = 0;                    // the command's, once child_exited
  bool children_left = true;              // the command, or descendants orphaned to us (subreaper)
  bool interrupt = false;                 // a SIGINT or SIGTERM arrived
  std::map<uint32_t, int> exit_statuses;  // pid -> shell exit status, every process we reaped
};

// Reaps every child that ended: the command and, gpuattr being a child subreaper, any orphaned
// descendant. SIGCHLD coalesces, so this loops until waitpid says nothing more has ended.
Status ReapChildren(pid_t child, SignalEvents* events) {
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      events->exit_statuses[static_cast<uint32_t>(done)] = ShellExitStatus(status);
      if (done == child) {
        events->child_exited = true;
        events->wait_status = status;
      }
      continue;
    }
    if (done == 0) {
      events->children_left = true;
      return Status::Ok();
    }
    if (errno == EINTR) continue;
    if (errno == ECHILD) {
      events->children_left = false;
      return Status::Ok();
    }
    return InternalError(std::string("waitpid: ") + std::strerror(errno));
  }
}

// Reads every pending signal. Forwards SIGINT/SIGTERM sent by a process to the command while it
// runs (see run.h for why terminal-generated ones are not), and reaps.
Status DrainSignals(int signal_fd, pid_t child, SignalEvents* events) {
  for (;;) {
    signalfd_siginfo info{};
    const ssize_t got = read(signal_fd, &info, sizeof(info));
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return InternalError(std::string("reading the signalfd: ") + std::strerror(errno));
    }
    if (got != static_cast<ssize_t>(sizeof(info))) return InternalError("short signalfd read");
    const int signo = static_cast<int>(info.ssi_signo);
    if (signo == SIGINT || signo == SIGTERM) {
      events->interrupt = true;
      if (!events->child_exited && info.ssi_code != SI_KERNEL) kill(child, signo);
    }
  }
  return ReapChildren(child, events);
}

// SIGCHLD, SIGINT and SIGTERM, read through a signalfd. Blocked before the spawn so no SIGCHLD or
// early SIGTERM slips past it. They stay blocked until gpuattr exits; unblocking would deliver a
// pending SIGINT with its default action. The child gets the mask gpuattr started with.
struct SignalFd {
  int fd = -1;

  static StatusOr<SignalFd> Open(sigset_t* original_mask) {
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &handled, original_mask) != 0) {
      return InternalError("cannot block SIGCHLD, SIGINT and SIGTERM");
    }
    SignalFd result;
    result.fd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    if (result.fd < 0) return InternalError(std::string("signalfd: ") + std::strerror(errno));
    return result;
  }
  SignalFd() = default;
  SignalFd(SignalFd&& other) noexcept : fd(other.fd) { other.fd = -1; }
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  SignalFd& operator=(SignalFd&&) = delete;
  ~SignalFd() {
    if (fd >= 0) close(fd);
  }
};

// The command could not be executed: say so as a shell would, with its exit status.
int SpawnFailureStatus(const std::string& command, int exec_error) {
  const bool not_found = exec_error == ENOENT;
  std::fprintf(stderr, "gpuattr: %s: %s\n", command.c_str(),
               not_found ? "command not found" : std::strerror(exec_error));
  return not_found ? 127 : 126;
}

// Waits until `child` exits, forwarding SIGINT and SIGTERM to it and reaping (DrainSignals);
// its shell exit status.
StatusOr<int> WaitForChild(int signal_fd, pid_t child) {
  SignalEvents events;
  while (!events.child_exited) {
    pollfd fd{signal_fd, POLLIN, 0};
    if (poll(&fd, 1, -1) < 0 && errno != EINTR) {
      return InternalError(std::string("poll: ") + std::strerror(errno));
    }
    GPUATTR_RETURN_IF_ERROR(DrainSignals(signal_fd, child, &events));
  }
  return ShellExitStatus(events.wait_status);
}

// One poll over the signalfd and the server, then whatever they have.
Status PollOnce(int signal_fd, SocketServer* server, pid_t child, int timeout_ms,
                SignalEvents* events) {
  pollfd fds[2] = {{signal_fd, POLLIN, 0}, {server->fd(), POLLIN, 0}};
  const int ready = poll(fds, 2, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return Status::Ok();
    return InternalError(std::string("poll: ") + std::strerror(errno));
  }
  if (fds[0].revents != 0) GPUATTR_RETURN_IF_ERROR(DrainSignals(signal_fd, child, events));
  if (fds[1].revents != 0) GPUATTR_RETURN_IF_ERROR(server->Service(0));
  return Status::Ok();
}

// The Python annotator's mode: --pytorch, else GPUATTR_PYTORCH, else "modules".
StatusOr<std::string> PytorchMode(const RunOptions& options) {
  std::string mode = options.pytorch_mode;
  if (mode.empty()) {
    const char* from_environment = std::getenv(kPytorchEnv);
    mode =
        from_environment != nullptr && from_environment[0] != '\0' ? from_environment : "modules";
  }
  if (mode != "modules" && mode != "ops" && mode != "off") {
    return InvalidArgumentError("the Python annotator's mode (--pytorch, " +
                                std::string(kPytorchEnv) + ") is \"" + mode +
                                "\"; it is modules, ops or off");
  }
  return mode;
}

// The traced command's environment: the shim, the socket and the Python annotator in `mode`,
// counting FLOPs with `flop_rules` (absolute; empty: the built-in rules) when `flops`.
StatusOr<std::vector<std::string>> TracedEnvironment(const std::string& pytorch_mode,
                                                     const std::string& socket_path, bool flops,
                                                     const std::string& flop_rules,
                                                     const std::string& kernel_maps = "") {
  GPUATTR_ASSIGN_OR_RETURN(const std::string shim, LocateShim());
  std::vector<std::string> environment =
      BuildChildEnvironment(CurrentEnvironment(), shim, socket_path);
  std::string python_site;
  if (pytorch_mode != "off") {
    GPUATTR_ASSIGN_OR_RETURN(python_site, LocatePythonSite());
  }
  AddPythonAnnotator(&environment, pytorch_mode, python_site, GPUATTR_NVTX_LIBRARY_PATH);
  if (pytorch_mode != "off" && !kernel_maps.empty()) {
    SetVariable(&environment, kKernelMapsEnv, kernel_maps);
  }
  if (flops) {
    SetVariable(&environment, kFlopsEnv, "1");
    if (!flop_rules.empty()) SetVariable(&environment, kFlopRulesEnv, flop_rules);
  }
  return environment;
}

// --flops and its companions (each implies --flops), checked before anything starts; the rule
// file made absolute (the command may change its directory).
Status CheckWorkOptions(RunOptions* options, const std::string& pytorch_mode) {
  // MFU's and the rules' options mean nothing without FLOPs: each asks for them.
  if (options->clean_steps > 0 || options->clean_step_ms || options->peak_flops) {
    options->flops = true;
  }
  if (!options->flop_rules_path.empty()) {
    options->flops = true;
    char* absolute = realpath(options->flop_rules_path.c_str(), nullptr);
    if (absolute == nullptr) {
      return InvalidArgumentError("--flop-rules " + options->flop_rules_path + ": " +
                                  std::strerror(errno));
    }
    options->flop_rules_path = absolute;
    std::free(absolute);
  }
  if (options->flops && pytorch_mode == "off") {
    return InvalidArgumentError(
        "--flops counts through the Python annotator, which --pytorch off (or GPUATTR_PYTORCH=off) "
        "turns off");
  }
  if (options->peak_flops && !(*options->peak_flops > 0)) {
    return InvalidArgumentError("--peak-flops must be a positive number of FLOP/s");
  }
  if (options->clean_step_ms && !(*options->clean_step_ms > 0)) {
    return InvalidArgumentError("--clean-step-ms must be a positive number of milliseconds");
  }
  return Status::Ok();
}

// The clean run's step timer file: "<pid> <rank> <ns>" lines, per process in the order written.
// Lines that are not three numbers are passed over (a process cut mid-write).
std::vector<CleanRun::Process> ReadStepTimes(const std::string& path) {
  std::vector<CleanRun::Process> processes;
  std::FILE* file = std::fopen(path.c_str(), "re");
  if (file == nullptr) return processes;
  std::map<uint32_t, size_t> index_of_pid;
  char line[128];
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    unsigned long pid = 0;
    long rank = 0;
    unsigned long long end_ns = 0;
    char extra = 0;
    if (std::sscanf(line, "%lu %ld %llu %c", &pid, &rank, &end_ns, &extra) != 3 ||
        pid > UINT32_MAX || rank < -1 || rank > INT32_MAX) {
      continue;
    }
    auto [found, added] = index_of_pid.try_emplace(static_cast<uint32_t>(pid), processes.size());
    if (added) {
      processes.push_back({static_cast<uint32_t>(pid), static_cast<int32_t>(rank), {}});
    }
    processes[found->second].step_ends_ns.push_back(end_ns);
  }
  std::fclose(file);
  return processes;
}

// --clean-steps: CMD once more with only the step timer, its stdio on /dev/null, waited for with
// signals forwarded as for the traced run; what it timed.
StatusOr<CleanRun> RunClean(const RunOptions& options, const std::string& timer_path, int signal_fd,
                            const sigset_t& original_mask) {
  CleanRun clean;
  clean.steps = options.clean_steps;
  clean.skip_steps = options.analysis.skip_steps;
  GPUATTR_ASSIGN_OR_RETURN(const std::string python_site, LocatePythonSite());
  std::vector<std::string> environment = CurrentEnvironment();
  AddStepTimer(&environment, python_site, timer_path);
  GPUATTR_ASSIGN_OR_RETURN(
      const SpawnResult spawned,
      SpawnChild(options.command, environment, original_mask, ChildStdio::kDevNull));
  if (spawned.pid <= 0) {
    clean.failure = std::string("could not start: ") + std::strerror(spawned.exec_error);
    return clean;
  }
  GPUATTR_ASSIGN_OR_RETURN(clean.exit_status, WaitForChild(signal_fd, spawned.pid));
  clean.processes = ReadStepTimes(timer_path);
  return clean;
}

// `gpuattr run --armed`: CMD with the shim armed for the daemon; signals forwarded, no report.
StatusOr<int> RunArmed(const RunOptions& options, const std::string& pytorch_mode) {
  const std::string socket_path = DaemonSocketPath(options.socket_path);
  StatusOr<int> probe = ConnectToDaemon(socket_path);
  if (probe.ok()) {
    close(*probe);
  } else {
    std::fprintf(stderr,
                 "gpuattr run: warning: %s; %s runs anyway, but cannot be attached to until a "
                 "daemon listens there (gpuattr daemon)\n",
                 probe.status().message().c_str(), options.command[0].c_str());
  }
  GPUATTR_ASSIGN_OR_RETURN(
      std::vector<std::string> environment,
      TracedEnvironment(pytorch_mode, socket_path, options.flops, options.flop_rules_path));
  SetVariable(&environment, kModeEnv, "armed");

  sigset_t original_mask;
  GPUATTR_ASSIGN_OR_RETURN(const SignalFd signals, SignalFd::Open(&original_mask));
  const int signal_fd = signals.fd;
  GPUATTR_ASSIGN_OR_RETURN(const SpawnResult spawned,
                           SpawnChild(options.command, environment, original_mask));
  if (spawned.pid <= 0) return SpawnFailureStatus(options.command[0], spawned.exec_error);
  return WaitForChild(signal_fd, spawned.pid);
}

// Once a run with --armed is parsed: the report options it has no report for.
int RejectReportOptionsWhenArmed(const CLI::App& run) {
  for (const char* report_option :
       {"--output", "--activities", "--trace", "--folded", "--speedscope", "--kernel-maps"}) {
    const CLI::Option* option = run.get_option_no_throw(report_option);
    if (option != nullptr && option->count() > 0) {
      std::fprintf(stderr,
                   "gpuattr run: --armed writes no report, so %s has nothing to write; "
                   "capture a window with gpuattr attach -o\n",
                   report_option);
      return kExitUsage;
    }
  }
  return 0;
}

constexpr char kRunFooter[] =
    R"(Runs CMD with libgpuattr_inject.so preloaded, collects the GPU time of CMD and every process
it starts, and writes a JSON report (schema gpuattr.report/1) once CMD has exited. CMD's stdin,
stdout and stderr are its own; gpuattr prints its summary on stderr afterwards. SIGINT and
SIGTERM sent to gpuattr are forwarded to CMD; the report is still written.

Exit status: CMD's, or 128 + the signal that killed it; 127 when CMD is not found, 126 when it
cannot be executed; 2 usage; 4 when an output cannot be written (an existing name without
--force-overwrite, too) or on an internal error.

Examples:
  gpuattr run -o report.json -- python train.py
  gpuattr run --quiet -- torchrun --nproc-per-node 8 train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json)";

}  // namespace

Subcommand AddRunSubcommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Run a command under gpuattr and write a report");
  run->add_option("-o,--output", options->output,
                  "Where to write the JSON report (%p %h %q{VAR} %n expand: docs/jobs.md)")
      ->capture_default_str();
  run->add_flag("--force-overwrite", options->force_overwrite,
                "Replace outputs that exist (otherwise an existing name is refused)");
  run->add_flag("--armed", options->armed,
                "Collect nothing now: run CMD armed for the gpuattr daemon, to be attached to "
                "later with `gpuattr attach` (docs/attach.md); writes no report itself");
  run->add_option("--socket", options->socket_path,
                  "With --armed: the daemon's socket (default: $GPUATTR_SOCKET, else the "
                  "daemon's default)");
  run->add_option("--pytorch", options->pytorch_mode,
                  "The Python annotator for PyTorch programs (docs/pytorch.md): modules (module, "
                  "step, backward, optimizer, loss and dataloader ranges), ops (those and a "
                  "range per aten op) or off; default: $GPUATTR_PYTORCH, else modules")
      ->check(CLI::IsMember({"modules", "ops", "off"}));
  run->add_flag(
      "--flops", options->flops,
      "Count each aten op's FLOPs and bytes in the Python annotator, by per-op rules over "
      "the shapes that ran: FLOPs, achieved FLOP/s, intensity and MFU per pass "
      "(docs/pytorch.md §FLOPs)");
  run->add_option("--flop-rules", options->flop_rules_path,
                  "A FLOP rule file (gpuattr.flop_rules/1) read before the built-in rules; "
                  "implies --flops");
  run->add_option("--peak-flops", options->peak_flops,
                  "The device's dense peak FLOP/s for MFU, instead of gpuattr's device table; "
                  "implies --flops");
  CLI::Option* clean_steps =
      run->add_option("--clean-steps", options->clean_steps,
                      "MFU's denominator: run CMD a second time with only a step timer (no shim, "
                      "no ranges, output discarded) and take the median of N steps; implies "
                      "--flops");
  run->add_option("--clean-step-ms", options->clean_step_ms,
                  "MFU's denominator, stated: the uninstrumented step wall time in milliseconds; "
                  "implies --flops")
      ->excludes(clean_steps);
  AddAnalysisFlags(run,
                   {&options->analysis, &options->phase_rules_path, &options->family_rules_path});
  run->add_flag("-q,--quiet", options->quiet, "No summary on stderr");
  run->add_option("--drain-timeout", options->drain_timeout_s,
                  "Seconds to wait, after CMD exits, for its descendants and their streams to end")
      ->check(CLI::Range(0.0, kMaxDrainTimeoutS))
      ->capture_default_str();
  run->add_option("--kernel-maps", options->kept_kernel_maps,
                  "Keep the kernel maps of the program's torch.compile'd graphs in this file, "
                  "for `gpuattr import --kernel-maps` of a torch.profiler trace of it");
  run->add_option("--activities", options->exports.activities,
                  "Also write one JSON line per device activity to this file");
  run->add_option("--trace,--perfetto", options->exports.trace,
                  "Also write a Chrome trace-event timeline (Perfetto UI, chrome://tracing)");
  run->add_option("--folded", options->exports.folded,
                  "Also write folded stacks of device time (flamegraph.pl, inferno, speedscope)");
  run->add_option("--speedscope", options->exports.speedscope,
                  "Also write a speedscope profile of device time");
  run->add_option("command", options->command, "CMD ARGS...: the command to profile")->required();
  // The first positional starts CMD: its own flags are never taken for ours, with or without
  // a `--` before it.
  run->positionals_at_end();
  run->footer(kRunFooter);
  return {run, [options, run] {
            // Armed, nothing is collected until `gpuattr attach` opens a window; its -o writes
            // that.
            if (options->armed) {
              if (const int rejected = RejectReportOptionsWhenArmed(*run)) return rejected;
            }
            StatusOr<int> exit_status = RunCapture(*options);
            if (exit_status.ok()) return *exit_status;
            std::fprintf(stderr, "gpuattr run: %s\n", exit_status.status().message().c_str());
            return ExitCodeFor(exit_status.status());
          }};
}

StatusOr<int> RunCapture(const RunOptions& requested) {
  RunOptions options = requested;
  if (options.command.empty() || options.command[0].empty()) {
    return InvalidArgumentError("no command given: gpuattr run [options] -- CMD ARGS...");
  }
  // Checked before anything is set up: a bad GPUATTR_PYTORCH creates no socket.
  GPUATTR_ASSIGN_OR_RETURN(const std::string pytorch_mode, PytorchMode(options));
  GPUATTR_RETURN_IF_ERROR(CheckWorkOptions(&options, pytorch_mode));
  if (options.armed) return RunArmed(options, pytorch_mode);
  if (!(options.drain_timeout_s >= 0.0 && options.drain_timeout_s <= kMaxDrainTimeoutS)) {
    return InvalidArgumentError("--drain-timeout must be between 0 and " +
                                std::to_string(static_cast<int>(kMaxDrainTimeoutS)) + " seconds");
  }
  // Names expanded and checked before CMD starts; CMD's stdout is its own, so no "-o -".
  GPUATTR_ASSIGN_OR_RETURN(
      const ExistingFile existing,
      ResolveOutputNames(&options.output, &options.exports, options.force_overwrite,
                         /*report_to_stdout=*/false, ProcessOutputNameContext()));
  GPUATTR_RETURN_IF_ERROR(CheckOutputPath(options.output, "the report path (-o)"));
  if (!options.kept_kernel_maps.empty()) {
    GPUATTR_RETURN_IF_ERROR(
        ResolveKeptKernelMaps(&options.kept_kernel_maps, existing, pytorch_mode));
  }
  AnalysisOptions analysis = options.analysis;
  GPUATTR_RETURN_IF_ERROR(
      LoadRuleFiles(options.phase_rules_path, options.family_rules_path, &analysis));
  // --trace, --folded, --speedscope, --activities: fed by every connection's analysis as it
  // streams, and published once the report is written.
  std::shared_ptr<Exports> exports;
  if (options.exports.any()) {
    GPUATTR_ASSIGN_OR_RETURN(exports, Exports::Create(options.exports, "gpuattr " GPUATTR_VERSION));
    analysis.observer = exports;
  }
  GPUATTR_ASSIGN_OR_RETURN(PrivateDir dir, PrivateDir::Create(sizeof(kSocketName)));
  const std::string socket_path = dir.path() + "/" + kSocketName;
  const std::string kernel_maps = dir.path() + "/" + kKernelMapsName;
  if (pytorch_mode != "off") {
    std::error_code error;
    if (std::filesystem::create_directory(kernel_maps, error)) analysis.kernel_maps = kernel_maps;
  }
  ServerOptions server_options;
  server_options.analysis = analysis;
  GPUATTR_ASSIGN_OR_RETURN(std::unique_ptr<SocketServer> server,
                           SocketServer::Listen(socket_path, server_options));

  sigset_t original_mask;
  GPUATTR_ASSIGN_OR_RETURN(const SignalFd signals, SignalFd::Open(&original_mask));
  const int signal_fd = signals.fd;

  // Orphaned descendants of the command are reparented to us rather than to init: we then know
  // when the last of them has ended (the drain below) and learn their exit statuses. Not
  // inherited by the command (prctl(2)).
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return InternalError(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
  }

  const uint64_t started_realtime_ns = NowNs(CLOCK_REALTIME);
  const uint64_t started_monotonic_ns = NowNs(CLOCK_MONOTONIC);
  GPUATTR_ASSIGN_OR_RETURN(const std::vector<std::string> environment,
                           TracedEnvironment(pytorch_mode, socket_path, options.flops,
                                             options.flop_rules_path, analysis.kernel_maps));
  GPUATTR_ASSIGN_OR_RETURN(const SpawnResult spawned,
                           SpawnChild(options.command, environment, original_mask));
  if (spawned.pid <= 0) return SpawnFailureStatus(options.command[0], spawned.exec_error);

  SignalEvents events;
  while (!events.child_exited) {
    GPUATTR_RETURN_IF_ERROR(PollOnce(signal_fd, server.get(), spawned.pid, -1, &events));
  }
  const int exit_status = ShellExitStatus(events.wait_status);

  // Descendants may still run (and connect late) and the last messages may be in flight: wait,
  // a bounded time, until no connection is open and no descendant is left. Each turn first
  // accepts what is queued, so a process that connected and exited is not missed.
  events.interrupt = false;
  const uint64_t drain_deadline_ns =
      NowNs(CLOCK_MONOTONIC) + static_cast<uint64_t>(options.drain_timeout_s * 1e9);
  for (;;) {
    GPUATTR_RETURN_IF_ERROR(server->Service(0));
    if (server->open_connections() == 0 && !events.children_left) break;
    const uint64_t now = NowNs(CLOCK_MONOTONIC);
    if (events.interrupt || now >= drain_deadline_ns) break;
    const int timeout_ms = static_cast<int>((drain_deadline_ns - now + 999999) / 1000000);
    GPUATTR_RETURN_IF_ERROR(PollOnce(signal_fd, server.get(), spawned.pid, timeout_ms, &events));
  }
  server->FinishAll();
  const uint64_t duration_ns = NowNs(CLOCK_MONOTONIC) - started_monotonic_ns;

  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.capture.command = options.command;
  inputs.capture.host = HostName();
  inputs.capture.started_at_realtime_ns = started_realtime_ns;
  inputs.capture.duration_ns = duration_ns;
  for (const auto& trace : server->finished_traces()) {
    inputs.processes.push_back(trace->TakeAnalysis());
  }
  inputs.exit_statuses = events.exit_statuses;
  inputs.coverage_threshold = analysis.coverage_threshold;
  inputs.inherit = analysis.inherit;
  inputs.rejected_connections = server->stats().rejected_connections;
  inputs.rejected_messages = server->stats().rejected_messages;
  inputs.work.requested = options.flops;
  inputs.work.peak_flops_per_s = options.peak_flops;
  if (options.clean_step_ms) {
    inputs.work.stated_step_ns = static_cast<uint64_t>(*options.clean_step_ms * 1e6 + 0.5);
  }
  if (options.clean_steps > 0) {
    GPUATTR_ASSIGN_OR_RETURN(
        inputs.work.clean_run,
        RunClean(options, dir.path() + "/" + kStepTimerName, signal_fd, original_mask));
  }
  const Report report = BuildReport(inputs);
  GPUATTR_RETURN_IF_ERROR(WriteReportAtomically(report, options.output, existing));
  if (exports) GPUATTR_RETURN_IF_ERROR(exports->Commit());
  if (!options.kept_kernel_maps.empty()) {
    GPUATTR_RETURN_IF_ERROR(KeepKernelMaps(kernel_maps, options.kept_kernel_maps, existing));
  }

  if (!options.quiet) {
    std::fputs(RenderSummary(report.without_step_rows).c_str(), stderr);
    for (const std::string& note : server->stats().rejection_notes) {
      std::fprintf(stderr, "gpuattr: %s\n", note.c_str());
    }
    std::fprintf(stderr, "gpuattr: report written to %s\n", options.output.c_str());
  }
  return exit_status;
}

}  // namespace gpuattr::collector
