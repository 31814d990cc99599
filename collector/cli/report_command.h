// `gpuattr report REPORT.json [--json] [--top N] [--process PID]`: reads a report that
// `gpuattr run` wrote, checks that it is gpuattr.report/1, and returns its terminal view
// (report/report_view.h) or the document itself, pretty-printed, for jq and friends.
// Runs on the main thread; no state.
//
// The file is untrusted input: it is parsed without exceptions, refused when it is larger than
// kMaxReportBytes or nested deeper than kMaxReportDepth (bounded memory, and no recursion in
// rendering or printing can run out of stack), and every field is then read defensively.
//
// Errors: the named file is this command's input, so every failure to use it (missing,
// unreadable, a directory, too large, not JSON, too deep, another schema) is kDataLoss, exit 3.
// (ExitCodeFor maps kNotFound to 2, usage: right for a missing CMD or shim, wrong for an input
// file.) A --process pid that the report does not hold is kInvalidArgument, exit 2.
#ifndef GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "report/report_view.h"

namespace gpuattr::collector {

inline constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;
inline constexpr size_t kMaxReportDepth = 512;
inline constexpr char kReportSchemaVersion[] = "gpuattr.report/1";

struct ReportCommandOptions {
  std::string path;
  bool json = false;  // re-emit the document instead of the terminal view
  std::string html;   // --html: write the self-contained HTML report here instead; empty: none
  ReportViewOptions view;
};

// The document at `path`, parsed and checked to be a JSON object with schema_version
// gpuattr.report/1; nothing else about it is checked.
StatusOr<nlohmann::json> LoadReport(const std::string& path);

// What `gpuattr report` prints on stdout (nothing with --html, which writes its file, atomically,
// with only the --process pid's process when one is named).
StatusOr<std::string> ReportCommandOutput(const ReportCommandOptions& options);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_REPORT_COMMAND_H_
