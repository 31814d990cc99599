#include "cli/attach_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "analysis/process_facts.h"
#include "analysis/process_trace.h"
#include "analysis/refusal_catalogue.h"
#include "base/os.h"
#include "cli/cli.h"
#include "cli/daemon_socket.h"
#include "cli/output_names.h"
#include "cli/run.h"
#include "cli/shim_loading.h"
#include "ingest/daemon_server.h"
#include "report/atomic_write.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "wire/codec.h"

namespace gpuattr::collector {
namespace {

constexpr uint64_t kMaxDurationNs = 7ull * 24 * 3600 * 1000000000ull;
// A report larger than this is not what a daemon of ours wrote.
constexpr off_t kMaxReportBytes = off_t{4} << 30;
// How long a shim just loaded may take to register with the daemon, and how often to ask.
constexpr uint64_t kRegistrationWaitNs = 5'000'000'000;
constexpr useconds_t kRegistrationPollUs = 20'000;

wire::AttachRequest RequestFor(const AttachOptions& options) {
  wire::AttachRequest request{};
  request.selector = static_cast<uint32_t>(options.selector);
  request.value = options.selector == wire::AttachSelector::kAll ? 0 : options.value;
  request.duration_ns = options.duration_ns;
  request.steps = options.steps;
  request.step_name_string = options.step_name.empty() ? 0 : 1;
  return request;
}

// Writes the report of a refused attach: capture.mode "attach" and one process entry, refused,
// with `refusal` (its cause followed by what was seen). The entry is what the report builder
// makes of a process that said Hello and Goodbye and nothing else (nothing measured), with the
// attach refusal added: one analysis, one builder, one shape of entry.
Status WriteRefusalReport(const AttachOptions& options, const RefusalEntry& refusal,
                          const std::string& seen) {
  const uint32_t pid =
      options.selector == wire::AttachSelector::kPid ? static_cast<uint32_t>(options.value) : 0;
  std::error_code error;
  const std::string exe =
      pid != 0
          ? std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).string()
          : std::string();
  std::vector<uint8_t> buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  wire::Hello hello = wire::MakeHello(wire::HelloMode::kTraced, pid);
  hello.rank = options.selector == wire::AttachSelector::kRank ? options.value : -1;
  hello.exe_string = exe.empty() || error ? 0 : 1;
  writer.Append(hello);
  if (hello.exe_string != 0) writer.AppendString(1, exe);
  writer.Append(wire::Goodbye{0, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0});
  ProcessTrace trace;
  GPUATTR_RETURN_IF_ERROR(trace.ConsumeMessage(buffer.data(), writer.Finish(0)));
  trace.Finish();
  ProcessAnalysis analysis = trace.TakeAnalysis();
  AddOutsideRefusal(refusal, seen, analysis);

  ReportInputs inputs;
  inputs.capture.mode = "attach";
  inputs.capture.host = HostName();
  inputs.capture.started_at_realtime_ns = NowNs(CLOCK_REALTIME);
  inputs.window_request = WindowRequestFromWire(RequestFor(options), options.step_name);
  inputs.processes.push_back(std::move(analysis));
  const Report report = BuildReport(inputs);
  return WriteReportAtomically(report, options.output, ExistingFileFor(options.force_overwrite));
}

int Refuse(const AttachOptions& options, const RefusalEntry& refusal, const std::string& seen) {
  std::fprintf(stderr, "gpuattr attach: refused (%s): %s\n", refusal.code, seen.c_str());
  Status written = WriteRefusalReport(options, refusal, seen);
  if (!written.ok()) {
    std::fprintf(stderr, "gpuattr attach: %s\n", written.message().c_str());
    return kExitInternal;
  }
  if (!options.quiet) {
    std::fprintf(stderr, "gpuattr attach: report written to %s\n", options.output.c_str());
  }
  return kExitData;
}

int Fail(int exit_status, const std::string& message) {
  std::fprintf(stderr, "gpuattr attach: %s\n", message.c_str());
  return exit_status;
}

struct Reply {
  wire::AttachReply reply{};
  std::string report_path;
  std::string message;

