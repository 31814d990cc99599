// `gpuattr export --perfetto F | --folded F | --speedscope F [import options] TRACE...`: the
// pictures of traces other tools recorded (PyTorch profiler / Kineto JSON, Nsight Systems
// SQLite), through the same import, analysis and exports as `gpuattr run --trace/--folded/
// --speedscope` (export/exports.h, docs/visualization.md). At least one output is required;
// -o also writes the report.
//
// Registered with the command line by AddExportSubcommand so that cli.cpp only dispatches.
// Runs on the main thread; no state.
//
// Errors: as `gpuattr import` (import_command.h): an unusable input is kDataLoss (exit 3), bad
// flags or an output path that cannot be written kInvalidArgument (exit 2), failing to write
// kInternal (exit 4).
#ifndef GPUATTR_COLLECTOR_CLI_EXPORT_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_EXPORT_COMMAND_H_

#include <string>

#include "base/status.h"
#include "cli/import_command.h"
#include "cli/subcommand.h"
#include "export/exports.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct ExportCommandOptions {
  // Inputs, analysis options and the exports; import.output is used only with -o.
  ImportOptions import;
  bool write_report = false;
};

// Adds `gpuattr export` to `app`.
Subcommand AddExportSubcommand(CLI::App& app);

// The whole subcommand: import, analyse, write the exports (and the report with -o).
Status RunExport(const ExportCommandOptions& options);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_EXPORT_COMMAND_H_
