// EvaluateGate (gate.h): rules judged on two reports; the renderings are gate_outputs.cpp.
#include "gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "gate/statistics.h"
#include "report/report_json.h"
#include "views/text.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

StatusOr<MetricValue> ResolveIn(const LoadedReport& report, const MetricPath& path,
                                const char* which) {
  StatusOr<MetricValue> value = ResolveMetric(report, path);
  if (!value.ok())
    return Status(value.status().code(), std::string(which) + ": " + value.status().message());
  return value;
}

// A relative bound: how far the current value may move from the baseline, and in which direction.
struct Relative {
  bool increase = true;
  bool percent = true;
  double limit = 0;

  // The signed change in the bad direction, as text and whether it exceeds the limit.
  bool Exceeded(double from, double to) const {
    const double change = increase ? to - from : from - to;
    if (!percent) return change > limit;
    if (from == 0) return change > 0;  // no relative change from 0: any move is past the bound
    return change / std::fabs(from) * 100.0 > limit;
  }
  std::string Change(const std::string& metric, double from, double to) const {
    if (percent && from != 0) return Formatted("%+.2f %%", (to - from) / std::fabs(from) * 100.0);
    const double change = to - from;
    return (change >= 0 ? "+" : "-") + FormatMetricValue(metric, std::fabs(change));
  }
  std::string Bound(const std::string& metric) const {
    const std::string amount =
        percent ? Formatted("%g %%", limit) : FormatMetricValue(metric, limit);
    return increase ? "<= baseline + " + amount : ">= baseline - " + amount;
  }
};

Check RelativeCheck(const Rule& rule, const std::string& metric, const MetricValue& baseline,
                    const MetricValue& current, const Relative& relative, double alpha) {
  Check check;
  check.rule = rule.name;
  check.metric = metric;
  check.bound = relative.Bound(metric);
  check.value = current.value;
  check.baseline = baseline.value;
  const Alternative alternative = relative.increase ? Alternative::kGreater : Alternative::kLess;
  std::string plain_reason;
  if (baseline.per_step && current.per_step) {
    const size_t n = baseline.per_step->size();
    const size_t m = current.per_step->size();
    if (SmallestPValue(n, m, alternative) <= alpha) {
      const double base_median = *LowerMedian(*baseline.per_step);
      const double median = *LowerMedian(*current.per_step);
      const UTest test = MannWhitneyU(*baseline.per_step, *current.per_step, alternative);
      const bool moved = relative.Exceeded(base_median, median);
      const bool significant = test.p_value <= alpha;
      check.passed = !(moved && significant);
      check.p_value = test.p_value;
      check.median = median;
      check.baseline_median = base_median;
      check.steps = m;
      check.baseline_steps = n;
      check.method = std::string("Mann-Whitney U, one-sided (") +
                     (relative.increase ? "greater" : "less") + "), " + std::to_string(n) + " vs " +
                     std::to_string(m) + " steps, " +
                     (test.exact ? "exact" : "normal approximation");
      const std::string p = Formatted("p = %.3g", test.p_value) + Formatted(", alpha = %g", alpha);
      const std::string shift = "median step " + relative.Change(metric, base_median, median) +
                                " (" + FormatMetricValue(metric, base_median) + " -> " +
                                FormatMetricValue(metric, median) + ")";
      if (moved && significant) {
        check.why = shift + " is past the bound and significant (" + p + "): regression";
      } else if (moved) {
        check.why = shift + " is past the bound but not significant (" + p + "): noise";
      } else {
        check.why = shift + " is within the bound (" + p + ")";
      }
      return check;
    }
    plain_reason = "too few step rows (" + std::to_string(n) + " vs " + std::to_string(m) +
                   ") for the U test ever to reach alpha = " + Formatted("%g", alpha);
  } else {
    plain_reason = !baseline.per_step ? baseline.per_step_note : current.per_step_note;
  }
  const bool moved = relative.Exceeded(baseline.value, current.value);
  check.passed = !moved;
  check.method = "plain bound";
  check.why = relative.Change(metric, baseline.value, current.value) +
              (moved ? " is past the bound" : " is within the bound") +
              "; plain bound without a noise test: " + plain_reason;
  return check;
}

