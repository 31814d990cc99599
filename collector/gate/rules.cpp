// ParseGateRules and DefaultGateRules (rules.h).
#include "gate/rules.h"

#include <cmath>
#include <set>
#include <utility>

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

Status Invalid(const std::string& source, const std::string& pointer, const std::string& what) {
  return InvalidArgumentError("rules " + source + ": " + pointer + ": " + what);
}

StatusOr<double> NonNegative(const Json& value, const std::string& source,
                             const std::string& pointer) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    return Invalid(source, pointer, "must be a finite number >= 0");
  }
  return value.get<double>();
}

StatusOr<double> Alpha(const Json& value, const std::string& source, const std::string& pointer) {
  if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 0.5) {
    return Invalid(source, pointer, "alpha must be a number in (0, 0.5]");
  }
  return value.get<double>();
}

StatusOr<AbsoluteBound> ParseAbsolute(const Json& value, const std::string& source,
                                      const std::string& pointer) {
  AbsoluteBound bound;
  if (value.is_number() && std::isfinite(value.get<double>())) {
    bound.number = value.get<double>();
    return bound;
  }
  if (value.is_string()) {
    StatusOr<MetricPath> metric = ParseMetricPath(value.get<std::string>());
    if (!metric.ok()) return Invalid(source, pointer, metric.status().message());
    if (metric->HasWildcard()) return Invalid(source, pointer, "a bound cannot use [*]");
    bound.metric = std::move(*metric);
    return bound;
  }
  return Invalid(source, pointer, "must be a finite number or a metric path (string)");
}

StatusOr<Rule> ParseRule(const Json& value, const std::string& source, const std::string& pointer) {
  if (!value.is_object()) return Invalid(source, pointer, "a rule must be an object");
  static const std::set<std::string> kKeys = {"name",
                                              "metric",
                                              "min",
                                              "max",
                                              "max_increase_pct",
                                              "max_decrease_pct",
                                              "max_increase_abs",
                                              "max_decrease_abs",
                                              "alpha"};
  for (const auto& [key, unused] : value.items()) {
    if (kKeys.count(key) == 0) return Invalid(source, pointer + "/" + key, "unknown field");
  }
  Rule rule;
  const auto metric = value.find("metric");
  if (metric == value.end() || !metric->is_string()) {
    return Invalid(source, pointer + "/metric", "required: a metric path (string)");
  }
  StatusOr<MetricPath> path = ParseMetricPath(metric->get<std::string>());
  if (!path.ok()) return Invalid(source, pointer + "/metric", path.status().message());
  rule.metric = std::move(*path);
  const auto name = value.find("name");
  if (name != value.end()) {
    if (!name->is_string() || name->get_ref<const std::string&>().empty()) {
      return Invalid(source, pointer + "/name", "must be a non-empty string");
    }
    rule.name = name->get<std::string>();
  } else {
    rule.name = FormatMetricPath(rule.metric);
  }
  for (const char* key : {"min", "max"}) {
    const auto found = value.find(key);
    if (found == value.end()) continue;
    GPUATTR_ASSIGN_OR_RETURN(AbsoluteBound bound,
                             ParseAbsolute(*found, source, pointer + "/" + key));
    (std::string(key) == "min" ? rule.min : rule.max) = std::move(bound);
  }
  const std::pair<const char*, std::optional<double>*> relative[] = {
      {"max_increase_pct", &rule.max_increase_pct},
      {"max_decrease_pct", &rule.max_decrease_pct},
      {"max_increase_abs", &rule.max_increase_abs},
      {"max_decrease_abs", &rule.max_decrease_abs}};
  for (const auto& [key, slot] : relative) {
    const auto found = value.find(key);
    if (found == value.end()) continue;
    GPUATTR_ASSIGN_OR_RETURN(*slot, NonNegative(*found, source, pointer + "/" + key));
  }
  if (rule.max_decrease_pct && *rule.max_decrease_pct > 100) {
    return Invalid(source, pointer + "/max_decrease_pct", "must be at most 100");
  }
  const auto alpha = value.find("alpha");
  if (alpha != value.end()) {
    GPUATTR_ASSIGN_OR_RETURN(rule.alpha, Alpha(*alpha, source, pointer + "/alpha"));
  }
  if (!rule.min && !rule.max && !rule.max_increase_pct && !rule.max_decrease_pct &&
      !rule.max_increase_abs && !rule.max_decrease_abs) {
    return Invalid(source, pointer,
                   "a rule needs a bound: min, max, max_increase_pct, max_decrease_pct, "
                   "max_increase_abs or max_decrease_abs");
  }
  return rule;
}

