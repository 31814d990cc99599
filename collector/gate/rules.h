// Gate rules (schemas/gate.schema.json, "gpuattr.gate/1"): what `gpuattr gate` checks, read from
// a rules file or built as the defaults of issue 6. Pure functions; any thread; no state.
//
// A rule names a metric (gate/metric_path.h, at most one [*], expanded over the baseline) and one
// or more bounds: absolute (min, max: a number, or a metric path read in the current report such
// as "coverage.threshold") or relative to the baseline (max_increase_pct, max_decrease_pct,
// max_increase_abs, max_decrease_abs). Each bound becomes one check. The file is untrusted: it
// is checked here field by field, mirroring the schema (the binary carries no schema validator),
// and any deviation is kInvalidArgument naming the JSON pointer.
#ifndef GPUATTR_COLLECTOR_GATE_RULES_H_
#define GPUATTR_COLLECTOR_GATE_RULES_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gate/metric_path.h"

namespace gpuattr::collector {

inline constexpr char kGateSchemaVersion[] = "gpuattr.gate/1";
inline constexpr double kDefaultAlpha = 0.01;
inline constexpr double kDefaultMaxIncreasePct = 5.0;

// min or max: a constant, or a metric of the current report.
struct AbsoluteBound {
  std::optional<double> number;
  std::optional<MetricPath> metric;
};

struct Rule {
  std::string name;  // from the file, or derived from the metric
  MetricPath metric;
  std::optional<AbsoluteBound> min, max;
  std::optional<double> max_increase_pct, max_decrease_pct;  // percent of the baseline
  std::optional<double> max_increase_abs, max_decrease_abs;  // in the metric's unit
  std::optional<double> alpha;                               // overrides GateRules::alpha
};

struct GateRules {
  double alpha = kDefaultAlpha;
  bool default_deny = false;
  std::vector<Rule> rules;
  std::string source;              // "defaults" or the file's path
  std::vector<std::string> notes;  // what the defaults could not cover, and why
};

// The parsed rules document (already JSON); `source` names it in messages.
StatusOr<GateRules> ParseGateRules(const nlohmann::json& document, const std::string& source);

// The defaults for this baseline: attributed fraction ≥ coverage.threshold, zero dropped records,
// and none of these more than 5 % above the baseline: a pass's device total_ns, a phase's time,
// the kernel time (totals.kernel_ns), a family's total_ns. Pass and phase rules are per process:
// unscoped for a single process, process[rank=R] for each rank when every process has one;
// otherwise a note says why they were left out.
GateRules DefaultGateRules(const nlohmann::json& baseline);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_GATE_RULES_H_
