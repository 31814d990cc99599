// `gpuattr diff`: two reports side by side (docs/gate.md §Diff). Per matched process, the pass
// tree flattened by path with device total and self time and their absolute and relative deltas,
// sorted by absolute change of the total; new and vanished passes; per device busy, idle, idle
// fraction and gap classes. Across the run: kernel families (summary) the same way, and coverage.
// Pure functions; any thread; no state. Both reports are untrusted: fields of the wrong type read
// as absent (null in the JSON, "-" in the view).
//
// Processes are matched as the only process of each report, else by rank, then the rest by their
// order in each report (matched_by says which); what is left over is listed as unmatched. Devices
// are matched by id, except that two processes with one device each pair those two whatever
// their ids (devices_matched_by "order": the same model on different machines).
#ifndef GPUATTR_COLLECTOR_GATE_DIFF_H_
#define GPUATTR_COLLECTOR_GATE_DIFF_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace gpuattr::collector {

inline constexpr char kDiffSchemaVersion[] = "gpuattr.diff/1";

nlohmann::json DiffReports(const nlohmann::json& baseline, const nlohmann::json& current);

// The terminal view of DiffReports' result; `top` rows per list.
std::string RenderDiff(const nlohmann::json& diff, size_t top);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_GATE_DIFF_H_
