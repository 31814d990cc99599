#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/run.h"

#ifndef GPUATTR_VERSION
#error "GPUATTR_VERSION must be defined by the build (collector/cli.cmake)"
#endif

namespace gpuattr::collector {
namespace {

constexpr const char* kSubcommands[] = {"run"};

constexpr char kFooter[] = R"(Examples:
  gpuattr run -- python train.py
  gpuattr run -o report.json -- python train.py
  gpuattr run -- ./simgpu-run scenario.json --truth truth.json

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
    run->add_option("command", run_options.command, "CMD ARGS...: the command to profile")
        ->required();
    // The first positional starts CMD: its own flags are never taken for ours, with or without
    // a `--` before it.
    run->positionals_at_end();
    run->footer(kRunFooter);

    if (argc > 1 && argv[1][0] != '-' && !IsSubcommand(argv[1])) {
      std::fprintf(stderr, "gpuattr: unknown subcommand '%s' (subcommands: run; see gpuattr --help)\n",
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
    if (run->parsed()) return RunSubcommand(run_options);
    std::fprintf(stderr, "gpuattr: no subcommand (see gpuattr --help)\n");
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpuattr: internal error: %s\n", error.what());
    return kExitInternal;
  }
}

}  // namespace gpuattr::collector
