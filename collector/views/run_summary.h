// RenderSummary: the short fixed-width table `gpuattr run` and `gpuattr import` print on stderr
// after writing a report: per process, devices busy and idle, the top passes, coverage and loss;
// the rank table when there are several. Reads no step row.
//
// The document is read defensively (report_reader.h): it renders any gpuattr.report/1 document,
// including one read back from disk. Pure; any thread.
#ifndef GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_
#define GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_

#include <nlohmann/json.hpp>
#include <string>

namespace gpuattr::collector {

std::string RenderSummary(const nlohmann::json& report);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_VIEWS_RUN_SUMMARY_H_
