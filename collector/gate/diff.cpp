// DiffReports and RenderDiff (diff.h).
#include "gate/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "report/report_reader.h"
#include "views/text.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

std::optional<double> NumberAt(const Json& object, const char* key) {
  return NumberOf(Field(object, key));
}

Json Delta(std::optional<double> before, std::optional<double> after) {
  Json delta = {{"baseline", before ? Json(*before) : Json(nullptr)},
                {"current", after ? Json(*after) : Json(nullptr)},
                {"delta", nullptr},
                {"delta_pct", nullptr}};
  if (before && after) {
    delta["delta"] = *after - *before;
    if (*before != 0) delta["delta_pct"] = (*after - *before) / std::fabs(*before) * 100.0;
  }
  return delta;
}

// An amount of a family or pass entry on one side: its own, or 0 when the side lacks the entry
// but has the list or tree it would be in (it ran no such kernels, opened no such range: a
// change, judged as such); not known when the side has no list at all.
std::optional<double> AmountOf(const Json* entry, const char* key, bool side_has_list) {
  if (entry == nullptr) return side_has_list ? std::optional<double>(0) : std::nullopt;
  return NumberAt(*entry, key);
}

// The size of a change for sorting: the delta, or the one value there is (not measured on one
// side).
double Magnitude(const Json& delta) {
  for (const char* key : {"delta", "current", "baseline"}) {
    if (delta[key].is_number()) return std::fabs(delta[key].get<double>());
  }
  return 0;
}

void SortByChange(Json* rows, const char* field) {
  std::stable_sort(rows->begin(), rows->end(), [field](const Json& a, const Json& b) {
    return Magnitude(a[field]) > Magnitude(b[field]);
  });
}

using PassMap = std::map<std::vector<std::string>, const Json*>;

void FlattenPasses(const Json& nodes, std::vector<std::string> prefix, PassMap* out) {
  if (!nodes.is_array()) return;
  for (const Json& node : nodes) {
    const Json& name = Field(node, "name");
    if (!name.is_string()) continue;
    std::vector<std::string> path = prefix;
    path.push_back(name.get<std::string>());
    (*out)[path] = &node;
    FlattenPasses(Field(node, "children"), path, out);
  }
}

Json ProcessIdentity(const Json& process) {
  return {{"pid", Field(process, "pid")}, {"rank", Field(process, "rank")}};
}

