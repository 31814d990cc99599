// Evaluates gate rules (gate/rules.h) on a baseline and a current report, and renders the outcome
// as a terminal table, markdown, JUnit XML and JSON (docs/gate.md). Pure functions; any thread.
//
// Noise (docs/gate.md §Noise): a bound relative to the baseline fails only when the median of the
// per-step values moved past it AND a one-sided Mann–Whitney U test at α finds the shift
// significant. Without per-step values in both reports (no steps, a metric the step rows do not
// carry, or too few rows for the test to ever reach α) the plain bound on the totals decides, and
// the check's method and why say so. Absolute bounds (min, max) always apply to the value.
//
// A metric that does not resolve in either report (gate/metric_path.h) makes EvaluateGate fail
// with kNotFound naming it: a gate never passes over a number it could not read. A metric that
// resolves to null (not measured) is a check of its own: "not applicable" when neither report
// measured it (or, for a relative bound, the baseline did not), named in every output but not a
// failure; a failure with its cause when the baseline measured it and the current report did not.
#ifndef GPUATTR_COLLECTOR_GATE_GATE_H_
#define GPUATTR_COLLECTOR_GATE_GATE_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gate/rules.h"
#include "report/report_reader.h"

namespace gpuattr::collector {

// One bound of one (expanded) rule.
struct Check {
  std::string rule;
  std::string metric;                     // canonical, wildcard expanded
  std::string bound;                      // e.g. ">= 0.95 (coverage.threshold)", "<= baseline +5 %"
  std::optional<double> value, baseline;  // null: not measured in that report
  bool passed = true;
  bool applicable = true;  // false: a metric neither report can judge (null); passed, not counted
  std::string method;      // "absolute", "Mann-Whitney U ...", "plain bound"
  std::string why;
  std::optional<double> p_value;
  std::optional<double> median, baseline_median;  // of the per-step values, when tested
  size_t steps = 0, baseline_steps = 0;
};

struct GateOutcome {
  double alpha = kDefaultAlpha;
  bool default_deny = false;
  std::string rules_source;
  std::vector<Check> checks;
  std::vector<std::string> notes;
  // When the gate began (wall clock) and how long reading the reports and judging them took, as
  // the command measured them; null when not measured (the JUnit file then carries neither).
  std::optional<uint64_t> started_realtime_ns;
  std::optional<uint64_t> duration_ns;

  size_t Failures() const;
  size_t NotApplicable() const;
  bool Passed() const { return Failures() == 0; }
};

StatusOr<GateOutcome> EvaluateGate(const LoadedReport& baseline, const LoadedReport& current,
                                   const GateRules& rules);

std::string RenderGateTable(const GateOutcome& outcome);
std::string RenderGateMarkdown(const GateOutcome& outcome);
std::string RenderGateJunit(const GateOutcome& outcome);
nlohmann::json GateOutcomeJson(const GateOutcome& outcome);

// A number for people: *_ns as milliseconds, integers as integers, else 4 significant digits.
std::string FormatMetricValue(const std::string& metric, double value);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_GATE_GATE_H_
