// ReportCommandOutput (report_command.h).
#include "cli/report_command.h"

#include <CLI/CLI.hpp>
#include <utility>

#include "cli/cli.h"
#include "export/html_report.h"
#include "report/atomic_write.h"
#include "report/report_reader.h"
#include "report/report_writer.h"

namespace gpuattr::collector {
namespace {

constexpr char kReportFooter[] = R"(Prints the terminal view of a report on stdout: per process,
the pass tree sorted by self device time, the top kernel families, device idle time and its
gaps, the steps, coverage, non-zero loss counters and refusals. Times are in ms; "n/a" is a
number that was not measured. --json prints the report itself instead (pretty-printed).

Exit status: 0; 3 when REPORT is missing, unreadable, not JSON or not gpuattr.report/1; 2 usage
(including a --process pid that REPORT does not hold); 4 when --html cannot be written.

Examples:
  gpuattr report gpuattr-report.json
  gpuattr report --top 5 --process 4242 report.json
  gpuattr report --json report.json | jq '.summary.coverage')";

}  // namespace
namespace {

using Json = nlohmann::json;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace

StatusOr<std::string> ReportCommandOutput(const ReportCommandOptions& options) {
  GPUATTR_ASSIGN_OR_RETURN(LoadedReport loaded, LoadReport(options.path));
  if (options.view.pid) {
    std::string pids;
    bool found = false;
    const Json& document = loaded.document();
    const auto processes = document.find("processes");
    if (processes != document.end() && processes->is_array()) {
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
  if (options.json) {
    // Straight to standard output, the rows from their columns: no DOM of them, no whole text.
    GPUATTR_RETURN_IF_ERROR(WriteLoadedReport(loaded, "-", ExistingFile::kReplace));
    return std::string();
  }
  if (options.html.empty()) return RenderReportView(loaded, options.view);
  // The page embeds the whole document, its rows written from their columns as it is made.
  GPUATTR_RETURN_IF_ERROR(WriteHtmlReport(loaded, options.view.pid, options.html));
  return std::string();
}

Subcommand AddReportSubcommand(CLI::App& app) {
  auto options = std::make_shared<ReportCommandOptions>();
  CLI::App* report = app.add_subcommand(
      "report", "Print the terminal view of a report (or, with --json, the report itself)");
  report->add_option("report", options->path, "REPORT.json: a report gpuattr run wrote")
      ->required();
  report->add_flag("--json", options->json, "Print the report as JSON (pretty-printed)");
  report->add_option("--html", options->html,
                     "Write a self-contained HTML report (charts, tables) here instead");
  report
      ->add_option("--top", options->view.top,
                   "Rows per list: children per pass-tree level, families, steps, gaps")
      ->check(CLI::Range(size_t{1}, size_t{1000000}))
      ->capture_default_str();
  report->add_option_function<uint64_t>(
      "--process", [options](uint64_t pid) { options->view.pid = pid; },
      "Only the process with this pid");
  report->footer(kReportFooter);
  return {report, [options] { return ExitWithOutput("report", ReportCommandOutput(*options)); }};
}

}  // namespace gpuattr::collector
