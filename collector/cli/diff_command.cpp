// DiffCommandOutput (diff_command.h).
#include "cli/diff_command.h"

#include <nlohmann/json.hpp>

#include "gate/diff.h"
#include "report/report_reader.h"

namespace gpuattr::collector {

StatusOr<std::string> DiffCommandOutput(const DiffCommandOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(const nlohmann::json baseline, LoadReport(options.baseline));
  GPUATTR_ASSIGN_OR_RETURN(const nlohmann::json current, LoadReport(options.current));
  const nlohmann::json diff = DiffReports(baseline, current);
  if (options.json) {
    return diff.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return RenderDiff(diff, options.top);
}

}  // namespace gpuattr::collector