StatusOr<Check> AbsoluteCheck(const Rule& rule, const std::string& metric,
                              const MetricValue& baseline, const MetricValue& current,
                              const AbsoluteBound& bound, bool minimum,
                              const LoadedReport& report) {
  Check check;
  check.rule = rule.name;
  check.metric = metric;
  check.value = current.value;
  check.baseline = baseline.value;
  check.method = "absolute";
  double limit = 0;
  std::string from;
  if (bound.number) {
    limit = *bound.number;
  } else {
    GPUATTR_ASSIGN_OR_RETURN(const MetricValue value,
                             ResolveIn(report, *bound.metric, "current report"));
    if (!value.measured) {
      return NotFoundError("current report: the bound " + FormatMetricPath(*bound.metric) + " " +
                           value.not_measured);
    }
    limit = value.value;
    from = " (" + FormatMetricPath(*bound.metric) + ")";
  }
  check.bound = (minimum ? ">= " : "<= ") + FormatMetricValue(metric, limit) + from;
  check.passed = minimum ? current.value >= limit : current.value <= limit;
  check.why =
      FormatMetricValue(metric, current.value) +
      (check.passed ? (minimum ? " is at or above the minimum" : " is at or below the maximum")
                    : (minimum ? " is below the minimum" : " is above the maximum"));
  return check;
}

// The check of a bound whose metric one report did not measure (null): not applicable when the
// current report has no number to judge, or no baseline to move from (a relative bound); a failure
// when the baseline measured what the current report no longer does.
Check UnmeasuredCheck(const Rule& rule, const std::string& metric, const std::string& bound,
                      const MetricValue& baseline, const MetricValue& current) {
  Check check;
  check.rule = rule.name;
  check.metric = metric;
  check.bound = bound;
  if (baseline.measured) check.baseline = baseline.value;
  if (current.measured) check.value = current.value;
  if (!baseline.absent.empty() || !current.absent.empty()) {
    check.applicable = false;
    check.method = "not applicable";
    check.why = "a family or pass that is not there has no such value (only its amounts: 0)";
    return check;
  }
  if (baseline.measured && !current.measured) {
    check.passed = false;
    check.method = "not measured";
    check.why = "measured in the baseline, but " + current.not_measured +
                " (not measured) in the current report: the capture lost what made the number "
                "(a device, its activity records, the shim's counters)";
    return check;
  }
  check.applicable = false;
  check.method = "not applicable";
  check.why = current.measured ? "the baseline did not measure it (" + baseline.not_measured +
                                     "): no baseline to move from"
                               : "neither report measured it (" + current.not_measured +
                                     " in both): nothing to judge";
  return check;
}

// What a check of a family or pass that one report lacks adds to its why.
std::string AbsenceNote(const MetricValue& baseline, const MetricValue& current) {
  if (!current.absent.empty()) {
    return "the " + current.absent +
           " vanished: it is not in the current report, where its amounts count as 0";
  }
  return "the " + baseline.absent +
         " is new: it is not in the baseline, where its amounts count as 0";
}

// "pass:a/b" or "family:NAME" for the pass or family a path addresses; empty otherwise.
std::string CoverageKey(const MetricPath& path) {
  const std::optional<size_t> selector = EntitySelector(path);
  if (!selector) return "";
  const PathStep& named = path.steps[*selector];
  if (named.kind == PathStep::Kind::kName) return "family:" + named.key;
  std::string joined;
  for (const std::string& n : named.names) joined += (joined.empty() ? "" : "/") + n;
  return "pass:" + joined;
}

void CollectPassKeys(const Json& nodes, const std::string& prefix, std::vector<std::string>* keys) {
  if (!nodes.is_array()) return;
  for (const Json& node : nodes) {
    const auto name = node.is_object() ? node.find("name") : node.end();
    if (!node.is_object() || name == node.end() || !name->is_string()) continue;
    const std::string key = prefix + (prefix.empty() ? "" : "/") + name->get<std::string>();
    keys->push_back(key);
    const auto children = node.find("children");
    if (children != node.end()) CollectPassKeys(*children, key, keys);
  }
}