Rule MetricRule(std::string name, const std::string& metric) {
  Rule rule;
  rule.name = std::move(name);
  rule.metric = *ParseMetricPath(metric);  // constant paths of ours: always parse
  return rule;
}

}  // namespace

StatusOr<GateRules> ParseGateRules(const nlohmann::json& document, const std::string& source) {
  if (!document.is_object()) return Invalid(source, "", "the document must be a JSON object");
  static const std::set<std::string> kKeys = {"schema_version", "description", "alpha",
                                              "default_deny", "rules"};
  for (const auto& [key, unused] : document.items()) {
    if (kKeys.count(key) == 0) return Invalid(source, "/" + key, "unknown field");
  }
  GateRules rules;
  rules.source = source;
  const auto version = document.find("schema_version");
  if (version != document.end() &&
      (!version->is_string() || version->get_ref<const std::string&>() != kGateSchemaVersion)) {
    return Invalid(source, "/schema_version",
                   std::string("must be \"") + kGateSchemaVersion + "\"");
  }
  const auto description = document.find("description");
  if (description != document.end() && !description->is_string()) {
    return Invalid(source, "/description", "must be a string");
  }
  const auto alpha = document.find("alpha");
  if (alpha != document.end()) {
    GPUATTR_ASSIGN_OR_RETURN(rules.alpha, Alpha(*alpha, source, "/alpha"));
  }
  const auto deny = document.find("default_deny");
  if (deny != document.end()) {
    if (!deny->is_boolean()) return Invalid(source, "/default_deny", "must be true or false");
    rules.default_deny = deny->get<bool>();
  }
  const auto list = document.find("rules");
  if (list == document.end() || !list->is_array()) {
    return Invalid(source, "/rules", "required: an array of rules");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    GPUATTR_ASSIGN_OR_RETURN(Rule rule,
                             ParseRule((*list)[i], source, "/rules/" + std::to_string(i)));
    rules.rules.push_back(std::move(rule));
  }
  return rules;
}

GateRules DefaultGateRules(const nlohmann::json& baseline) {
  GateRules rules;
  rules.source = "defaults";
  Rule coverage = MetricRule("coverage", "coverage.attributed_fraction");
  coverage.min = AbsoluteBound{std::nullopt, *ParseMetricPath("coverage.threshold")};
  rules.rules.push_back(std::move(coverage));
  Rule dropped = MetricRule("dropped records", "loss.dropped_records");
  dropped.max = AbsoluteBound{0.0, std::nullopt};
  rules.rules.push_back(std::move(dropped));

  std::vector<std::string> scopes;  // pass rules need one process per scope
  const auto processes = baseline.is_object() ? baseline.find("processes") : baseline.end();
  const size_t count = processes != baseline.end() && processes->is_array() ? processes->size() : 0;
  if (count == 1) {
    scopes.push_back("");
  } else if (count > 1) {
    std::set<uint64_t> ranks;
    for (const Json& process : *processes) {
      const auto rank = process.is_object() ? process.find("rank") : process.end();
      if (rank == process.end() || !rank->is_number_unsigned()) break;
      ranks.insert(rank->get<uint64_t>());
    }
    if (ranks.size() == count) {
      for (uint64_t rank : ranks) scopes.push_back("process[rank=" + std::to_string(rank) + "].");
    } else {
      rules.notes.push_back(
          "no default pass rules: the baseline holds several processes without distinct ranks, "
          "so its processes cannot be matched with the current run's");
    }
  }
  const auto at_most_default_increase = [&](const std::string& name, const std::string& metric) {
    Rule rule = MetricRule(name, metric);
    rule.max_increase_pct = kDefaultMaxIncreasePct;
    rules.rules.push_back(std::move(rule));
  };
  // The phases the baseline's first process has times for: every process has the same keys.
  std::vector<std::string> phase_keys;
  if (count > 0) {
    const Json& first = (*processes)[0];
    const auto phases = first.is_object() ? first.find("phases") : first.end();
    if (first.is_object() && phases != first.end() && phases->is_object()) {
      for (const auto& [key, value] : phases->items()) {
        if (key.size() > 3 && key.compare(key.size() - 3, 3, "_ns") == 0) phase_keys.push_back(key);
      }
    }
  }
  for (const std::string& scope : scopes) {
    at_most_default_increase("pass total device time", scope + "passes[*].device.total_ns");
    for (const std::string& key : phase_keys) {
      at_most_default_increase("phase time", scope + "phases." + key);
    }
  }
  // The totals judge a change of the kernels themselves (fused, or another GPU's), under which
  // families vanish and appear (docs/gate.md §Families that vanish).
  at_most_default_increase("kernel time", "totals.kernel_ns");
  at_most_default_increase("family total", "families[*].total_ns");
  return rules;
}

}  // namespace gpuattr::collector
