#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/attach_command.h"
#include "cli/daemon_command.h"
#include "cli/diff_command.h"
#include "cli/export_command.h"
#include "cli/gate_command.h"
#include "cli/import_command.h"
#include "cli/report_command.h"
#include "cli/run.h"

#ifndef GPUATTR_VERSION
#error "GPUATTR_VERSION must be defined by the build (collector/cli.cmake)"
#endif

namespace gpuattr::collector {
namespace {

constexpr const char* kSubcommands[] = {"run",  "import", "report", "diff",
                                        "gate", "export", "daemon", "attach"};

constexpr char kFooter[] = R"(Examples:
  gpuattr run -- python train.py
  gpuattr run -o report.json -- python train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json
  gpuattr import -o report.json rank0.json.gz rank1.json.gz
  gpuattr report report.json
  gpuattr report --json report.json | jq '.processes[].coverage'
  gpuattr run --trace timeline.json --folded device.folded -- python train.py
  gpuattr report report.json --html report.html
  gpuattr export --perfetto timeline.json trace.json.gz
  gpuattr diff baseline.json current.json
  gpuattr gate --baseline baseline.json --current current.json --rules gate.json
  gpuattr daemon --reports-dir ~/.local/share/gpuattr/reports
  gpuattr run --armed -- python train.py
  gpuattr attach --pid 4242 --duration 30s -o window.json

Exit status: that of the profiled command for `run`; 2 usage, 3 bad input, 4 internal error.
Environment: GPUATTR_INJECT_LIBRARY names the injection library when it is not found beside
the gpuattr executable.)";

constexpr char kRunFooter[] =
    R"(Runs CMD with libgpuattr_inject.so preloaded, collects the GPU time of CMD and every process
it starts, and writes a JSON report (schema gpuattr.report/1) once CMD has exited. CMD's stdin,
stdout and stderr are its own; gpuattr prints its summary on stderr afterwards. SIGINT and
SIGTERM sent to gpuattr are forwarded to CMD; the report is still written.

Exit status: CMD's, or 128 + the signal that killed it; 127 when CMD is not found, 126 when it
cannot be executed; 2 usage, 4 internal error.

Examples:
  gpuattr run -o report.json -- python train.py
  gpuattr run --quiet -- torchrun --nproc-per-node 8 train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json)";

constexpr char kImportFooter[] =
    R"(Reads traces other tools recorded and writes the report `gpuattr run` writes
(capture.mode "import"): PyTorch profiler / Kineto chrome-trace JSON (.json, .json.gz; the
current and the 2021 schema) and Nsight Systems SQLite exports (nsys export --type sqlite).
Several files (one per rank) make one multi-process report. Ranges are the user annotations and
ProfilerStep ranges of each thread (Kineto), or the NVTX ranges (nsys); --ranges ops adds
Kineto's cpu_op ranges. Device work whose launch the file does not hold is unattributed
(launch_not_seen), never dropped.

Exit status: 0; 3 when an input is missing, unreadable, truncated or not a trace; 2 usage;
4 when the report cannot be written.

Examples:
  gpuattr import -o report.json trace.json.gz
  gpuattr import --ranges ops -o report.json rank0.json.gz rank1.json.gz
  gpuattr import -o report.json profile.sqlite)";

constexpr char kDiffFooter[] =
    R"(Prints two reports side by side: per process (the only one, else matched by rank)
the pass tree by path with device total and self time, sorted by absolute change of the total;
new and vanished passes; per device busy, idle, idle fraction and gaps; step medians. Then the
kernel families the same way, and coverage. --json prints the same as JSON (gpuattr.diff/1).

Exit status: 0; 3 when a report is missing, unreadable, not JSON or not gpuattr.report/1; 2 usage.

Examples:
  gpuattr diff baseline.json current.json
  gpuattr diff --json baseline.json current.json | jq '.processes[0].passes[:5]')";

constexpr char kGateFooter[] = R"(Checks CURRENT against BASELINE with rules (docs/gate.md; schema
schemas/gate.schema.json) and prints one row per check: verdict, metric, value, baseline, bound,
and why. A bound relative to the baseline fails only when the median per-step value moved past it
and a one-sided Mann-Whitney U test finds the shift significant at alpha (default 0.01); without
per-step values the plain bound on the totals decides, and the row says so. Without --rules:
coverage at or above its threshold, zero dropped records, and no pass's device total_ns nor
family's total_ns more than 5 % above the baseline.

Exit status: 0 every check passed; 1 a check failed (a regression); 2 usage; 3 a report or the
rules missing, unreadable or invalid, or a metric missing from either report (its path named);
4 an output file could not be written.

Examples:
  gpuattr gate --baseline main.json --current pr.json
  gpuattr gate --baseline main.json --current pr.json --rules gate.json \
      --markdown summary.md --junit gate.xml --json gate.json)";

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

