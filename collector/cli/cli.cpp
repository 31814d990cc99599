#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/attach_command.h"
#include "cli/daemon_command.h"
#include "cli/diff_command.h"
#include "cli/export_command.h"
#include "cli/gate_command.h"
#include "cli/import_command.h"
#include "cli/report_command.h"
#include "cli/run.h"
#include "cli/subcommand.h"
#include "gpuattr_version.h"

namespace gpuattr::collector {
namespace {

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

Exit status: that of the profiled command for `run`; 2 usage, 3 bad input, 4 an output that
cannot be written (every command) or an internal error.
Environment: GPUATTR_INJECT_LIBRARY names the injection library when it is not found beside
the gpuattr executable.)";

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

bool WriteStdout(const char* subcommand, const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0) {
    return true;
  }
  std::fprintf(stderr, "gpuattr %s: cannot write to stdout: %s\n", subcommand,
               std::strerror(errno));
  return false;
}

int ExitWithOutput(const char* subcommand, const StatusOr<std::string>& output) {
  if (!output.ok()) {
    std::fprintf(stderr, "gpuattr %s: %s\n", subcommand, output.status().message().c_str());
    return ExitCodeFor(output.status());
  }
  return WriteStdout(subcommand, *output) ? 0 : kExitInternal;
}

int GpuattrMain(int argc, char** argv) {
  // CLI11 can only report through exceptions; they end here, at the parse.
  try {
    CLI::App app{"gpuattr: which part of a program owns the GPU time, and where the GPU is idle.",
                 "gpuattr"};
    app.set_version_flag("--version", "gpuattr " GPUATTR_VERSION);
    app.require_subcommand(1);
    app.footer(kFooter);
    const std::vector<Subcommand> subcommands = {
        AddRunSubcommand(app),    AddImportSubcommand(app), AddReportSubcommand(app),
        AddDiffSubcommand(app),   AddGateSubcommand(app),   AddExportSubcommand(app),
        AddDaemonSubcommand(app), AddAttachSubcommand(app)};

    if (argc > 1 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const Subcommand& subcommand : subcommands) {
        known = known || subcommand.app->get_name() == argv[1];
        names += (names.empty() ? "" : ", ") + subcommand.app->get_name();
      }
      if (!known) {
        std::fprintf(stderr,
                     "gpuattr: unknown subcommand '%s' (subcommands: %s; see gpuattr --help)\n",
                     argv[1], names.c_str());
        return kExitUsage;
      }
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
      const int code = app.exit(error);  // help and version on stdout, errors on stderr
      return code == 0 ? 0 : kExitUsage;
    }
    for (const Subcommand& subcommand : subcommands) {
      if (subcommand.app->parsed()) return subcommand.run();
    }
    std::fprintf(stderr, "gpuattr: no subcommand (see gpuattr --help)\n");
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gpuattr: internal error: %s\n", error.what());
    return kExitInternal;
  }
}

}  // namespace gpuattr::collector