Json DiffProcesses(const Json& before, const Json& after, const char* matched_by) {
  PassMap before_passes, after_passes;
  FlattenPasses(Field(before, "passes"), {}, &before_passes);
  FlattenPasses(Field(after, "passes"), {}, &after_passes);
  Json passes = Json::array();
  Json added = Json::array();
  Json vanished = Json::array();
  std::map<std::vector<std::string>, std::pair<const Json*, const Json*>> all;
  for (const auto& [path, node] : before_passes) all[path].first = node;
  for (const auto& [path, node] : after_passes) all[path].second = node;
  const bool before_tree = Field(before, "passes").is_array();
  const bool after_tree = Field(after, "passes").is_array();
  for (const auto& [path, nodes] : all) {
    const Json* b = nodes.first ? &Field(*nodes.first, "device") : nullptr;
    const Json* a = nodes.second ? &Field(*nodes.second, "device") : nullptr;
    const auto delta = [&](const char* key) {
      return Delta(AmountOf(b, key, before_tree), AmountOf(a, key, after_tree));
    };
    passes.push_back(
        {{"path", path}, {"total_ns", delta("total_ns")}, {"self_ns", delta("self_ns")}});
    if (nodes.first == nullptr) added.push_back(path);
    if (nodes.second == nullptr) vanished.push_back(path);
  }
  SortByChange(&passes, "total_ns");
  Json devices = Json::array();
  // Devices by id; when each side has exactly one device, those two, whatever their ids (the
  // same model on rank 3 of one machine and rank 1 of another).
  std::vector<std::pair<const Json*, const Json*>> pairs;
  const Json& before_devices = Field(before, "devices");
  const Json& after_devices = Field(after, "devices");
  const bool one_each = before_devices.is_array() && after_devices.is_array() &&
                        before_devices.size() == 1 && after_devices.size() == 1;
  const char* devices_matched_by = one_each ? "order" : "id";
  if (one_each) {
    pairs.emplace_back(&before_devices[0], &after_devices[0]);
  } else {
    std::map<double, std::pair<const Json*, const Json*>> by_id;
    for (int side = 0; side < 2; ++side) {
      const Json& list = side == 0 ? before_devices : after_devices;
      if (!list.is_array()) continue;
      for (const Json& device : list) {
        const std::optional<double> id = NumberAt(device, "id");
        if (!id) continue;
        (side == 0 ? by_id[*id].first : by_id[*id].second) = &device;
      }
    }
    for (const auto& [id, pair] : by_id) pairs.push_back(pair);
  }
  for (const auto& [before_device, after_device] : pairs) {
    const Json& b = before_device ? *before_device : Field(Json(), "");
    const Json& a = after_device ? *after_device : Field(Json(), "");
    devices.push_back(
        {{"baseline_id", Field(b, "id")},
         {"current_id", Field(a, "id")},
         {"busy_ns", Delta(NumberAt(b, "busy_ns"), NumberAt(a, "busy_ns"))},
         {"idle_ns", Delta(NumberAt(b, "idle_ns"), NumberAt(a, "idle_ns"))},
         {"idle_fraction", Delta(NumberAt(b, "idle_fraction"), NumberAt(a, "idle_fraction"))},
         {"host_bound_gaps_ns", Delta(NumberAt(Field(b, "gaps"), "host_bound_ns"),
                                      NumberAt(Field(a, "gaps"), "host_bound_ns"))},
         {"dependency_gaps_ns", Delta(NumberAt(Field(b, "gaps"), "dependency_ns"),
                                      NumberAt(Field(a, "gaps"), "dependency_ns"))},
         {"tail_ns",
          Delta(NumberAt(Field(b, "gaps"), "tail_ns"), NumberAt(Field(a, "gaps"), "tail_ns"))}});
  }
  const Json& before_steps = Field(Field(before, "steps"), "summary");
  const Json& after_steps = Field(Field(after, "steps"), "summary");
  Json steps = Json::object();
  for (const char* term :
       {"host_ns", "busy_ns", "gaps_ns", "forward_ns", "backward_ns", "recompute_ns",
        "optimizer_ns", "loss_ns", "communication_ns", "other_ns"}) {
    steps[term] = Delta(NumberAt(before_steps, term), NumberAt(after_steps, term));
  }
  return {{"baseline", ProcessIdentity(before)},
          {"current", ProcessIdentity(after)},
          {"matched_by", matched_by},
          {"passes", passes},
          {"new_passes", added},
          {"vanished_passes", vanished},
          {"devices", devices},
          {"devices_matched_by", devices_matched_by},
          {"step_medians", steps}};
}

std::string Ms(const Json& value) {
  const std::optional<double> ns = NumberOf(value);
  return ns ? Formatted("%.3f ms", *ns / 1e6) : kNotMeasured;
}

std::string SignedMs(const Json& value) {
  const std::optional<double> ns = NumberOf(value);
  return ns ? Formatted("%+.3f ms", *ns / 1e6) : kNotMeasured;
}

std::string Pct(const Json& value) {
  const std::optional<double> percent = NumberOf(value);
  return percent ? Formatted("%+.2f %%", *percent) : kNotMeasured;
}

std::string Fraction(const Json& value) {
  const std::optional<double> fraction = NumberOf(value);
  return fraction ? Formatted("%.4f", *fraction) : kNotMeasured;
}

// Rows of NAME, baseline, current, delta, relative (the first row: the headers), as a table.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<TextTable::Column> columns;
  for (size_t c = 0; c < rows[0].size(); ++c) columns.push_back({rows[0][c], c == 0});
  TextTable table("    ", std::move(columns));
  for (size_t r = 1; r < rows.size(); ++r) table.Add(rows[r]);
  return table.Render();
}

std::string ListLine(const char* title, const Json& items, bool paths) {
  if (!items.is_array() || items.empty()) return "";
  std::string out = std::string("  ") + title + ": ";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : ", ") + (paths ? PathText(items[i]) : StringText(items[i]));
  }
  return out + "\n";
}

}  // namespace

