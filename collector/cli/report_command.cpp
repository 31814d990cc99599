// ReportCommandOutput (report_command.h).
#include "cli/report_command.h"

#include <utility>

#include "export/html_report.h"
#include "report/atomic_write.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace

StatusOr<std::string> ReportCommandOutput(const ReportCommandOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(Json report, LoadReport(options.path));
  if (options.view.pid) {
    std::string pids;
    bool found = false;
    const auto processes = report.find("processes");
    if (processes != report.end() && processes->is_array()) {
      for (const Json& process : *processes) {
        const auto pid = process.is_object() ? process.find("pid") : process.end();
        if (pid == process.end() || !pid->is_number_unsigned()) continue;
        found = found || pid->get<uint64_t>() == *options.view.pid;
        pids += (pids.empty() ? "" : ", ") + std::to_string(pid->get<uint64_t>());
      }
    }
    if (!found) {
      return InvalidArgumentError("no process " + std::to_string(*options.view.pid) + " in " +
                                  Quoted(options.path) +
                                  " (its processes: " + (pids.empty() ? "none" : pids) + ")");
    }
  }
  if (!options.html.empty()) {
    if (options.view.pid) {
      Json& processes = report["processes"];
      Json kept = Json::array();
      for (Json& process : processes) {
        const auto pid = process.is_object() ? process.find("pid") : process.end();
        if (pid != process.end() && *pid == *options.view.pid) kept.push_back(std::move(process));
      }
      processes = std::move(kept);
    }
    GPUATTR_RETURN_IF_ERROR(WriteTextAtomically(RenderHtmlReport(report), options.html));
    return std::string();
  }
  if (options.json) return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  return RenderReportView(report, options.view);
}

}  // namespace gpuattr::collector
