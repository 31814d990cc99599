#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/report_command.h"
#include "cli/run.h"

#ifndef GPUATTR_VERSION
#error "GPUATTR_VERSION must be defined by the build (collector/cli.cmake)"
#endif

namespace gpuattr::collector {
namespace {

constexpr const char* kSubcommands[] = {"run", "report"};

constexpr char kFooter[] = R"(Examples:
  gpuattr run -- python train.py
  gpuattr run -o report.json -- python train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json
  gpuattr report report.json
  gpuattr report --json report.json | jq '.processes[].coverage'

Exit status: that of the profiled command for `run`; 2 usage, 3 bad input, 4 internal error.
Environment: GPUATTR_INJECT_LIBRARY names the injection library when it is not found beside
the gpuattr executable.)";

constexpr char kRunFooter[] = R"(Runs CMD with libgpuattr_inject.so preloaded, collects the GPU time of CMD and every process
it starts, and writes a JSON report (schema gpuattr.report/1) once CMD has exited. CMD's stdin,
stdout and stderr are its own; gpuattr prints its summary on stderr afterwards. SIGINT and
SIGTERM sent to gpuattr are forwarded to CMD; the report is still written.

Exit status: CMD's, or 128 + the signal that killed it; 127 when CMD is not found, 126 when it
cannot be executed; 2 usage, 4 internal error.

Examples:
  gpuattr run -o report.json -- python train.py
  gpuattr run --quiet -- torchrun --nproc-per-node 8 train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json)";

constexpr char kReportFooter[] = R"(Prints the terminal view of a report on stdout: per process,
the pass tree sorted by self device time, the top kernel families, device idle time and its
gaps, the steps, coverage, non-zero loss counters and refusals. Times are in ms; "n/a" is a
number that was not measured. --json prints the report itself instead (pretty-printed).

Exit status: 0; 3 when REPORT is missing, unreadable, not JSON or not gpuattr.report/1; 2 usage
(including a --process pid that REPORT does not hold).

Examples:
  gpuattr report gpuattr-report.json
  gpuattr report --top 5 --process 4242 report.json
  gpuattr report --json report.json | jq '.summary.coverage')";

bool IsSubcommand(const char* arg) {
  for (const char* name : kSubcommands) {
    if (std::strcmp(arg, name) == 0) return true;
  }
  return false;
}

int RunSubcommand(const RunOptions& options) {
  StatusOr<int> exit_status = RunCapture(options);
  if (exit_status.ok()) return *exit_status;
  std::fprintf(stderr, "gpuattr run: %s\n", exit_status.status().message().c_str());
  return ExitCodeFor(exit_status.status());
}

int ReportSubcommand(const ReportCommandOptions& options) {
  StatusOr<std::string> output = ReportCommandOutput(options);
  if (!output.ok()) {
    std::fprintf(stderr, "gpuattr report: %s\n", output.status().message().c_str());
    return ExitCodeFor(output.status());
  }
  if (std::fwrite(output->data(), 1, output->size(), stdout) != output->size() ||
      std::fflush(stdout) != 0) {
    std::fprintf(stderr, "gpuattr report: cannot write to stdout: %s\n", std::strerror(errno));
    return kExitInternal;
  }
  return 0;
}

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return kExitUsage;
    case StatusCode::kDataLoss:
      return kExitData;
    case StatusCode::kOk:  // not an error; callers only map errors, so this is a bug of ours
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kPermissionDenied:
    case StatusCode::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

int GpuattrMain(int argc, char** argv) {
  // CLI11 can only report through exceptions; they end here, at the parse.
  try {
    CLI::App app{"gpuattr: which part of a program owns the GPU time, and where the GPU is idle.",
                 "gpuattr"};
    app.set_version_flag("--version", "gpuattr " GPUATTR_VERSION);
    app.require_subcommand(1);
    app.footer(kFooter);

    RunOptions run_options;
    bool no_inherit = false;
    CLI::App* run = app.add_subcommand("run", "Run a command under gpuattr and write a report");
    run->add_option("-o,--output", run_options.output, "Where to write the JSON report")
        ->capture_default_str();
    run->add_flag("--no-inherit", no_inherit,
                  "Do not attribute a launch from a thread with no open range to the range "
                  "open on the main thread at that instant (autograd worker threads)");
    run->add_option("--coverage-threshold", run_options.analysis.coverage_threshold,
                    "Coverage passes when the attributed fraction of device time is at least this")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    run->add_flag("-q,--quiet", run_options.quiet, "No summary on stderr");
    run->add_option("--drain-timeout", run_options.drain_timeout_s,
                    "Seconds to wait, after CMD exits, for its descendants and their streams to end")
        ->check(CLI::Range(0.0, kMaxDrainTimeoutS))
        ->capture_default_str();
    std::string step_name;
    CLI::Option* step_option = run->add_option(
        "--step", step_name,
        "The step range (a range name; ProfilerStep#N counts as ProfilerStep#*); default: "
        "auto-detected among top-level ranges");
    run->add_option("--skip-steps", run_options.analysis.skip_steps,
                    "Drop the first N step rows (warm-up)")
        ->capture_default_str();
    run->add_option("--phase-rules", run_options.phase_rules_path,
                    "JSON file of phase patterns replacing the built-in table "
                    "(docs/attribution.md §Phases)");
    run->add_option("--family-rules", run_options.family_rules_path,
                    "JSON file of kernel family rules replacing the built-in table "
                    "(docs/attribution.md §Kernel families)");
    run->add_option("--activities", run_options.activities_path,
                    "Also write one JSON line per device activity to this file");
    run->add_option("command", run_options.command, "CMD ARGS...: the command to profile")
        ->required();
    // The first positional starts CMD: its own flags are never taken for ours, with or without
    // a `--` before it.
    run->positionals_at_end();
    run->footer(kRunFooter);

    ReportCommandOptions report_options;
    uint64_t report_pid = 0;
    CLI::App* report = app.add_subcommand(
        "report", "Print the terminal view of a report (or, with --json, the report itself)");
    report->add_option("report", report_options.path, "REPORT.json: a report gpuattr run wrote")
        ->required();
    report->add_flag("--json", report_options.json, "Print the report as JSON (pretty-printed)");
    report->add_option("--top", report_options.view.top,
                       "Rows per list: children per pass-tree level, families, steps, gaps")
        ->check(CLI::Range(size_t{1}, size_t{1000000}))
        ->capture_default_str();
    CLI::Option* report_pid_option =
        report->add_option("--process", report_pid, "Only the process with this pid");
    report->footer(kReportFooter);

    if (argc > 1 && argv[1][0] != '-' && !IsSubcommand(argv[1])) {
      std::fprintf(stderr,
                   "gpuattr: unknown subcommand '%s' (subcommands: run, report; see "
                   "gpuattr --help)\n",
                   argv[1]);
      return kExitUsage;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      const int code = app.exit(error);  // help and version on stdout, errors on stderr
      return code == 0 ? 0 : kExitUsage;
    }
    run_options.analysis.inherit = !no_inherit;
    if (step_option->count() > 0) run_options.analysis.step = step_name;
    if (run->parsed()) return RunSubcommand(run_options);
    if (report->parsed()) {
      if (report_pid_option->count() > 0) report_options.view.pid = report_pid;
      return ReportSubcommand(report_options);
    }
    std::fprintf(stderr, "gpuattr: no subcommand (see gpuattr --help)\n");
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpuattr: internal error: %s\n", error.what());
    return kExitInternal;
  }
}

}  // namespace gpuattr::collector
