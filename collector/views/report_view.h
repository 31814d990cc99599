// The terminal view of a report: what `gpuattr report REPORT.json` prints (DESIGN §3, issue 3).
//
// RenderReportView turns a gpuattr.report/1 document as LoadReport read it into text of at most
// kReportViewWidth columns: a summary header, then per process the pass tree sorted by self time,
// the top kernel families, device idle time and its gaps, the steps table, coverage, non-zero loss
// counters and refusals. It is pure (no I/O, no globals) and callable from any thread.
//
// The document is untrusted (a file from disk), so every field is read defensively: a missing,
// null or wrongly typed field renders "n/a" (never 0, never an exception), and strings lose their
// control characters before they reach a terminal. Names are elided in the middle with "…" to fit;
// numbers are never cut (an absurdly large one widens its line instead). Widths count code points:
// nlohmann's parser only lets valid UTF-8 into strings.
#ifndef GPUATTR_COLLECTOR_VIEWS_REPORT_VIEW_H_
#define GPUATTR_COLLECTOR_VIEWS_REPORT_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "report/report_reader.h"
#include "views/text.h"

namespace gpuattr::collector {

// The view's width: the toolkit's (text.h).
inline constexpr size_t kReportViewWidth = kTextWidth;
// Pass-tree levels shown; deeper levels are summarised in one line (bounds the recursion).
inline constexpr size_t kReportViewMaxDepth = 32;

struct ReportViewOptions {
  // Rows per list: children per pass-tree level, families, steps rows, largest gaps. At least 1.
  size_t top = 10;
  // Only the process with this pid (the caller checks that it is in the report).
  std::optional<uint64_t> pid;
};

std::string RenderReportView(const LoadedReport& report, const ReportViewOptions& options);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_VIEWS_REPORT_VIEW_H_
