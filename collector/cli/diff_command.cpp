// DiffCommandOutput (diff_command.h).
#include "cli/diff_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "gate/diff.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

constexpr char kDiffFooter[] =
    R"(Prints two reports side by side: per process (the only one, else matched by rank)
the pass tree by path with device total and self time, sorted by absolute change of the total;
new and vanished passes; per device busy, idle, idle fraction and gaps; step medians. Then the
kernel families the same way, and coverage. --json prints the same as JSON (gpuattr.diff/1).

Exit status: 0; 3 when a report is missing, unreadable, not JSON or not gpuattr.report/1; 2 usage.

Examples:
  gpuattr diff baseline.json current.json
  gpuattr diff --json baseline.json current.json | jq '.processes[0].passes[:5]')";

}  // namespace

StatusOr<std::string> DiffCommandOutput(const DiffCommandOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(const LoadedReport baseline, LoadReport(options.baseline));
  GPUATTR_ASSIGN_OR_RETURN(const LoadedReport current, LoadReport(options.current));
  const nlohmann::json diff = DiffReports(baseline.document(), current.document());
  if (options.json) {
    return diff.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return RenderDiff(diff, options.top);
}

Subcommand AddDiffSubcommand(CLI::App& app) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* diff = app.add_subcommand("diff", "Show two reports side by side, with deltas");
  diff->add_option("baseline", options->baseline, "BASELINE.json")->required();
  diff->add_option("current", options->current, "CURRENT.json")->required();
  diff->add_flag("--json", options->json, "Print the diff as JSON (gpuattr.diff/1)");
  diff->add_option("--top", options->top, "Rows per list (passes, families)")
      ->check(CLI::Range(size_t{1}, size_t{1000000}))
      ->capture_default_str();
  diff->footer(kDiffFooter);
  return {diff, [options] { return ExitWithOutput("diff", DiffCommandOutput(*options)); }};
}

}  // namespace gpuattr::collector
