// The report's summary and launchers (docs/attribution.md §Ranks): what is said over all of its
// processes. Totals, coverage and families are merged by the analysis (MergeAnalyses); here they
// are spelled, with the per-rank table, its straggler terms and the parents that never connected.
//
// Called once per report by BuildReport, on its thread; pure.
#ifndef GPUATTR_COLLECTOR_REPORT_SUMMARY_H_
#define GPUATTR_COLLECTOR_REPORT_SUMMARY_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "analysis/process_analysis.h"

namespace gpuattr::collector {

// One process entry of the report, as the summary reads it.
struct ProcessEntry {
  const ProcessAnalysis* analysis = nullptr;  // with a process identity
  nlohmann::json json;                        // processes[i], its steps.rows left []
  nlohmann::json rank_row;                    // its line of summary.ranks
};

// `summary`, over `processes` in report order; `coverage_threshold` judges the merged coverage.
nlohmann::json SummaryJson(const std::vector<ProcessEntry>& processes, double coverage_threshold);

// `launchers`: the ppid of a traced process that is not itself traced but that gpuattr reaped
// (`exit_statuses`: the command, or a descendant orphaned to the subreaper), so it was a
// descendant of the capture with a known exit status. One entry each, {pid, exit_status,
// children}, by pid; it gets no process entry. Sets every entry's `parent`: kind `traced` (a
// process of the report), `launcher` (in this list) or `outside` (neither).
nlohmann::json LaunchersJson(std::vector<ProcessEntry>& processes,
                             const std::map<uint32_t, int>& exit_statuses);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_SUMMARY_H_
