// RenderSummary: the short fixed-width table `gpuattr run` and `gpuattr import` print on stderr
// after writing a report: per process, devices busy and idle, the top passes, coverage and loss;
// the rank table when there are several (RenderRankTable, which `gpuattr merge` prints alone).
// Reads no step row.
//
// The document is read defensively (report_reader.h): it renders any gpuattr.report/1 document,
// including one read back from disk. Pure; any thread.
#ifndef GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_
#define GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_

#include <nlohmann/json.hpp>
#include <string>

namespace gpuattr::collector {

std::string RenderSummary(const nlohmann::json& report);

// The rank table of `report` (its summary and launchers): one line per summary.ranks row, with
// a host column when the rows name more than one host, the straggler line and the launchers.
// Empty for fewer than two rows.
std::string RenderRankTable(const nlohmann::json& report);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_