nlohmann::json DiffReports(const nlohmann::json& baseline, const nlohmann::json& current) {
  const Json& before_processes = Field(baseline, "processes");
  const Json& after_processes = Field(current, "processes");
  Json processes = Json::array();
  Json unmatched_before = Json::array();
  Json unmatched_after = Json::array();
  const size_t nb = before_processes.is_array() ? before_processes.size() : 0;
  const size_t na = after_processes.is_array() ? after_processes.size() : 0;
  if (nb == 1 && na == 1) {
    processes.push_back(DiffProcesses(before_processes[0], after_processes[0], "only process"));
  } else {
    // By rank, then the rest in their order in each report.
    std::vector<bool> used(na, false);
    std::vector<size_t> left_before;
    for (size_t i = 0; i < nb; ++i) {
      const Json& rank = Field(before_processes[i], "rank");
      bool matched = false;
      for (size_t j = 0; j < na && rank.is_number_unsigned(); ++j) {
        if (!used[j] && Field(after_processes[j], "rank") == rank) {
          used[j] = true;
          matched = true;
          processes.push_back(DiffProcesses(before_processes[i], after_processes[j], "rank"));
          break;
        }
      }
      if (!matched) left_before.push_back(i);
    }
    size_t next_after = 0;
    for (const size_t i : left_before) {
      while (next_after < na && used[next_after]) ++next_after;
      if (next_after == na) {
        unmatched_before.push_back(ProcessIdentity(before_processes[i]));
        continue;
      }
      used[next_after] = true;
      processes.push_back(DiffProcesses(before_processes[i], after_processes[next_after], "order"));
    }
    for (size_t j = 0; j < na; ++j) {
      if (!used[j]) unmatched_after.push_back(ProcessIdentity(after_processes[j]));
    }
  }
  std::map<std::string, std::pair<const Json*, const Json*>> families;
  for (int side = 0; side < 2; ++side) {
    const Json& list = Field(Field(side == 0 ? baseline : current, "summary"), "families");
    if (!list.is_array()) continue;
    for (const Json& family : list) {
      const Json& name = Field(family, "family");
      if (!name.is_string()) continue;
      auto& slot = families[name.get<std::string>()];
      (side == 0 ? slot.first : slot.second) = &family;
    }
  }
  Json family_rows = Json::array();
  Json added = Json::array();
  Json vanished = Json::array();
  const bool before_listed = Field(Field(baseline, "summary"), "families").is_array();
  const bool after_listed = Field(Field(current, "summary"), "families").is_array();
  for (const auto& [name, pair] : families) {
    const auto delta = [&, &pair = pair](const char* key) {
      return Delta(AmountOf(pair.first, key, before_listed),
                   AmountOf(pair.second, key, after_listed));
    };
    family_rows.push_back(
        {{"family", name}, {"total_ns", delta("total_ns")}, {"kernels", delta("kernels")}});
    if (pair.first == nullptr) added.push_back(name);
    if (pair.second == nullptr) vanished.push_back(name);
  }
  SortByChange(&family_rows, "total_ns");
  const Json& before_coverage = Field(Field(baseline, "summary"), "coverage");
  const Json& after_coverage = Field(Field(current, "summary"), "coverage");
  return {{"schema_version", kDiffSchemaVersion},
          {"processes", processes},
          {"unmatched_processes", {{"baseline", unmatched_before}, {"current", unmatched_after}}},
          {"families", family_rows},
          {"new_families", added},
          {"vanished_families", vanished},
          {"coverage", Delta(NumberAt(before_coverage, "attributed_fraction"),
                             NumberAt(after_coverage, "attributed_fraction"))}};
}

