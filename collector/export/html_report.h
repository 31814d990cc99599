// The self-contained HTML report (`gpuattr report REPORT.json --html out.html`): one file that
// any browser opens offline, generated from the report's JSON alone.
//
// The page is collector/data/report.html (inline CSS and JavaScript, embedded in the binary at
// build time) with the report embedded as a JSON data block; the page's script draws, per
// process: an icicle chart of the pass tree sized by device time (canvas; self and total on
// hover; click to zoom; nodes narrower than a pixel are not drawn, so a 10,000-node tree stays
// responsive), the heaviest passes, the kernel-family table, device busy and idle with the gap
// classes, a per-step stacked bar of forward, backward, recompute, loss, optimizer, other,
// unattributed and gaps, coverage, loss counters and refusals. The page makes no request: its
// Content-Security-Policy forbids every source but itself, and the embedded JSON escapes '/'
// and '<', so neither a URL nor a closing script tag appears in the file.
// Pure functions; no state, any thread.
#ifndef GPUATTR_COLLECTOR_EXPORT_HTML_REPORT_H_
#define GPUATTR_COLLECTOR_EXPORT_HTML_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "report/report_reader.h"

namespace gpuattr::collector {

// The page for `report` (a parsed gpuattr.report/1 document; the script reads every field
// defensively, so a partial report renders what it has).
std::string RenderHtmlReport(const nlohmann::json& report);

// The same page for a report as LoadReport read it, written to `path` atomically while its text
// is made, the step rows from their columns one at a time (`gpuattr report --html`: neither the
// page nor the rows' DOM exists whole); with `pid`, that process only.
Status WriteHtmlReport(const LoadedReport& report, const std::optional<uint64_t>& pid,
                       const std::string& path);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_EXPORT_HTML_REPORT_H_
