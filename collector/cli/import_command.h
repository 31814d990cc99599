// `gpuattr import FILE... [-o report.json]`: reads traces recorded by other tools (PyTorch
// profiler / Kineto chrome-trace JSON, plain or gzip; Nsight Systems SQLite exports) and writes
// the same report `gpuattr run` writes, with capture.mode "import" and capture.source naming the
// format and the files. Each file's processes become processes of the one report (one file per
// rank makes a multi-rank report).
//
// Every input goes through collector/import/ (an ImportedTrace per file, replayed as wire
// records into one ProcessTrace per process), then the report builder, exactly like live
// capture. Runs on the main thread; no state.
//
// Errors: a named input that is missing, unreadable, not JSON / not SQLite, truncated or not a
// trace is kDataLoss (exit 3); bad flags are kInvalidArgument (exit 2); failing to write the
// report is kInternal (exit 4).
#ifndef GPUATTR_COLLECTOR_CLI_IMPORT_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_IMPORT_COMMAND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "cli/subcommand.h"
#include "export/exports.h"
#include "report/report_builder.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct ImportOptions {
  std::vector<std::string> files;
  std::string output = "gpuattr-report%n.json";  // output_names.h
  std::string format = "auto";                   // auto | kineto | nsys
  std::string ranges = "annotations";            // annotations | ops (Kineto: cpu_op ranges too)
  bool modules = true;  // --no-modules: Kineto nn.Module events are not ranges
  bool quiet = false;
  bool force_overwrite = false;  // replace existing outputs
  AnalysisOptions analysis;
  std::string phase_rules_path;
  std::string family_rules_path;
  ExportPaths exports;  // --activities (import); --perfetto, --folded, --speedscope (export)
};

struct ImportResult {
  Report report;
  std::string output;           // where the report went, its name expanded ("-": stdout)
  uint64_t json_bytes = 0;      // uncompressed JSON read (Kineto inputs)
  uint64_t skipped_events = 0;  // events with fields of the wrong type
  uint64_t clipped_ranges = 0;  // ranges clipped to nest (trace_replay.h)
};

// Reads the inputs and builds the report (writes neither it nor the exports); `observer`, when
// set, watches the analysis.
StatusOr<ImportResult> BuildImportReport(const ImportOptions& options,
                                         std::shared_ptr<TraceObserver> observer = nullptr);

// Resolves the output names (output_names.h), builds the report with the exports `options`
// names, writes the report atomically (or to stdout) when `write_report`, then publishes the
// exports.
StatusOr<ImportResult> WriteImport(const ImportOptions& options, bool write_report);

// The whole subcommand: build, write atomically, print the summary unless quiet.
Status RunImport(const ImportOptions& options);

// Adds `gpuattr import` to `app`.
// --format, --ranges and --no-modules: how `import` and `export` read trace files.
void AddTraceReadingFlags(CLI::App* command, ImportOptions& options);

Subcommand AddImportSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_IMPORT_COMMAND_H_
