// ResolveMetric and ExpandWildcard (metric_path.h); the path syntax is metric_path_syntax.cpp.
#include "gate/metric_path.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

constexpr const char* kPhaseKeys[] = {"forward", "backward",      "recompute", "optimizer",
                                      "loss",    "communication", "other"};

std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The object the path starts from, and whether it is a process (per-step rows live there).
struct Root {
  const Json* node = nullptr;
  bool is_process = false;
  bool summed_loss = false;  // unscoped loss.X: the sum over processes
  // A process's step rows: the empty steps.rows array the document holds in their place, and
  // the columns that hold them.
  const Json* rows_in_document = nullptr;
  const StepRowColumns* rows = nullptr;
};

// processes[index], whose entry is `process`.
Root ProcessRoot(const LoadedReport& report, const Json& process, size_t index) {
  Root root{&process, true, false};
  const Json& rows = Field(Field(process, "steps"), "rows");
  if (rows.is_array()) {
    root.rows_in_document = &rows;
    root.rows = &report.StepRows(index);
  }
  return root;
}

StatusOr<Root> ResolveRoot(const LoadedReport& loaded, const MetricPath& path,
                           const std::string& where) {
  const auto missing = [&](const std::string& why) {
    return NotFoundError("metric " + where + " " + why);
  };
  const Json& report = loaded.document();
  if (!report.is_object()) return missing("cannot be read: the report is not an object");
  const auto processes = report.find("processes");
  const bool have_processes = processes != report.end() && processes->is_array();
  const auto summary = report.find("summary");
  switch (path.scope) {
    case MetricPath::Scope::kSummary:
      if (summary == report.end() || !summary->is_object()) return missing("has no summary");
      return Root{&*summary, false, false};
    case MetricPath::Scope::kRank:
    case MetricPath::Scope::kPid: {
      const char* field = path.scope == MetricPath::Scope::kRank ? "rank" : "pid";
      if (have_processes) {
        for (size_t i = 0; i < processes->size(); ++i) {
          const Json& process = (*processes)[i];
          if (!process.is_object()) continue;
          const auto id = process.find(field);
          if (id != process.end() && id->is_number_unsigned() &&
              id->get<uint64_t>() == path.scope_id) {
            return ProcessRoot(loaded, process, i);
          }
        }
      }
      return missing(std::string("is missing: no process with ") + field + " " +
                     std::to_string(path.scope_id) + " in the report");
    }
    case MetricPath::Scope::kDefault:
      break;
  }
  const std::string first =
      path.steps.empty() || path.steps[0].kind != PathStep::Kind::kKey ? "" : path.steps[0].key;
  if (first == "coverage" || first == "families" || first == "totals" || first == "ranks") {
    if (summary == report.end() || !summary->is_object()) return missing("has no summary");
    return Root{&*summary, false, false};
  }
  const size_t count = have_processes ? processes->size() : 0;
  if (count == 1) return ProcessRoot(loaded, (*processes)[0], 0);
  if (first == "loss" && count > 1) return Root{&*processes, false, true};
  if (count == 0) return missing("is missing: the report holds no process");
  return missing("is ambiguous: the report holds " + std::to_string(count) +
                 " processes; prefix it with process[rank=R] or process[pid=P]");
}

const Json* FindPass(const Json& passes, const std::vector<std::string>& names) {
  const Json* level = &passes;
  const Json* found = nullptr;
  for (const std::string& name : names) {
    if (!level->is_array()) return nullptr;
    found = nullptr;
    for (const Json& node : *level) {
      const auto node_name = node.is_object() ? node.find("name") : node.end();
      if (node_name != node.end() && node_name->is_string() &&
          node_name->get_ref<const std::string&>() == name) {
        found = &node;
        break;
      }
    }
    if (found == nullptr) return nullptr;
    static const Json kNoChildren = Json::array();
    const auto children = found->find("children");
    level = children != found->end() ? &*children : &kNoChildren;
  }
  return found;
}

const Json* FindNamed(const Json& array, const std::string& name) {
  for (const Json& element : array) {
    if (!element.is_object()) continue;
    for (const char* field : {"family", "name", "reason"}) {
      const auto value = element.find(field);
      if (value != element.end() && value->is_string() &&
          value->get_ref<const std::string&>() == name) {
        return &element;
      }
    }
  }
  return nullptr;
}

// The first row named `name` (as FindNamed names elements), or nullopt.
std::optional<size_t> FindNamedRow(const StepRowColumns& rows, const std::string& name) {
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const char* field : {"family", "name", "reason"}) {
      const Json value = rows.Member(i, field);
      if (value.is_string() && value.get_ref<const std::string&>() == name) return i;
    }
  }
  return std::nullopt;
}