std::string RenderDiff(const nlohmann::json& diff, size_t top) {
  std::string out = "gpuattr diff: baseline -> current (device time; sorted by absolute change)\n";
  for (const Json& process : diff["processes"]) {
    const auto id = [](const Json& who) {
      std::string text = "pid " + (who["pid"].is_number() ? who["pid"].dump() : "?");
      if (who["rank"].is_number()) text += " rank " + who["rank"].dump();
      return text;
    };
    out += "\nProcess " + id(process["baseline"]) + " -> " + id(process["current"]) +
           (process["matched_by"] == "order" ? " (paired by order: no rank pairs them)" : "") +
           "\n";
    std::vector<std::vector<std::string>> rows = {
        {"PASS", "BASELINE", "CURRENT", "DELTA", "REL", "SELF DELTA"}};
    size_t shown = 0;
    for (const Json& pass : process["passes"]) {
      if (shown++ == top) break;
      const Json& total = pass["total_ns"];
      rows.push_back({PathText(pass["path"]), Ms(total["baseline"]), Ms(total["current"]),
                      SignedMs(total["delta"]), Pct(total["delta_pct"]),
                      SignedMs(pass["self_ns"]["delta"])});
    }
    out += "  Passes (device total)\n" + Table(rows);
    out += ListLine("New passes", process["new_passes"], true);
    out += ListLine("Vanished passes", process["vanished_passes"], true);
    std::vector<std::vector<std::string>> device_rows = {{"DEVICE", "BUSY", "DELTA", "IDLE",
                                                          "DELTA", "IDLE FRACTION",
                                                          "HOST-BOUND GAPS", "DEPENDENCY GAPS"}};
    for (const Json& device : process["devices"]) {
      const std::string device_ids =
          device["baseline_id"] == device["current_id"]
              ? device["current_id"].dump()
              : device["baseline_id"].dump() + " -> " + device["current_id"].dump();
      device_rows.push_back({device_ids, Ms(device["busy_ns"]["current"]),
                             SignedMs(device["busy_ns"]["delta"]), Ms(device["idle_ns"]["current"]),
                             SignedMs(device["idle_ns"]["delta"]),
                             Fraction(device["idle_fraction"]["baseline"]) + " -> " +
                                 Fraction(device["idle_fraction"]["current"]),
                             SignedMs(device["host_bound_gaps_ns"]["delta"]),
                             SignedMs(device["dependency_gaps_ns"]["delta"])});
    }
    if (device_rows.size() > 1) {
      const bool by_order =
          process["devices_matched_by"] == "order" &&
          process["devices"][0]["baseline_id"] != process["devices"][0]["current_id"];
      out += std::string("  Devices (current, change") +
             (by_order ? "; paired by order: each process has one device" : "") + ")\n" +
             Table(device_rows);
    }
    std::vector<std::vector<std::string>> step_rows = {
        {"STEP MEDIAN", "BASELINE", "CURRENT", "DELTA", "REL"}};
    for (const auto& [term, delta] : process["step_medians"].items()) {
      if (delta["baseline"].is_null() && delta["current"].is_null()) continue;
      step_rows.push_back({term, Ms(delta["baseline"]), Ms(delta["current"]),
                           SignedMs(delta["delta"]), Pct(delta["delta_pct"])});
    }
    if (step_rows.size() > 1) out += "  Steps\n" + Table(step_rows);
  }
  for (const char* side : {"baseline", "current"}) {
    for (const Json& who : diff["unmatched_processes"][side]) {
      out += std::string("\nUnmatched ") + side + " process pid " + who["pid"].dump() + " rank " +
             who["rank"].dump() + "\n";
    }
  }
  std::vector<std::vector<std::string>> rows = {{"FAMILY", "BASELINE", "CURRENT", "DELTA", "REL"}};
  size_t shown = 0;
  for (const Json& family : diff["families"]) {
    if (shown++ == top) break;
    const Json& total = family["total_ns"];
    rows.push_back({StringText(family["family"]), Ms(total["baseline"]), Ms(total["current"]),
                    SignedMs(total["delta"]), Pct(total["delta_pct"])});
  }
  out += "\nKernel families (total)\n" + Table(rows);
  out += ListLine("New families", diff["new_families"], false);
  out += ListLine("Vanished families", diff["vanished_families"], false);
  const Json& coverage = diff["coverage"];
  out += "\nCoverage (attributed fraction): " + Fraction(coverage["baseline"]) + " -> " +
         Fraction(coverage["current"]) + "\n";
  return out;
}

}  // namespace gpuattr::collector
