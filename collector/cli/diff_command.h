// `gpuattr diff BASELINE.json CURRENT.json [--json] [--top N]`: two reports side by side
// (gate/diff.h), as a terminal view or JSON (gpuattr.diff/1). Runs on the main thread; no state.
// Both files are untrusted and loaded with LoadReport (report/report_reader.h): any failure to use
// one is kDataLoss, exit 3.
#ifndef GPUATTR_COLLECTOR_CLI_DIFF_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_DIFF_COMMAND_H_

#include <cstddef>
#include <string>

#include "base/status.h"
#include "cli/subcommand.h"
#include "report/report_reader.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct DiffCommandOptions {
  std::string baseline;
  std::string current;
  bool json = false;
  size_t top = 20;  // rows per list in the terminal view
};

// What `gpuattr diff` prints on stdout.
StatusOr<std::string> DiffCommandOutput(const DiffCommandOptions& options);

// Adds `gpuattr diff` to `app`.
Subcommand AddDiffSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_DIFF_COMMAND_H_