  wire::AttachStatus status() const { return static_cast<wire::AttachStatus>(reply.status); }
};

// Waits for the daemon's one reply message.
StatusOr<Reply> ReceiveReply(int fd, uint64_t timeout_ns) {
  const uint64_t deadline = NowNs(CLOCK_MONOTONIC) + timeout_ns;
  std::vector<uint8_t> buffer(wire::kMaxMessageBytes + 1);
  for (;;) {
    const uint64_t now = NowNs(CLOCK_MONOTONIC);
    if (now >= deadline) {
      return UnavailableError(
          "no reply from the daemon within --timeout; it closes the windows and writes the "
          "report into its reports directory");
    }
    const uint64_t left_ms = (deadline - now + 999999) / 1000000;
    pollfd poll_fd{fd, POLLIN, 0};
    const int ready = poll(&poll_fd, 1, left_ms > 60000 ? 60000 : static_cast<int>(left_ms));
    if (ready < 0 && errno != EINTR) return InternalError(std::string("poll: ") + strerror(errno));
    if (ready <= 0) continue;
    const ssize_t received = recv(fd, buffer.data(), buffer.size(), MSG_TRUNC);
    if (received < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return UnavailableError(std::string("the daemon connection failed: ") + strerror(errno));
    }
    if (received == 0) return UnavailableError("the daemon closed the connection without a reply");
    if (static_cast<size_t>(received) > wire::kMaxMessageBytes) {
      return DataLossError("the daemon's reply is oversized");
    }
    wire::MessageReader reader;
    if (reader.Open(buffer.data(), static_cast<uint32_t>(received)) != wire::DecodeError::kNone) {
      return DataLossError("the daemon's reply is malformed");
    }
    wire::RecordView record;
    if (!reader.Next(&record) || record.type != wire::RecordType::kAttachReply) {
      return DataLossError("the daemon's reply does not start with an AttachReply");
    }
    Reply reply;
    reply.reply = record.As<wire::AttachReply>();
    while (reader.Next(&record)) {
      if (record.type != wire::RecordType::kString) continue;
      const uint32_t id = record.As<wire::String>().id;
      if (id != 0 && id == reply.reply.report_path_string) {
        reply.report_path = std::string(record.StringText());
      } else if (id != 0 && id == reply.reply.message_string) {
        reply.message = std::string(record.StringText());
      }
    }
    return reply;
  }
}

// The daemon's report, read without following a link: an absolute path to a regular file of
// ours, and JSON.
StatusOr<std::string> ReadDaemonReport(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return DataLossError("the daemon named no absolute report path ('" + path + "')");
  }
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return DataLossError("cannot open the daemon's report " + path + ": " + strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid() ||
      info.st_size > kMaxReportBytes) {
    return DataLossError("the daemon's report " + path +
                         " is not a regular file of ours of a plausible size");
  }
  std::string text(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = read(fd, text.data() + done, text.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return DataLossError("cannot read the daemon's report " + path);
    done += static_cast<size_t>(got);
  }
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("schema_version")) {
    return DataLossError("the daemon's report " + path + " is not a gpuattr report");
  }
  return text;
}

