// `gpuattr report REPORT.json [--json] [--top N] [--process PID]`: reads a report that
// `gpuattr run` wrote, checks that it is gpuattr.report/1, and returns its terminal view
// (views/report_view.h) or the document itself, pretty-printed, for jq and friends.
// Runs on the main thread; no state.
//
// The file is untrusted input, read by LoadReport (report/report_reader.h), every field then
// read defensively. Every failure to use it is kDataLoss, exit 3; a --process pid that the
// report does not hold is kInvalidArgument, exit 2.
#ifndef GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_

#include <string>

#include "base/status.h"
#include "cli/subcommand.h"
#include "report/report_reader.h"
#include "views/report_view.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct ReportCommandOptions {
  std::string path;
  bool json = false;  // re-emit the document instead of the terminal view
  std::string html;   // --html: write the self-contained HTML report here instead; empty: none
  ReportViewOptions view;
};

// What `gpuattr report` prints on stdout (nothing with --html, which writes its file, atomically,
// with only the --process pid's process when one is named).
StatusOr<std::string> ReportCommandOutput(const ReportCommandOptions& options);

// Adds `gpuattr report` to `app`.
Subcommand AddReportSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_
