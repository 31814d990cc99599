// Metric paths: how a gate rule names one number of a gpuattr report (docs/gate.md §Metric
// paths), parsed once and resolved against a report, with the per-step values behind it when the
// report's step rows carry them. Pure functions; any thread; no state.
//
//   path     := [scope "."] key selector* ("." key selector*)*
//   scope    := "summary" | "process[rank=N]" | "process[pid=N]"
//   selector := "[" (INDEX | "*" | JSON-string | JSON-array-of-strings | bare-name) "]"
//
// Without a scope, coverage.*, families[..], totals.* and ranks[..] read the summary; loss.X is
// the sum over processes; anything else reads the report's only process (several processes: the
// path is ambiguous and does not resolve). `device.F` on a process is the maximum of F over its
// devices. A name selector picks the array element whose family, name or reason equals it; on
// `passes` it is a pass path, names joined by "/" (or a JSON array of names), found in the tree.
//
// The report is untrusted: every access is checked and a path that does not lead to a number
// (absent, another type) is kNotFound naming the path and why. A path that leads to null (the
// report did not measure it; DESIGN's rule) resolves, with `measured` false and the reason. So
// does a family or pass that one report has and this one does not (`absent`): its amounts are 0.
#ifndef GPUATTR_COLLECTOR_GATE_METRIC_PATH_H_
#define GPUATTR_COLLECTOR_GATE_METRIC_PATH_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "report/report_reader.h"

namespace gpuattr::collector {

struct PathStep {
  enum class Kind { kKey, kIndex, kName, kPassPath, kWildcard };
  Kind kind = Kind::kKey;
  std::string key;                 // kKey, kName
  size_t index = 0;                // kIndex
  std::vector<std::string> names;  // kPassPath
};

struct MetricPath {
  enum class Scope { kDefault, kSummary, kRank, kPid };
  Scope scope = Scope::kDefault;
  uint64_t scope_id = 0;  // kRank, kPid
  std::vector<PathStep> steps;

  bool HasWildcard() const;
};

struct MetricValue {
  bool measured = true;      // false: null in the report (not measured); value is 0
  std::string not_measured;  // then: "null", "null in a process", "null on a device", "absent"
  // Not empty when the family or pass the path names is not in this report although the array
  // or tree that would hold it is ("family \"x\"", "pass [\"step\",\"fwd\"]"): a fusion
  // change or another GPU makes families vanish and appear. Its amounts (times, counts, share)
  // are then 0, measured; any other field (a mean, an extreme) is not measured ("absent").
  std::string absent;
  double value = 0;
  // One value per kept step row, when the rows carry this metric; else why not.
  std::optional<std::vector<double>> per_step;
  std::string per_step_note;
};

// kInvalidArgument naming the position of the first error.
StatusOr<MetricPath> ParseMetricPath(const std::string& text);

// The canonical spelling (names as JSON strings), which ParseMetricPath reads back.
std::string FormatMetricPath(const MetricPath& path);

// The position in path.steps of its family or pass selector (families[NAME], passes[P]), if any.
std::optional<size_t> EntitySelector(const MetricPath& path);

// Whether the field after the selector at `selector` is an amount: a time, a count or a share,
// which is 0 for a family or pass that a report lacks (a mean or an extreme has no value then).
bool NamesAmount(const MetricPath& path, size_t selector);

// kNotFound: "metric PATH ...why". A family or pass that is not there resolves, as `absent`.
StatusOr<MetricValue> ResolveMetric(const LoadedReport& report, const MetricPath& path);

// `path` (one [*]) with the wildcard replaced by each element the report holds there: every node
// of a pass tree (depth first), every family by name, else every index (step rows by index too,
// since their names repeat). kNotFound when the part
// before the wildcard does not resolve to an array; kInvalidArgument for several wildcards.
StatusOr<std::vector<MetricPath>> ExpandWildcard(const LoadedReport& report,
                                                 const MetricPath& path);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_GATE_METRIC_PATH_H_