// Sends one AttachRequest on a new connection to the daemon and waits for its reply.
// kUnavailable: no daemon of ours answers (a daemon_unreachable refusal); kInvalidArgument: the
// socket path is unusable.
StatusOr<Reply> RequestWindow(const std::string& socket_path, const AttachOptions& options) {
  StatusOr<int> connected = ConnectToDaemon(socket_path);
  if (!connected.ok() && connected.status().code() != StatusCode::kInvalidArgument) {
    return UnavailableError(connected.status().message());
  }
  GPUATTR_ASSIGN_OR_RETURN(const int fd, std::move(connected));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  std::vector<uint8_t> buffer(wire::kMaxMessageBytes);
  wire::MessageWriter writer(buffer.data(), static_cast<uint32_t>(buffer.size()));
  writer.Append(RequestFor(options));
  if (!options.step_name.empty()) writer.AppendString(1, options.step_name);
  const uint32_t size = writer.Finish(0);
  if (send(fd, buffer.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
    return UnavailableError(std::string("sending the request failed: ") + strerror(errno));
  }
  StatusOr<Reply> reply = ReceiveReply(fd, options.timeout_ns);
  if (!reply.ok() && reply.status().code() == StatusCode::kUnavailable) {
    return InternalError(reply.status().message());  // it answered before: not unreachable
  }
  return reply;
}

// After the shim was loaded: the request again, until the process has registered (the shim's
// flush thread connects at once) or kRegistrationWaitNs passed; the last reply either way.
StatusOr<Reply> RequestWindowOnceRegistered(const std::string& socket_path,
                                            const AttachOptions& options) {
  const uint64_t deadline = NowNs(CLOCK_MONOTONIC) + kRegistrationWaitNs;
  for (;;) {
    StatusOr<Reply> reply = RequestWindow(socket_path, options);
    if (!reply.ok() || reply->status() != wire::AttachStatus::kRequiresShim) return reply;
    if (NowNs(CLOCK_MONOTONIC) >= deadline) {
      reply->message = "the shim was loaded into pid " + std::to_string(options.value) +
                       " but did not register with the daemon within " +
                       std::to_string(kRegistrationWaitNs / 1'000'000'000) + " s";
      return reply;
    }
    usleep(kRegistrationPollUs);
  }
}

constexpr char kAttachFooter[] =
    R"(Asks the gpuattr daemon to open a capture window in armed processes (started with
`gpuattr run --armed -- CMD`, or with the shim preloaded and GPUATTR_MODE=armed), waits until
every window has ended, and writes the report (capture.mode "attach", one process entry per
window). --pid of a process started without gpuattr first loads the shim into it with ptrace
(one thread stopped for about a millisecond; docs/attach.md §Injection): its windows then have
device time but no NVTX ranges (refused as nvtx_bound_before_attach). --no-inject refuses instead. --duration windows are closed by the daemon that long after they began; --steps windows
begin at the next top-level step range (--step NAME, else step, train_step, iteration, iter,
ProfilerStep#N) and end after N of them. The daemon also closes every window after its
--attach-timeout (default 10 min); --timeout bounds only how long this command waits.

Exit status: 0; 3 when the pid does not exist or the attach is refused (a report with the
refusal is written: attach_requires_shim, attach_other_user, daemon_unreachable,
attach_no_cuda_driver (the process never loaded the CUDA driver: nothing was touched, and the
processes below it that did are named), or why the shim could not be loaded:
attach_ptrace_denied, attach_target_traced, attach_static_target,
attach_non_glibc_target, attach_no_safe_point, attach_injection_failed) or a selected
process already has a window open; 2 usage; 4 the daemon failed, no reply came in time, or the
report cannot be written.

Examples:
  gpuattr attach --pid 4242 --duration 30s -o window.json
  gpuattr attach --all --steps 20 -o steps.json
  gpuattr attach --rank 0 --steps 5 --step train_step -o rank0.json)";

}  // namespace

