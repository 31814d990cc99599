// `gpuattr merge R1.json R2.json ... -o job.json`: one report for one job from the reports its
// nodes (or ranks) wrote, each captured by its own `gpuattr run` or `import` (docs/jobs.md).
//
// The merged report holds every input's processes, each with its host, ordered by rank, then
// host, then pid; its summary is recomputed by SummaryBuilder, the code that built each input's,
// from each process entry read back (report/process_reader.h), so it says what one capture of
// the whole job would have said. Inputs that cannot be one job are refused before anything is
// written: the same process twice (host and pid; for imports, which know no host, pid and rank),
// the same file twice, another schema (LoadReport), different attribution settings (inherit,
// coverage threshold without --coverage-threshold), and unless --allow-mixed-captures, captures
// of different modes or import formats.
//
// Streaming: a first pass reads each input once to check it and collect its processes' keys and
// rank rows; a second visits the processes in report order, reading each input again when its
// first process comes, and writes each process as it is reached (StreamedReport), its step rows
// from the input's columns one at a time. Memory is one input as LoadReport holds it (its DOM
// without rows, its rows in columns) plus one rank row per process, not the sum of the inputs.
// Runs on the main thread.
//
// Errors: an input missing, unreadable, of another schema or with a malformed field is kDataLoss
// (exit 3), naming the file and the field; inputs refused together, and bad flags, are
// kInvalidArgument (exit 2); an output that cannot be written is exit 4.
#ifndef GPUATTR_COLLECTOR_CLI_MERGE_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_MERGE_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/subcommand.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output = "gpuattr-merged%n.json";  // output_names.h
  bool force_overwrite = false;
  bool allow_mixed_captures = false;
  std::optional<double> coverage_threshold;  // empty: the inputs' own, which must agree
  bool quiet = false;
};

// What a merge wrote, for the summary line on stderr.
struct MergeResult {
  std::string output;  // expanded ("-": stdout)
  size_t inputs = 0;
  size_t processes = 0;
  size_t hosts = 0;        // distinct known hosts
  std::string rank_table;  // RenderRankTable of the merged summary
};

// Checks the inputs, then writes the merged report.
StatusOr<MergeResult> MergeReports(const MergeOptions& options);

Subcommand AddMergeSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_MERGE_COMMAND_H_
