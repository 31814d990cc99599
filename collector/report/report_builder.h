// Builds the JSON report (schemas/report.schema.json, "gpuattr.report/1") from the analyses of
// finished ProcessTraces (report_writer.h writes it).
//
// The report is one nlohmann DOM except for the step rows: their number grows with the run (a row
// per step instance; at 1.4 KB per row as DOM, 700,000 auto-detected steps cost 1 GB), so they
// stay as the analysis made them and are rendered one at a time as the text is written. Nothing
// else in the report grows with the run's length.
//
// Called once, on the collector's main thread, after every connection ended or timed out.
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_BUILDER_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_BUILDER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_analysis.h"
#include "base/status.h"
#include "report/work_report.h"

namespace gpuattr::collector {

struct CaptureInfo {
  std::string mode;                                // "run" | "attach" | "import"
  std::vector<std::string> command;                // argv of the traced command
  std::optional<std::string> host;                 // empty: not known (an import's trace)
  std::optional<uint64_t> started_at_realtime_ns;  // wall clock when the capture began
  uint64_t duration_ns = 0;                        // capture window length
  // The clock of the report's timestamps; empty: the trace does not say (capture.clock).
  std::optional<std::string> clock = "CLOCK_MONOTONIC";
  // Last, so that positional initialisers of the fields above stay valid.
  nlohmann::json source = nullptr;  // import: {"format", "files"}; null for live captures
};

// What `gpuattr attach` asked for (capture.window; docs/attach.md).
struct WindowRequest {
  std::string selector;                  // "pid" | "all" | "rank"
  std::optional<int64_t> pid;            // selector "pid"
  std::optional<int64_t> rank;           // selector "rank"
  std::optional<uint64_t> duration_ns;   // --duration
  std::optional<uint64_t> steps;         // --steps
  std::optional<std::string> step_name;  // --steps: the step range's name; absent: auto
};

struct ReportInputs {
  CaptureInfo capture;
  // One analysis per connection that ended (ProcessTrace::TakeAnalysis); those that never said
  // Hello are only counted (diagnostics.connections_without_hello).
  std::vector<ProcessAnalysis> processes;
  std::map<uint32_t, int> exit_statuses;  // pid -> exit status, where the collector waited on it
  // Attach only: the request (capture.window), and per pid which window of that process this
  // is, counted from 1 (window.attach_index; absent: 1).
  std::optional<WindowRequest> window_request;
  std::map<uint32_t, uint64_t> attach_indices;
  // The report's own settings: coverage.passed is attributed_fraction >= this; capture.inherit
  // says whether the analyses attributed by inheritance (AnalysisOptions: the same values).
  double coverage_threshold = 0.95;
  bool inherit = true;
  // FLOPs: --flops, --peak-flops, the clean step time (docs/attribution.md §FLOPs).
  WorkInputs work;
  // Collector-side loss not attributable to one process (bad clients, framing errors).
  uint64_t rejected_connections = 0;
  uint64_t rejected_messages = 0;
};

// One process's steps.rows, kept out of the DOM until written.
struct StepRowTable {
  bool device_measured = false;                      // false: every device term of a row is null
  bool work_counted = false;                         // false: every FLOP term of a row is null
  std::shared_ptr<const std::vector<StepRow>> rows;  // null: no steps
};

struct Report {
  // The whole report except the step rows: each processes[i].steps.rows is [] here, and its rows
  // are step_rows[i].rows (`steps` null: null). Read the rows from the written text.
  nlohmann::json without_step_rows;
  std::vector<StepRowTable> step_rows;  // one per element of without_step_rows["processes"]
};

Report BuildReport(const ReportInputs& inputs);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_BUILDER_H_
