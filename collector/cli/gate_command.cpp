// RunGateCommand (gate_command.h).
#include "cli/gate_command.h"

#include <time.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/os.h"
#include "cli/cli.h"
#include "gate/gate.h"
#include "gate/rules.h"
#include "report/atomic_write.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

constexpr char kGateFooter[] = R"(Checks CURRENT against BASELINE with rules (docs/gate.md; schema
schemas/gate.schema.json) and prints one row per check: verdict, metric, value, baseline, bound,
and why. A bound relative to the baseline fails only when the median per-step value moved past it
and a one-sided Mann-Whitney U test finds the shift significant at alpha (default 0.01); without
per-step values the plain bound on the totals decides, and the row says so. Without --rules:
coverage at or above its threshold, zero dropped records, and no pass's device total_ns nor
family's total_ns more than 5 % above the baseline.

Exit status: 0 every check passed; 1 a check failed (a regression); 2 usage; 3 a report or the
rules missing, unreadable or invalid, or a metric missing from either report (its path named);
4 an output file could not be written.

Examples:
  gpuattr gate --baseline main.json --current pr.json
  gpuattr gate --baseline main.json --current pr.json --rules gate.json \
      --markdown summary.md --junit gate.xml --json gate.json)";

}  // namespace
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
  const uint64_t started_realtime_ns = NowNs(CLOCK_REALTIME);
  const uint64_t started_ns = NowNs(CLOCK_MONOTONIC);
  GPUATTR_ASSIGN_OR_RETURN(const LoadedReport baseline, LoadReport(options.baseline));
  GPUATTR_ASSIGN_OR_RETURN(const LoadedReport current, LoadReport(options.current));
  GateRules rules;
  if (options.rules.empty()) {
    rules = DefaultGateRules(baseline.document());
  } else {
    GPUATTR_ASSIGN_OR_RETURN(rules, LoadRules(options.rules));
  }
  StatusOr<GateOutcome> outcome = EvaluateGate(baseline, current, rules);
  if (!outcome.ok()) return AsInputError(outcome.status());
  outcome->started_realtime_ns = started_realtime_ns;
  outcome->duration_ns = NowNs(CLOCK_MONOTONIC) - started_ns;
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

Subcommand AddGateSubcommand(CLI::App& app) {
  auto options = std::make_shared<GateCommandOptions>();
  CLI::App* gate = app.add_subcommand(
      "gate", "Fail (exit 1) when the current report regressed against the baseline");
  gate->add_option("--baseline", options->baseline, "BASELINE.json")->required();
  gate->add_option("--current", options->current, "CURRENT.json")->required();
  gate->add_option("--rules", options->rules,
                   "Rules file (schemas/gate.schema.json); default: the built-in rules");
  gate->add_option("--markdown", options->markdown, "Also write a markdown summary here");
  gate->add_option("--junit", options->junit, "Also write JUnit XML here (a testcase per check)");
  gate->add_option("--json", options->json, "Also write the checks as JSON here");
  gate->footer(kGateFooter);
  return {gate, [options] {
            StatusOr<GateCommandResult> result = RunGateCommand(*options);
            if (!result.ok()) {
              std::fprintf(stderr, "gpuattr gate: %s\n", result.status().message().c_str());
              return ExitCodeFor(result.status());
            }
            const std::string table =
                StdoutWantsColour() ? ColourVerdicts(result->table) : result->table;
            return WriteStdout("gate", table) ? result->exit_status : kExitInternal;
          }};
}

}  // namespace gpuattr::collector