int ImportSubcommand(const ImportOptions& options) {
  Status status = RunImport(options);
  if (status.ok()) return 0;
  std::fprintf(stderr, "gpuattr import: %s\n", status.message().c_str());
  return ExitCodeFor(status);
}

// Writes `text` to stdout; false (with a message) when it cannot.
bool WriteStdout(const char* subcommand, const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0) {
    return true;
  }
  std::fprintf(stderr, "gpuattr %s: cannot write to stdout: %s\n", subcommand,
               std::strerror(errno));
  return false;
}

int DiffSubcommand(const DiffCommandOptions& options) {
  StatusOr<std::string> output = DiffCommandOutput(options);
  if (!output.ok()) {
    std::fprintf(stderr, "gpuattr diff: %s\n", output.status().message().c_str());
    return ExitCodeFor(output.status());
  }
  return WriteStdout("diff", *output) ? 0 : kExitInternal;
}

int GateSubcommand(const GateCommandOptions& options) {
  StatusOr<GateCommandResult> result = RunGateCommand(options);
  if (!result.ok()) {
    std::fprintf(stderr, "gpuattr gate: %s\n", result.status().message().c_str());
    return ExitCodeFor(result.status());
  }
  return WriteStdout("gate", result->table) ? result->exit_status : kExitInternal;
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
    run->add_flag("--armed", run_options.armed,
                  "Collect nothing now: run CMD armed for the gpuattr daemon, to be attached to "
                  "later with `gpuattr attach` (docs/attach.md); writes no report itself");
    run->add_option("--socket", run_options.socket_path,
                    "With --armed: the daemon's socket (default: the daemon's default)");
    run->add_flag("--no-inherit", no_inherit,
                  "Do not attribute a launch from a thread with no open range to the range "
                  "open on the main thread at that instant (autograd worker threads)");
    run->add_option("--coverage-threshold", run_options.analysis.coverage_threshold,
                    "Coverage passes when the attributed fraction of device time is at least this")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    run->add_flag("-q,--quiet", run_options.quiet, "No summary on stderr");
    run->add_option(
           "--drain-timeout", run_options.drain_timeout_s,
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
    run->add_option("--activities", run_options.exports.activities,
                    "Also write one JSON line per device activity to this file");
    run->add_option("--trace,--perfetto", run_options.exports.trace,
                    "Also write a Chrome trace-event timeline (Perfetto UI, chrome://tracing)");
    run->add_option("--folded", run_options.exports.folded,
                    "Also write folded stacks of device time (flamegraph.pl, inferno, speedscope)");
    run->add_option("--speedscope", run_options.exports.speedscope,
                    "Also write a speedscope profile of device time");
    run->add_option("command", run_options.command, "CMD ARGS...: the command to profile")
        ->required();
    // The first positional starts CMD: its own flags are never taken for ours, with or without
    // a `--` before it.
    run->positionals_at_end();
    run->footer(kRunFooter);

    ImportOptions import_options;
    bool import_no_inherit = false;
    CLI::App* import = app.add_subcommand(
        "import", "Write a report from PyTorch profiler (Kineto) JSON or Nsight Systems SQLite");
    import->add_option("files", import_options.files, "FILE...: traces, one per rank")->required();
    import->add_option("-o,--output", import_options.output, "Where to write the JSON report")
        ->capture_default_str();
    import->add_option("--format", import_options.format, "auto, kineto or nsys")
        ->check(CLI::IsMember({"auto", "kineto", "nsys"}))
        ->capture_default_str();
    import
        ->add_option("--ranges", import_options.ranges,
                     "annotations (user annotations and ProfilerStep) or ops (cpu_op too)")
        ->check(CLI::IsMember({"annotations", "ops"}))
        ->capture_default_str();
    import->add_flag("--no-inherit", import_no_inherit,
                     "Do not attribute a launch from a thread with no open range to the range "
                     "open on the main thread at that instant");
    import
        ->add_option("--coverage-threshold", import_options.analysis.coverage_threshold,
                     "Coverage passes when the attributed fraction of device time is at least "
                     "this")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    std::string import_step_name;
    CLI::Option* import_step_option =
        import->add_option("--step", import_step_name, "The step range (see gpuattr run --help)");
    import
        ->add_option("--skip-steps", import_options.analysis.skip_steps,
                     "Drop the first N step rows (warm-up)")
        ->capture_default_str();
    import->add_option("--phase-rules", import_options.phase_rules_path,
                       "JSON file of phase patterns replacing the built-in table");
    import->add_option("--family-rules", import_options.family_rules_path,
                       "JSON file of kernel family rules replacing the built-in table");
    import->add_option("--activities", import_options.exports.activities,
                       "Also write one JSON line per device activity to this file");
    import->add_flag("-q,--quiet", import_options.quiet, "No summary on stderr");
    import->footer(kImportFooter);

    ReportCommandOptions report_options;
    uint64_t report_pid = 0;
    CLI::App* report = app.add_subcommand(
        "report", "Print the terminal view of a report (or, with --json, the report itself)");
    report->add_option("report", report_options.path, "REPORT.json: a report gpuattr run wrote")
        ->required();
    report->add_flag("--json", report_options.json, "Print the report as JSON (pretty-printed)");
    report->add_option("--html", report_options.html,
                       "Write a self-contained HTML report (charts, tables) here instead");
    report
        ->add_option("--top", report_options.view.top,
                     "Rows per list: children per pass-tree level, families, steps, gaps")
        ->check(CLI::Range(size_t{1}, size_t{1000000}))
        ->capture_default_str();
    CLI::Option* report_pid_option =
        report->add_option("--process", report_pid, "Only the process with this pid");
    report->footer(kReportFooter);

    DiffCommandOptions diff_options;
    CLI::App* diff = app.add_subcommand("diff", "Show two reports side by side, with deltas");
    diff->add_option("baseline", diff_options.baseline, "BASELINE.json")->required();
    diff->add_option("current", diff_options.current, "CURRENT.json")->required();
    diff->add_flag("--json", diff_options.json, "Print the diff as JSON (gpuattr.diff/1)");
    diff->add_option("--top", diff_options.top, "Rows per list (passes, families)")
        ->check(CLI::Range(size_t{1}, size_t{1000000}))
        ->capture_default_str();
    diff->footer(kDiffFooter);

    GateCommandOptions gate_options;
    CLI::App* gate = app.add_subcommand(
        "gate", "Fail (exit 1) when the current report regressed against the baseline");
    gate->add_option("--baseline", gate_options.baseline, "BASELINE.json")->required();
    gate->add_option("--current", gate_options.current, "CURRENT.json")->required();
    gate->add_option("--rules", gate_options.rules,
                     "Rules file (schemas/gate.schema.json); default: the built-in rules");
    gate->add_option("--markdown", gate_options.markdown, "Also write a markdown summary here");
    gate->add_option("--junit", gate_options.junit,
                     "Also write JUnit XML here (a testcase per check)");
    gate->add_option("--json", gate_options.json, "Also write the checks as JSON here");
    gate->footer(kGateFooter);

    ExportCommandOptions export_options;
    CLI::App* export_command = AddExportSubcommand(app, &export_options);
    DaemonCommandLine daemon_line;
    CLI::App* daemon = AddDaemonSubcommand(app, &daemon_line);
    AttachCommandLine attach_line;
    CLI::App* attach = AddAttachSubcommand(app, &attach_line);

    if (argc > 1 && argv[1][0] != '-' && !IsSubcommand(argv[1])) {
      std::fprintf(stderr,
                   "gpuattr: unknown subcommand '%s' (subcommands: run, import, report, diff, "
                   "gate, export, daemon, attach; see "
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
    if (run->parsed() && run_options.armed) {
      // Armed, nothing is collected until `gpuattr attach` opens a window; its -o writes that.
      for (const char* report_option :
           {"--output", "--activities", "--trace", "--folded", "--speedscope"}) {
        const CLI::Option* option = run->get_option_no_throw(report_option);
        if (option != nullptr && option->count() > 0) {
          std::fprintf(stderr,
                       "gpuattr run: --armed writes no report, so %s has nothing to write; "
                       "capture a window with gpuattr attach -o\n",
                       report_option);
          return kExitUsage;
        }
      }
    }
    if (run->parsed()) return RunSubcommand(run_options);
    if (import->parsed()) {
      import_options.analysis.inherit = !import_no_inherit;
      if (import_step_option->count() > 0) import_options.analysis.step = import_step_name;
      return ImportSubcommand(import_options);
    }
    if (report->parsed()) {
      if (report_pid_option->count() > 0) report_options.view.pid = report_pid;
      return ReportSubcommand(report_options);
    }
    if (diff->parsed()) return DiffSubcommand(diff_options);
    if (gate->parsed()) return GateSubcommand(gate_options);
    if (daemon->parsed()) return DaemonSubcommand(daemon_line);
    if (attach->parsed()) return AttachSubcommand(attach_line);
    if (export_command->parsed()) {
      const Status status = RunExport(export_options);
      if (status.ok()) return 0;
      std::fprintf(stderr, "gpuattr export: %s\n", status.message().c_str());
      return ExitCodeFor(status);
    }
    std::fprintf(stderr, "gpuattr: no subcommand (see gpuattr --help)\n");
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpuattr: internal error: %s\n", error.what());
    return kExitInternal;
  }
}

}  // namespace gpuattr::collector