// Every pass ("pass:a/b", over all processes) and family ("family:NAME") the report holds.
std::vector<std::string> ReportKeys(const Json& report) {
  std::vector<std::string> passes;
  const auto processes = report.is_object() ? report.find("processes") : report.end();
  if (processes != report.end() && processes->is_array()) {
    for (const Json& process : *processes) {
      const auto tree = process.is_object() ? process.find("passes") : process.end();
      if (process.is_object() && tree != process.end()) CollectPassKeys(*tree, "", &passes);
    }
  }
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const std::string& pass : passes) {
    if (seen.insert("pass:" + pass).second) keys.push_back("pass:" + pass);
  }
  const auto summary = report.is_object() ? report.find("summary") : report.end();
  if (summary != report.end() && summary->is_object()) {
    const auto families = summary->find("families");
    if (families != summary->end() && families->is_array()) {
      for (const Json& family : *families) {
        const auto name = family.is_object() ? family.find("family") : family.end();
        if (!family.is_object() || name == family.end() || !name->is_string()) continue;
        const std::string key = "family:" + name->get<std::string>();
        if (seen.insert(key).second) keys.push_back(key);
      }
    }
  }
  return keys;
}

// The metric path naming a coverage key, for messages.
std::string KeyMetric(const std::string& key) {
  if (key.rfind("pass:", 0) == 0)
    return "passes[" + Json(key.substr(5)).dump(-1, ' ', false, Json::error_handler_t::replace) +
           "]";
  return "families[" + Json(key.substr(7)).dump(-1, ' ', false, Json::error_handler_t::replace) +
         "]";
}

// ", which had 3.200 ms": the device time `report` holds for a pass or family key, where one number
// says it (a pass of a report with several processes has one per process: then nothing).
std::string KeyTime(const LoadedReport& report, const std::string& key, const char* verb) {
  const std::string field = key.rfind("pass:", 0) == 0 ? ".device.total_ns" : ".total_ns";
  const StatusOr<MetricPath> path = ParseMetricPath(KeyMetric(key) + field);
  if (!path.ok()) return "";
  const StatusOr<MetricValue> value = ResolveMetric(report, *path);
  if (!value.ok() || !value->measured || !value->absent.empty()) return "";
  return std::string(", which ") + verb + " " + FormatMetricValue(field, value->value);
}

}  // namespace

size_t GateOutcome::Failures() const {
  return static_cast<size_t>(
      std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.passed; }));
}

size_t GateOutcome::NotApplicable() const {
  return static_cast<size_t>(
      std::count_if(checks.begin(), checks.end(), [](const Check& c) { return !c.applicable; }));
}

std::string FormatMetricValue(const std::string& metric, double value) {
  if (EndsWith(metric, "_ns")) return Formatted("%.3f ms", value / 1e6);
  if (std::fabs(value) < 1e15 && value == std::floor(value)) return Formatted("%.0f", value);
  return Formatted("%.4g", value);
}