// Follows steps [begin, end) from `node`; nullptr with `why` set when a step does not resolve.
// A step into the root process's step rows reads that row from its columns into `row`.
const Json* Walk(const Json* node, const std::vector<PathStep>& steps, size_t begin, size_t end,
                 std::string* why, const Root* root = nullptr, Json* row = nullptr) {
  for (size_t i = begin; i < end; ++i) {
    const PathStep& step = steps[i];
    if (root != nullptr && node == root->rows_in_document &&
        (step.kind == PathStep::Kind::kIndex || step.kind == PathStep::Kind::kName)) {
      const std::optional<size_t> found = step.kind == PathStep::Kind::kIndex
                                              ? std::optional<size_t>(step.index)
                                              : FindNamedRow(*root->rows, step.key);
      if (!found || *found >= root->rows->size()) {
        *why = step.kind == PathStep::Kind::kIndex
                   ? "is missing: no element [" + std::to_string(step.index) + "]"
                   : "is missing: no element named " + JsonText(step.key);
        return nullptr;
      }
      *row = root->rows->Row(*found);
      node = row;
      continue;
    }
    switch (step.kind) {
      case PathStep::Kind::kKey: {
        const auto member = node->is_object() ? node->find(step.key) : node->end();
        if (!node->is_object() || member == node->end()) {
          *why = "is missing: no field '" + step.key + "'";
          return nullptr;
        }
        node = &*member;
        break;
      }
      case PathStep::Kind::kIndex:
        if (!node->is_array() || step.index >= node->size()) {
          *why = "is missing: no element [" + std::to_string(step.index) + "]";
          return nullptr;
        }
        node = &(*node)[step.index];
        break;
      case PathStep::Kind::kName:
        node = node->is_array() ? FindNamed(*node, step.key) : nullptr;
        if (node == nullptr) {
          *why = "is missing: no element named " + JsonText(step.key);
          return nullptr;
        }
        break;
      case PathStep::Kind::kPassPath:
        node = FindPass(*node, step.names);
        if (node == nullptr) {
          *why = "is missing: no pass " + JsonText(step.names);
          return nullptr;
        }
        break;
      case PathStep::Kind::kWildcard:
        *why = "has an unexpanded wildcard [*]";
        return nullptr;
    }
  }
  return node;
}

std::optional<double> Number(const Json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}

std::string NotNumberWhy(const Json& value) {
  return value.is_null() ? "is null in the report (not measured)"
                         : "is not a number (" + std::string(value.type_name()) + ")";
}

bool IsKey(const PathStep& step, const char* key) {
  return step.kind == PathStep::Kind::kKey && step.key == key;
}

// The phase key a pass node's time counts in (docs/attribution.md §Phases).
std::string PhaseOf(const Json& node) {
  const auto phase = node.find("phase");
  return phase != node.end() && phase->is_string() ? phase->get<std::string>() : "other";
}

// Collects (phase set, ok) over the node (and its subtree when `subtree`).
bool CollectPhases(const Json& node, bool subtree, std::set<std::string>* phases) {
  const auto device = node.find("device");
  if (device == node.end() || !device->is_object()) return false;
  const auto self = device->find("self_ns");
  if (self == device->end() || !self->is_number()) return false;
  if (self->get<double>() > 0) phases->insert(PhaseOf(node));
  if (!subtree) return true;
  const auto children = node.find("children");
  if (children == node.end() || !children->is_array()) return true;
  for (const Json& child : *children) {
    if (!child.is_object() || !CollectPhases(child, true, phases)) return false;
  }
  return true;
}