StatusOr<uint64_t> ParseDuration(const std::string& text) {
  struct Unit {
    const char* suffix;
    double ns;
  };
  constexpr Unit kUnits[] = {{"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  std::string number = text;
  double scale = 1e9;  // plain seconds
  for (const Unit& unit : kUnits) {
    const size_t length = std::strlen(unit.suffix);
    if (number.size() > length &&
        number.compare(number.size() - length, length, unit.suffix) == 0) {
      number.resize(number.size() - length);
      scale = unit.ns;
      break;
    }
  }
  const bool plain = !number.empty() &&
                     number.find_first_not_of("0123456789.") == std::string::npos &&
                     number.find('.') == number.rfind('.') && number != ".";
  const double value = plain ? std::strtod(number.c_str(), nullptr) * scale : 0;
  if (!plain || !(value >= 1.0) || value > static_cast<double>(kMaxDurationNs)) {
    return InvalidArgumentError("'" + text +
                                "' is not a duration between 1 ns and a week (30s, 500ms, 2m, 1h "
                                "or plain seconds)");
  }
  return static_cast<uint64_t>(std::llround(value));
}

int RunAttach(const AttachOptions& requested) {
  AttachOptions options = requested;
  ExportPaths no_exports;
  if (StatusOr<ExistingFile> resolved =
          ResolveOutputNames(&options.output, &no_exports, options.force_overwrite,
                             /*report_to_stdout=*/false, ProcessOutputNameContext());
      !resolved.ok()) {
    return Fail(ExitCodeFor(resolved.status()), resolved.status().message());
  }
  if (Status ok = CheckOutputPath(options.output, "the report path (-o)"); !ok.ok()) {
    return Fail(ExitCodeFor(ok), ok.message());
  }
  if ((options.duration_ns > 0) == (options.steps > 0)) {
    return Fail(kExitUsage, "give exactly one of --duration and --steps");
  }
  if (!options.step_name.empty() && options.steps == 0) {
    return Fail(kExitUsage, "--step needs --steps");
  }
  if (options.step_name.size() > wire::kMaxStringBytes) {
    return Fail(kExitUsage,
                "--step is longer than " + std::to_string(wire::kMaxStringBytes) + " bytes");
  }
  if (options.selector == wire::AttachSelector::kPid) {
    if (options.value <= 0) return Fail(kExitUsage, "--pid must be a positive pid");
    struct stat info {};
    const std::string proc = "/proc/" + std::to_string(options.value);
    if (stat(proc.c_str(), &info) != 0) {
      return Fail(kExitData, "no process with pid " + std::to_string(options.value));
    }
    if (info.st_uid != geteuid()) {
      return Refuse(options, AttachOtherUserRefusal(),
                    "pid " + std::to_string(options.value) + " belongs to uid " +
                        std::to_string(info.st_uid) + ", we are uid " + std::to_string(geteuid()));
    }
  }
  if (options.selector == wire::AttachSelector::kRank && options.value < 0) {
    return Fail(kExitUsage, "--rank must not be negative");
  }

  const std::string socket_path = DaemonSocketPath(options.socket_path);
  StatusOr<Reply> reply = RequestWindow(socket_path, options);
  if (!reply.ok() && reply.status().code() == StatusCode::kInvalidArgument) {
    return Fail(kExitUsage, reply.status().message());
  }
  if (!reply.ok() && reply.status().code() == StatusCode::kUnavailable) {
    return Refuse(options, DaemonUnreachableRefusal(), reply.status().message());
  }
  if (!reply.ok()) return Fail(kExitInternal, reply.status().message());
  if (reply->status() == wire::AttachStatus::kRequiresShim &&
      options.selector == wire::AttachSelector::kPid && !options.no_inject) {
    // Not registered: a process started without gpuattr. Unless it never loaded the CUDA driver
    // (then it is not touched), load the shim into it, wait for it to register, and ask again.
    std::optional<Refused> refused = RefuseWithoutCudaDriver(options.value);
    if (!refused) refused = LoadShimInto(options.value, socket_path, options.quiet);
    if (refused) return Refuse(options, *refused->refusal, refused->seen);
    reply = RequestWindowOnceRegistered(socket_path, options);
    if (!reply.ok()) return Fail(kExitInternal, reply.status().message());
  }

  switch (reply->status()) {
    case wire::AttachStatus::kDone:
      break;
    case wire::AttachStatus::kRequiresShim:
      return Refuse(options, AttachRequiresShimRefusal(), reply->message);
    case wire::AttachStatus::kBusy:
      return Fail(kExitData, "busy: " + reply->message);
    case wire::AttachStatus::kFailed:
      return Fail(kExitInternal, "the daemon failed: " + reply->message);
    default:
      return Fail(kExitInternal,
                  "the daemon answered with unknown status " + std::to_string(reply->reply.status));
  }
  StatusOr<std::string> report = ReadDaemonReport(reply->report_path);
  if (!report.ok()) return Fail(kExitInternal, report.status().message());
  if (Status written =
          WriteTextAtomically(*report, options.output, ExistingFileFor(options.force_overwrite));
      !written.ok()) {
    return Fail(kExitInternal, written.message());
  }
  if (!options.quiet) {
    std::fprintf(stderr, "gpuattr attach: %s; report written to %s\n",
                 reply->message.empty() ? "done" : reply->message.c_str(), options.output.c_str());
  }
  return 0;
}

}  // namespace gpuattr::collector

namespace gpuattr::collector {

Subcommand AddAttachSubcommand(CLI::App& app) {
  auto line = std::make_shared<AttachCommandLine>();
  CLI::App* command = app.add_subcommand(
      "attach", "Capture a window of running armed processes through the gpuattr daemon");
  command->add_option_function<int32_t>(
      "--pid",
      [line](int32_t pid) {
        line->options.selector = wire::AttachSelector::kPid;
        line->options.value = pid;
        ++line->selectors;
      },
      "The armed process to attach to");
  command->add_flag_callback(
      "--all",
      [line] {
        line->options.selector = wire::AttachSelector::kAll;
        ++line->selectors;
      },
      "Every armed process of this daemon");
  command->add_option_function<int32_t>(
      "--rank",
      [line](int32_t rank) {
        line->options.selector = wire::AttachSelector::kRank;
        line->options.value = rank;
        ++line->selectors;
      },
      "Every armed process whose RANK is this");
  command->add_option("--duration", line->duration,
                      "Window length: 30s, 500ms, 2m or plain seconds");
  command->add_option("--steps", line->options.steps, "Window of this many step ranges")
      ->check(CLI::Range(1u, 1000000000u));
  command->add_option("--step", line->options.step_name,
                      "With --steps: the step range's exact name; default: auto-detected");
  command->add_option("--socket", line->options.socket_path,
                      "The daemon's socket; default: $GPUATTR_SOCKET, else "
                      "$XDG_RUNTIME_DIR/gpuattr/daemon.sock, else /tmp/gpuattr-$UID/daemon.sock");
  command
      ->add_option("-o,--output", line->options.output,
                   "Where to write the JSON report (%p %h %q{VAR} %n expand: docs/jobs.md)")
      ->required();
  command->add_flag("--force-overwrite", line->options.force_overwrite,
                    "Replace a report that exists (otherwise an existing name is refused)");
  command->add_option("--timeout", line->timeout,
                      "How long to wait for the daemon's reply (default 630s)");
  command->add_flag("--no-inject", line->options.no_inject,
                    "With --pid: never load the shim into a process that is not registered "
                    "with the daemon (no ptrace); refuse instead");
  command->add_flag("-q,--quiet", line->options.quiet, "No summary on stderr");
  command->footer(kAttachFooter);
  return {command, [line] { return AttachSubcommand(*line); }};
}

int AttachSubcommand(AttachCommandLine line) {
  if (line.selectors != 1) return Fail(kExitUsage, "give exactly one of --pid, --all and --rank");
  if (!line.duration.empty()) {
    StatusOr<uint64_t> duration = ParseDuration(line.duration);
    if (!duration.ok()) return Fail(kExitUsage, "--duration: " + duration.status().message());
    line.options.duration_ns = *duration;
  }
  if (!line.timeout.empty()) {
    StatusOr<uint64_t> timeout = ParseDuration(line.timeout);
    if (!timeout.ok()) return Fail(kExitUsage, "--timeout: " + timeout.status().message());
    line.options.timeout_ns = *timeout;
  }
  return RunAttach(line.options);
}

}  // namespace gpuattr::collector
