// RunGateCommand (gate_command.h).
#include "cli/gate_command.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "gate/gate.h"
#include "gate/rules.h"
#include "report/atomic_write.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

// Every failure that comes from an input is exit 3.
Status AsInputError(const Status& status) { return DataLossError(status.message()); }

StatusOr<GateRules> LoadRules(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return DataLossError("cannot read rules '" + path + "'");
  std::string text;
  char buffer[1 << 16];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(file.gcount()));
    if (text.size() > kMaxRulesBytes) {
      return DataLossError("rules '" + path + "' are larger than 16 MiB; not read");
    }
  }
  if (file.bad()) return DataLossError("cannot read rules '" + path + "'");
  const Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return DataLossError("rules '" + path + "' are not JSON");
  StatusOr<GateRules> rules = ParseGateRules(document, "'" + path + "'");
  if (!rules.ok()) return AsInputError(rules.status());
  return rules;
}

Status WriteOutput(const std::string& text, const std::string& path, const char* what) {
  if (path.empty()) return Status::Ok();
  const Status written = WriteTextAtomically(text, path);
  if (written.ok()) return written;
  return InternalError(std::string("cannot write the ") + what + " to '" + path +
                       "': " + written.message());
}

}  // namespace

StatusOr<GateCommandResult> RunGateCommand(const GateCommandOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(const Json baseline, LoadReport(options.baseline));
  GPUATTR_ASSIGN_OR_RETURN(const Json current, LoadReport(options.current));
  GateRules rules;
  if (options.rules.empty()) {
    rules = DefaultGateRules(baseline);
  } else {
    GPUATTR_ASSIGN_OR_RETURN(rules, LoadRules(options.rules));
  }
  StatusOr<GateOutcome> outcome = EvaluateGate(baseline, current, rules);
  if (!outcome.ok()) return AsInputError(outcome.status());
  GPUATTR_RETURN_IF_ERROR(
      WriteOutput(RenderGateMarkdown(*outcome), options.markdown, "markdown summary"));
  GPUATTR_RETURN_IF_ERROR(WriteOutput(RenderGateJunit(*outcome), options.junit, "JUnit XML"));
  GPUATTR_RETURN_IF_ERROR(WriteOutput(
      GateOutcomeJson(*outcome).dump(2, ' ', false, Json::error_handler_t::replace) + "\n",
      options.json, "JSON result"));
  GateCommandResult result;
  result.exit_status = outcome->Passed() ? 0 : 1;
  result.table = RenderGateTable(*outcome);
  return result;
}

}  // namespace gpuattr::collector
