// The report's summary and launchers (docs/attribution.md §Ranks): what is said over all of its
// processes. Totals, coverage and families are merged by the analysis (AnalysisMerger); here they
// are spelled, with the per-rank table, its straggler terms and the parents that never connected.
//
// The summary is built one process at a time (SummaryBuilder) by the two writers of reports:
// BuildReport from the analyses it holds, and `gpuattr merge` from the processes it reads back
// out of reports (report/process_reader.h) one input at a time; the same code gives both the same
// summary. Single-threaded, on the caller's thread; no I/O.
#ifndef GPUATTR_COLLECTOR_REPORT_SUMMARY_H_
#define GPUATTR_COLLECTOR_REPORT_SUMMARY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_analysis.h"

namespace gpuattr::collector {

// One process entry of the report, as the summary reads it.
struct ProcessEntry {
  const ProcessAnalysis* analysis = nullptr;  // with a process identity
  nlohmann::json json;                        // processes[i], its steps.rows left []
  nlohmann::json rank_row;                    // its line of summary.ranks
};

// `summary`, from the processes added in report order.
class SummaryBuilder {
 public:
  // What the summary reads of `analysis`: its status, device_measured and what AnalysisMerger
  // merges; `rank_row` is its line of summary.ranks.
  void Add(const ProcessAnalysis& analysis, nlohmann::json rank_row);
  // `coverage_threshold` judges the merged coverage.
  nlohmann::json Finish(double coverage_threshold) &&;

 private:
  size_t processes_ = 0;
  std::array<size_t, std::size(kProcessStatuses)> statuses_{};  // by ProcessStatus
  nlohmann::json ranks_ = nlohmann::json::array();
  AnalysisMerger merger_;
};

// `launchers`: the ppid of a traced process that is not itself traced but that gpuattr reaped
// (`exit_statuses`: the command, or a descendant orphaned to the subreaper), so it was a
// descendant of the capture with a known exit status. One entry each, {pid, exit_status,
// children} with the capture's `host`, by pid; it gets no process entry. Sets every entry's
// `parent`: kind `traced` (a process of the report), `launcher` (in this list) or `outside`
// (neither).
nlohmann::json LaunchersJson(std::vector<ProcessEntry>& processes,
                             const std::map<uint32_t, int>& exit_statuses,
                             const std::optional<std::string>& host);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_SUMMARY_H_