StatusOr<GateOutcome> EvaluateGate(const LoadedReport& baseline, const LoadedReport& current,
                                   const GateRules& rules) {
  GateOutcome outcome;
  outcome.alpha = rules.alpha;
  outcome.default_deny = rules.default_deny;
  outcome.rules_source = rules.source;
  outcome.notes = rules.notes;
  std::set<std::string> covered;
  for (const Rule& rule : rules.rules) {
    StatusOr<std::vector<MetricPath>> paths = ExpandWildcard(baseline, rule.metric);
    if (!paths.ok()) {
      return Status(paths.status().code(), "baseline report: " + paths.status().message());
    }
    if (rule.metric.HasWildcard() && paths->empty()) {
      outcome.notes.push_back("rule '" + rule.name + "': " + FormatMetricPath(rule.metric) +
                              " matched nothing in the baseline");
    }
    const double alpha = rule.alpha.value_or(rules.alpha);
    for (const MetricPath& path : *paths) {
      const std::string metric = FormatMetricPath(path);
      GPUATTR_ASSIGN_OR_RETURN(const MetricValue base,
                               ResolveIn(baseline, path, "baseline report"));
      GPUATTR_ASSIGN_OR_RETURN(const MetricValue now, ResolveIn(current, path, "current report"));
      if (!base.absent.empty() && !now.absent.empty()) {
        return NotFoundError("metric " + metric + " is in neither report: no " + now.absent);
      }
      const size_t first_check = outcome.checks.size();
      const std::string key = CoverageKey(path);
      if (!key.empty()) covered.insert(key);
      // A bound the reports cannot both answer (a null on either side) is judged by
      // UnmeasuredCheck; an absolute bound needs the current value only.
      const auto unmeasured = [&](const std::string& bound, bool absolute) {
        const bool answered = now.measured && (absolute || base.measured);
        if (answered) return false;
        outcome.checks.push_back(UnmeasuredCheck(rule, metric, bound, base, now));
        return true;
      };
      const auto absolute_text = [&](const AbsoluteBound& bound, bool minimum) {
        return std::string(minimum ? ">= " : "<= ") +
               (bound.number ? FormatMetricValue(metric, *bound.number)
                             : FormatMetricPath(*bound.metric));
      };
      if (rule.min && !unmeasured(absolute_text(*rule.min, true), true)) {
        GPUATTR_ASSIGN_OR_RETURN(Check check,
                                 AbsoluteCheck(rule, metric, base, now, *rule.min, true, current));
        outcome.checks.push_back(std::move(check));
      }
      if (rule.max && !unmeasured(absolute_text(*rule.max, false), true)) {
        GPUATTR_ASSIGN_OR_RETURN(Check check,
                                 AbsoluteCheck(rule, metric, base, now, *rule.max, false, current));
        outcome.checks.push_back(std::move(check));
      }
      const std::pair<std::optional<double>, Relative> relatives[] = {
          {rule.max_increase_pct, {true, true, rule.max_increase_pct.value_or(0)}},
          {rule.max_decrease_pct, {false, true, rule.max_decrease_pct.value_or(0)}},
          {rule.max_increase_abs, {true, false, rule.max_increase_abs.value_or(0)}},
          {rule.max_decrease_abs, {false, false, rule.max_decrease_abs.value_or(0)}}};
      for (const auto& [given, relative] : relatives) {
        if (given && !unmeasured(relative.Bound(metric), false)) {
          outcome.checks.push_back(RelativeCheck(rule, metric, base, now, relative, alpha));
        }
      }
      if (!base.absent.empty() || !now.absent.empty()) {
        for (size_t i = first_check; i < outcome.checks.size(); ++i) {
          outcome.checks[i].why += "; " + AbsenceNote(base, now);
        }
      }
    }
  }
  // Passes and families of the current run that are new, or that no rule looked at.
  const std::vector<std::string> before = ReportKeys(baseline.document());
  const std::vector<std::string> after = ReportKeys(current.document());
  const std::set<std::string> in_baseline(before.begin(), before.end());
  const std::set<std::string> in_current(after.begin(), after.end());
  const auto kind_of = [](const std::string& key) {
    return std::string(key.rfind("pass:", 0) == 0 ? "pass" : "family");
  };
  for (const std::string& key : after) {
    const bool is_new = in_baseline.count(key) == 0;
    const bool uncovered = covered.count(key) == 0;
    const std::string what = kind_of(key);
    if (rules.default_deny && (is_new || uncovered)) {
      Check check;
      check.rule = "default_deny";
      check.metric = KeyMetric(key);
      check.bound = "covered by a rule";
      check.passed = false;
      check.method = "default deny";
      check.why =
          is_new ? "new " + what + ", not in the baseline" : what + " not covered by any rule";
      outcome.checks.push_back(std::move(check));
    } else if (is_new) {
      outcome.notes.push_back("new " + what + " (not in the baseline): " + KeyMetric(key) +
                              KeyTime(current, key, "has"));
    }
  }
  // Vanished ones no check judged: a change all the same (a fused family, another GPU's kernels).
  for (const std::string& key : before) {
    if (in_current.count(key) > 0 || covered.count(key) > 0) continue;
    outcome.notes.push_back("vanished " + kind_of(key) + " (not in the current report): " +
                            KeyMetric(key) + KeyTime(baseline, key, "had"));
  }
  return outcome;
}

}  // namespace gpuattr::collector
