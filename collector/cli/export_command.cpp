#include "cli/export_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/analysis_flags.h"
#include "cli/cli.h"

namespace gpuattr::collector {
namespace {

constexpr char kExportFooter[] =
    R"(Draws what `gpuattr import` reads (PyTorch profiler / Kineto JSON, plain or
gzip; Nsight Systems SQLite exports) as pictures: a timeline for the Perfetto UI or
chrome://tracing (--perfetto), folded stacks of device time by pass path and kernel family for
flamegraph.pl, inferno or speedscope (--folded), or a speedscope profile (--speedscope). The
analysis is the import's: the same options, the same attribution. docs/visualization.md says
how to open each file.

Exit status: 0; 3 when an input is missing, unreadable, truncated or not a trace; 2 usage;
4 when an output cannot be written.

Examples:
  gpuattr export --perfetto timeline.json trace.json.gz
  gpuattr export --folded device.folded profile.sqlite && flamegraph.pl device.folded > fg.svg
  gpuattr export --speedscope device.speedscope.json --ranges ops rank0.json.gz rank1.json.gz)";

}  // namespace

Subcommand AddExportSubcommand(CLI::App& app) {
  auto options = std::make_shared<ExportCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "export", "Write a timeline, folded stacks or a speedscope profile of imported traces");
  ImportOptions& import = options->import;
  command->add_option("files", import.files, "TRACE...: Kineto JSON or nsys SQLite, one per rank")
      ->required();
  command->add_option("--perfetto,--trace", import.exports.trace,
                      "Write a Chrome trace-event timeline (Perfetto UI, chrome://tracing) here");
  command->add_option("--folded", import.exports.folded,
                      "Write folded stacks of device time (flamegraph.pl, inferno) here");
  command->add_option("--speedscope", import.exports.speedscope,
                      "Write a speedscope profile of device time here");
  command->add_option_function<std::string>(
      "-o,--output",
      [options](const std::string& path) {
        options->import.output = path;
        options->write_report = true;
      },
      "Also write the JSON report here (- for stdout; %p %h %q{VAR} %n expand)");
  command->add_flag("--force-overwrite", import.force_overwrite,
                    "Replace outputs that exist (otherwise an existing name is refused)");
  AddTraceReadingFlags(command, import);
  AddAnalysisFlags(command,
                   {&import.analysis, &import.phase_rules_path, &import.family_rules_path});
  command->footer(kExportFooter);
  return {command, [options] {
            const Status status = RunExport(*options);
            if (status.ok()) return 0;
            std::fprintf(stderr, "gpuattr export: %s\n", status.message().c_str());
            return ExitCodeFor(status);
          }};
}

Status RunExport(const ExportCommandOptions& options) {
  if (!options.import.exports.any()) {
    return InvalidArgumentError(
        "nothing to export: name at least one of --perfetto, --folded, --speedscope");
  }
  return WriteImport(options.import, options.write_report).status();
}

}  // namespace gpuattr::collector