// The per-step series of `path` (resolved to `value`) from the process's step rows.
void AddPerStep(const Root& root, const MetricPath& path, const Json* pass_node, double value,
                MetricValue* out) {
  const Json& process = *root.node;
  const StepRowColumns* rows = root.rows;
  if (rows == nullptr || rows->empty()) {
    const auto reason = process.find("steps_reason");
    out->per_step_note =
        "the report has no step rows" + (reason != process.end() && reason->is_string()
                                             ? " (" + reason->get<std::string>() + ")"
                                             : std::string());
    return;
  }
  std::vector<std::string> terms;  // the row fields summed into one value per step
  const std::vector<PathStep>& s = path.steps;
  if (s.size() == 2 && IsKey(s[0], "phases")) {
    for (const char* phase : kPhaseKeys) {
      if (s[1].key == std::string(phase) + "_ns") terms.push_back(s[1].key);
    }
  } else if (s.size() == 3 && IsKey(s[0], "steps") && IsKey(s[1], "summary") &&
             s[2].kind == PathStep::Kind::kKey) {
    terms.push_back(s[2].key);
  } else if (pass_node != nullptr) {
    // A pass's per-step time is a sum of step-row phase terms exactly when the pass holds all the
    // device time of the phases it has: then Σ phases.X over its phases equals its time.
    const bool total = s.back().key == "total_ns";
    std::set<std::string> phases;
    const auto process_phases = process.find("phases");
    if (CollectPhases(*pass_node, total, &phases) && !phases.empty() &&
        process_phases != process.end() && process_phases->is_object()) {
      double phase_sum = 0;
      bool complete = true;
      for (const std::string& phase : phases) {
        const auto term = process_phases->find(phase + "_ns");
        if (term == process_phases->end() || !term->is_number()) {
          complete = false;
          break;
        }
        phase_sum += term->get<double>();
      }
      if (complete && phase_sum == value) {
        for (const std::string& phase : phases) terms.push_back(phase + "_ns");
      }
    }
    if (terms.empty()) {
      out->per_step_note =
          "no per-step values: the step rows hold time by phase, and this pass shares its "
          "phases with other passes";
      return;
    }
  }
  if (terms.empty()) {
    out->per_step_note = "no per-step values for this metric";
    return;
  }
  std::vector<size_t> columns;
  for (const std::string& term : terms) {
    const std::optional<size_t> column = StepRowColumns::ColumnOf(term);
    if (!column) {
      out->per_step_note = "no per-step values for this metric";
      return;
    }
    columns.push_back(*column);
  }
  std::vector<double> series;
  series.reserve(rows->size());
  for (size_t row = 0; row < rows->size(); ++row) {
    double sum = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      const std::optional<double> term = rows->Number(row, columns[i]);
      if (!term) {
        out->per_step_note = "the step rows lack " + terms[i] + " (not measured)";
        return;
      }
      sum += *term;
    }
    series.push_back(sum);
  }
  out->per_step = std::move(series);
}

}  // namespace

StatusOr<MetricValue> ResolveMetric(const LoadedReport& report, const MetricPath& path) {
  const std::string where = FormatMetricPath(path);
  const auto missing = [&](const std::string& why) {
    return NotFoundError("metric " + where + " " + why);
  };
  // A number, or null (not measured: resolved, with the reason), or an error.
  const auto not_a_number = [&](const Json& value,
                                const std::string& where_in) -> StatusOr<MetricValue> {
    if (!value.is_null()) return missing(NotNumberWhy(value) + where_in);
    MetricValue unmeasured;
    unmeasured.measured = false;
    unmeasured.not_measured = "null" + where_in;
    unmeasured.per_step_note = "not measured";
    return unmeasured;
  };
  GPUATTR_ASSIGN_OR_RETURN(const Root root, ResolveRoot(report, path, where));
  MetricValue out;
  std::string why;
  if (root.summed_loss) {
    if (path.steps.size() != 2 || path.steps[1].kind != PathStep::Kind::kKey) {
      return missing("is ambiguous: with several processes only loss.FIELD sums over them");
    }
    double sum = 0;
    for (const Json& process : *root.node) {
      const Json* value = process.is_object() ? Walk(&process, path.steps, 0, 2, &why) : nullptr;
      if (value == nullptr) return missing(why);
      const std::optional<double> number = Number(*value);
      if (!number) return not_a_number(*value, " in a process");
      sum += *number;
    }
    out.value = sum;
    out.per_step_note = "no per-step values for this metric";
    return out;
  }
  // device.F on a process: the maximum of F over its devices.
  if (root.is_process && path.steps.size() == 2 && IsKey(path.steps[0], "device") &&
      path.steps[1].kind == PathStep::Kind::kKey) {
    const auto devices = root.node->find("devices");
    if (devices == root.node->end() || !devices->is_array() || devices->empty()) {
      return missing("is missing: the process has no devices (device time not measured?)");
    }
    std::optional<double> maximum;
    for (const Json& device : *devices) {
      const Json* value = device.is_object() ? Walk(&device, path.steps, 1, 2, &why) : nullptr;
      if (value == nullptr) return missing(why + " on a device");
      const std::optional<double> number = Number(*value);
      if (!number) return not_a_number(*value, " on a device");
      maximum = std::max(maximum.value_or(*number), *number);
    }
    out.value = *maximum;
    out.per_step_note = "no per-step values for this metric";
    return out;
  }
  Json row;  // a step row the path leads into
  const Json* value = Walk(root.node, path.steps, 0, path.steps.size(), &why, &root, &row);
  if (value == nullptr) {
    // The family or pass is not in this report although what holds it is: it is absent here.
    const std::optional<size_t> selector = EntitySelector(path);
    std::string holder_why;
    if (!selector ||
        Walk(root.node, path.steps, 0, *selector, &holder_why, &root, &row) == nullptr ||
        Walk(root.node, path.steps, 0, *selector + 1, &holder_why, &root, &row) != nullptr) {
      return missing(why);
    }
    MetricValue absent;
    const PathStep& named = path.steps[*selector];
    absent.absent = named.kind == PathStep::Kind::kName ? "family " + JsonText(named.key)
                                                        : "pass " + JsonText(named.names);
    absent.measured = NamesAmount(path, *selector);
    if (!absent.measured) absent.not_measured = "absent";
    absent.per_step_note = "the " + absent.absent + " is not in one of the reports";
    return absent;
  }
  const std::optional<double> number = Number(*value);
  if (!number) return not_a_number(*value, "");
  out.value = *number;
  if (!root.is_process) {
    out.per_step_note = "no per-step values for this metric";
    return out;
  }
  // A pass metric: the node the pass selector found (device.total_ns / device.self_ns only).
  const Json* pass_node = nullptr;
  const std::vector<PathStep>& s = path.steps;
  if (s.size() == 4 && IsKey(s[0], "passes") && s[1].kind == PathStep::Kind::kPassPath &&
      IsKey(s[2], "device") && (IsKey(s[3], "total_ns") || IsKey(s[3], "self_ns"))) {
    pass_node = Walk(root.node, s, 0, 2, &why);
  }
  AddPerStep(root, path, pass_node, out.value, &out);
  return out;
}

StatusOr<std::vector<MetricPath>> ExpandWildcard(const LoadedReport& report,
                                                 const MetricPath& path) {
  const auto star = std::find_if(path.steps.begin(), path.steps.end(), [](const PathStep& s) {
    return s.kind == PathStep::Kind::kWildcard;
  });
  if (star == path.steps.end()) return std::vector<MetricPath>{path};
  const size_t position = static_cast<size_t>(star - path.steps.begin());
  if (std::any_of(star + 1, path.steps.end(),
                  [](const PathStep& s) { return s.kind == PathStep::Kind::kWildcard; })) {
    return InvalidArgumentError("metric path " + FormatMetricPath(path) +
                                ": at most one [*] per path");
  }
  const std::string where = FormatMetricPath(path);
  GPUATTR_ASSIGN_OR_RETURN(const Root root, ResolveRoot(report, path, where));
  if (root.summed_loss) return NotFoundError("metric " + where + " cannot expand [*] over loss");
  std::string why;
  Json row;
  const Json* array = Walk(root.node, path.steps, 0, position, &why, &root, &row);
  if (array == nullptr) return NotFoundError("metric " + where + " " + why);
  if (!array->is_array()) {
    return NotFoundError("metric " + where + " cannot expand [*]: " +
                         (array->is_null() ? "null in the report (not measured)" : "not an array"));
  }
  const bool passes = position > 0 && IsKey(path.steps[position - 1], "passes");
  std::vector<MetricPath> expanded;
  const auto with = [&](PathStep step) {
    MetricPath concrete = path;
    concrete.steps[position] = std::move(step);
    expanded.push_back(std::move(concrete));
  };
  if (array == root.rows_in_document) {  // step rows: by index, since rows share their names
    for (size_t i = 0; i < root.rows->size(); ++i) {
      PathStep step;
      step.kind = PathStep::Kind::kIndex;
      step.index = i;
      with(step);
    }
    return expanded;
  }
  if (passes) {
    // Depth first, so that parents come before their children.
    std::vector<std::pair<const Json*, std::vector<std::string>>> stack;
    for (auto it = array->rbegin(); it != array->rend(); ++it) stack.push_back({&*it, {}});
    while (!stack.empty()) {
      auto [node, prefix] = stack.back();
      stack.pop_back();
      const auto name = node->is_object() ? node->find("name") : node->end();
      if (!node->is_object() || name == node->end() || !name->is_string()) continue;
      prefix.push_back(name->get<std::string>());
      PathStep step;
      step.kind = PathStep::Kind::kPassPath;
      step.names = prefix;
      with(step);
      const auto children = node->find("children");
      if (children == node->end() || !children->is_array()) continue;
      for (auto it = children->rbegin(); it != children->rend(); ++it) {
        stack.push_back({&*it, prefix});
      }
    }
    return expanded;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const Json& element = (*array)[i];
    PathStep step;
    step.kind = PathStep::Kind::kIndex;
    step.index = i;
    if (element.is_object()) {
      for (const char* field : {"family", "name", "reason"}) {
        const auto value = element.find(field);
        if (value != element.end() && value->is_string()) {
          step.kind = PathStep::Kind::kName;
          step.key = value->get<std::string>();
          break;
        }
      }
    }
    with(step);
  }
  return expanded;
}

}  // namespace gpuattr::collector
