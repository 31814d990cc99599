// RenderReportView (report_view.h). Layout: sections of aligned tables whose numeric columns are
// as wide as their widest cell; the first (name) column takes what is left of kTextWidth.
#include "views/report_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/module_fold.h"
#include "report/report_reader.h"
#include "views/text.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxIndentLevels = 10;  // deeper pass-tree levels show their depth instead

// ---- Numbers as this view prints them ----

std::string Fixed(const Json& value) {  // a ratio
  const std::optional<double> number = NumberOf(value);
  return number ? Formatted("%.3f", *number) : kNotMeasured;
}

std::string Us(const Json& ns) {
  const std::optional<double> value = NumberOf(ns);
  return value ? Formatted("%.1f", *value / 1e3) : kNotMeasured;
}

std::string Percent(const Json& fraction) {
  const std::optional<double> value = NumberOf(fraction);
  return value ? Formatted("%.2f%%", *value * 100.0) : kNotMeasured;
}

// ---- Sections ----

std::string Totals(const Json& totals) {
  if (!totals.is_object()) return "n/a";
  return "kernels " + CountText(Field(totals, "kernels")) + " (" +
         MsText(Field(totals, "kernel_ns")) + " ms), memcpys " +
         CountText(Field(totals, "memcpys")) + " (" + MsText(Field(totals, "memcpy_ns")) +
         " ms), memsets " + CountText(Field(totals, "memsets")) + " (" +
         MsText(Field(totals, "memset_ns")) + " ms), launches " +
         CountText(Field(totals, "launches"));
}

std::string CoverageLine(const Json& coverage) {
  std::string passed = kNotMeasured;
  const Json& value = Field(coverage, "passed");
  if (value.is_boolean()) passed = value.get<bool>() ? "passed" : "FAILED";
  return Percent(Field(coverage, "attributed_fraction")) +
         " of kernel time attributed (threshold " + Percent(Field(coverage, "threshold")) +
         "): " + passed;
}

// Counters of `object` that are numbers above zero, as "name N, name N"; empty when none.
std::string NonZeroCounters(const Json& object) {
  std::string out;
  if (!object.is_object()) return out;
  for (const auto& [name, value] : object.items()) {
    const std::optional<double> number = NumberOf(value);
    if (number && *number > 0) {
      out += (out.empty() ? "" : ", ") + SanitizedText(name) + " " +
             (value.is_number_integer() ? CountText(value) : Formatted("%g", *number));
    }
  }
  return out;
}

double SelfNs(const Json& pass) {
  return NumberOf(Field(Field(pass, "device"), "self_ns")).value_or(-1.0);
}

// The passes of `list`, self time descending; a pass without device time sorts last.
std::vector<const Json*> BySelfTime(const Json& list) {
  std::vector<const Json*> passes = ElementsOf(list);
  std::stable_sort(passes.begin(), passes.end(),
                   [](const Json* a, const Json* b) { return SelfNs(*a) > SelfNs(*b); });
  return passes;
}

// "d60 i40": the share of self time by attribution rule, the non-zero ones; empty when none.
std::string Split(const Json& attribution) {
  const double direct = NumberOf(Field(attribution, "direct_ns")).value_or(0);
  const double inherited = NumberOf(Field(attribution, "inherited_ns")).value_or(0);
  const double captured = NumberOf(Field(attribution, "captured_ns")).value_or(0);
  const double sum = direct + inherited + captured;
  if (!(sum > 0)) return "";
  std::string out;
  const std::pair<char, double> parts[] = {{'d', direct}, {'i', inherited}, {'c', captured}};
  for (const auto& [letter, ns] : parts) {
    if (ns > 0) {
      out += (out.empty() ? "" : " ") + std::string(1, letter) +
             Formatted("%.0f", std::round(ns / sum * 100.0));
    }
  }
  return out;
}

// A pass's name as the tree shows it (ReadableName, relative to the innermost module above it).
std::string TreeName(const Json& pass) {
  std::vector<const Json*> above = ElementsOf(Field(pass, "path"));
  if (!above.empty()) above.pop_back();  // the pass itself
  const auto parent = std::find_if(above.rbegin(), above.rend(), [](const Json* name) {
    return StringText(*name).starts_with(kModuleRangePrefix);
  });
  return ReadableName(StringText(Field(pass, "name")),
                      parent == above.rend() ? "" : StringText(**parent));
}

// One level of a pass tree as rows, `passes` in the order shown: each pass's cells (cells_of,
// given its indented name), then its children's rows (add_children, one level deeper); at most
// options.top, then a note of how many more (and more_detail of them); no rows past
// kReportViewMaxDepth.
template <typename Cells, typename Children, typename MoreDetail>
void AddTreeLevel(TextTable& table, const std::vector<const Json*>& passes, size_t depth,
                  const ReportViewOptions& options, const Cells& cells_of,
                  const Children& add_children, const MoreDetail& more_detail) {
  const std::string indent(2 * std::min(depth, kMaxIndentLevels), ' ');
  if (depth >= kReportViewMaxDepth) {
    if (!passes.empty()) table.AddNote(indent + "… deeper levels not shown");
    return;
  }
  const size_t shown = std::min(passes.size(), options.top);
  for (size_t i = 0; i < shown; ++i) {
    const Json& pass = *passes[i];
    std::string name = TreeName(pass);
    if (depth > kMaxIndentLevels) name = "[" + std::to_string(depth) + "] " + name;
    table.Add(cells_of(pass, indent + name));
    add_children(Field(pass, "children"), depth + 1);
  }
  if (passes.size() > shown) {
    table.AddNote(indent + "… " + std::to_string(passes.size() - shown) + " more" +
                  more_detail(shown));
  }
}

void AddPassRows(TextTable& table, const Json& list, size_t depth,
                 const ReportViewOptions& options) {
  const std::vector<const Json*> passes = BySelfTime(list);
  AddTreeLevel(
      table, passes, depth, options,
      [](const Json& pass, std::string name) -> std::vector<std::string> {
        const Json& device = Field(pass, "device");
        return {std::move(name),
                MsText(Field(device, "self_ns")),
                MsText(Field(device, "total_ns")),
                MsText(Field(device, "busy_ns")),
                CountText(Field(device, "kernels")),
                CountText(Field(pass, "instances")),
                MsText(Field(Field(pass, "host_ns"), "total")),
                StringText(Field(pass, "phase")),
                Split(Field(pass, "attribution"))};
      },
      [&](const Json& children, size_t deeper) { AddPassRows(table, children, deeper, options); },
      [&](size_t shown) {
        double self = 0;
        for (size_t i = shown; i < passes.size(); ++i) self += std::max(0.0, SelfNs(*passes[i]));
        return " (self " + Formatted("%.3f", self / 1e6) + " ms)";
      });
}

std::string PassTree(const Json& process, const ReportViewOptions& options) {
  const Json& passes = Field(process, "passes");
  if (!passes.is_array()) return "  passes: n/a\n";
  if (passes.empty()) return "  passes: none (no NVTX range was seen)\n";
  std::string out =
      "  passes by self device time (ms; split: share of self time direct/inherited/captured)\n";
  TextTable table("  ",
                  {{"pass", true},
                   {"self"},
                   {"total"},
                   {"busy"},
                   {"kernels"},
                   {"inst"},
                   {"host"},
                   {"phase", true},
                   {"split", true}},
                  TextTable::Names::kWhole);
  AddPassRows(table, passes, 0, options);
  return out + table.Render();
}

// ---- FLOPs (docs/attribution.md §FLOPs) ----

double FlopsTotal(const Json& pass) {
  return NumberOf(Field(Field(pass, "work"), "flops_total")).value_or(0.0);
}

void AddWorkRows(TextTable& table, const Json& list, size_t depth,
                 const ReportViewOptions& options) {
  std::vector<const Json*> passes;
  for (const Json* pass : ElementsOf(list)) {
    if (FlopsTotal(*pass) > 0) passes.push_back(pass);
  }
  std::stable_sort(passes.begin(), passes.end(),
                   [](const Json* a, const Json* b) { return FlopsTotal(*a) > FlopsTotal(*b); });
  AddTreeLevel(
      table, passes, depth, options,
      [](const Json& pass, std::string name) -> std::vector<std::string> {
        const Json& work = Field(pass, "work");
        const bool lower_bound = NumberOf(Field(work, "unknown_ops")).value_or(0) > 0;
        return {std::move(name),
                SiText(Field(work, "flops"), "FLOP") + (lower_bound ? "+" : ""),
                SiText(Field(work, "flops_total"), "FLOP"),
                SiText(Field(work, "bytes_estimate"), "B"),
                SiText(Field(work, "achieved_flops_per_s"), "FLOP/s"),
                Fixed(Field(work, "arithmetic_intensity_hypothesis"))};
      },
      [&](const Json& children, size_t deeper) { AddWorkRows(table, children, deeper, options); },
      [](size_t) { return std::string(); });
}

std::string WorkRefusal(const Json& refusal, const std::string& what) {
  return WrapText(
             StringText(Field(refusal, "cause")),
             "    " + what + ": refused (" + StringText(Field(refusal, "code")) + "): ", "      ") +
         WrapText(StringText(Field(refusal, "remedy")), "      remedy: ", "      ");
}

std::string Mfu(const Json& mfu) {
  const Json& refusal = Field(mfu, "refusal");
  const std::string instrumented =
      "instrumented step " + MsText(Field(mfu, "instrumented_step_ns")) + " ms";
  if (refusal.is_object()) {
    return WorkRefusal(refusal, "MFU") + "      (" + instrumented + ", never a denominator)\n";
  }
  const std::string clean_source = StringText(Field(mfu, "clean_step_source"));
  std::string clean = MsText(Field(mfu, "clean_step_ns")) + " ms " + clean_source;
  if (clean_source == "clean_run") {
    clean += ", " + CountText(Field(mfu, "clean_steps_timed")) + " steps";
  }
  return WrapText(Percent(Field(mfu, "value")) + " = step " +
                      SiText(Field(mfu, "step_flops"), "FLOP") + " / (uninstrumented step " +
                      clean + " x peak " + SiText(Field(mfu, "peak_flops_per_s"), "FLOP/s") + " " +
                      StringText(Field(mfu, "dtype")) + ", " +
                      StringText(Field(mfu, "peak_source")) + "); " + instrumented,
                  "    MFU ", "      ");
}

// FLOPs per step: the kept rows (top N) and their lower median.
std::string WorkSteps(const Json& steps, const StepRowColumns& rows,
                      const ReportViewOptions& options) {
  if (!steps.is_object() || rows.empty()) return "";
  TextTable table("  ", {{"step", true}, {"flops"}, {"bytes"}, {"unknown ops"}});
  auto cells = [](std::string first, const auto& member) {
    return std::vector<std::string>{std::move(first), SiText(member("flops"), "FLOP"),
                                    SiText(member("bytes_estimate"), "B"),
                                    CountText(member("unknown_ops"))};
  };
  const size_t shown = std::min(rows.size(), options.top);
  for (size_t i = 0; i < shown; ++i) {
    table.Add(cells(CountText(rows.Member(i, "index")),
                    [&](const char* key) { return rows.Member(i, key); }));
  }
  if (rows.size() > shown) table.AddNote("… " + std::to_string(rows.size() - shown) + " more");
  const Json& summary = Field(steps, "summary");
  table.Add(cells("median", [&](const char* key) { return Field(summary, key); }));
  return table.Render();
}

// The FLOP counter's section: empty when FLOPs were neither asked for nor counted.
std::string Work(const Json& process, const StepRowColumns& step_rows,
                 const ReportViewOptions& options) {
  const Json& work = Field(process, "work");
  if (!work.is_object()) return "";
  if (Field(work, "refusal").is_object()) {
    return "  FLOPs\n" + WorkRefusal(Field(work, "refusal"), "FLOPs");
  }
  const Json& ops = Field(work, "ops");
  auto calls = [&](const char* kind) {
    double total = 0;
    for (const Json* op : ElementsOf(Field(ops, kind))) {
      total += NumberOf(Field(*op, "calls")).value_or(0);
    }
    return std::to_string(ElementsOf(Field(ops, kind)).size()) + " " + kind + " (" +
           Formatted("%.0f", total) + " calls)";
  };
  std::string out = FitLine("  FLOPs: ", StringText(Field(work, "counter")));
  out += WrapText(
      SiText(Field(work, "flops"), "FLOP") + " counted, " +
          SiText(Field(work, "bytes_estimate"), "B") + " read-once/write-once, intensity " +
          Fixed(Field(work, "arithmetic_intensity_hypothesis")) + " FLOP/B (a hypothesis); ops " +
          calls("counted") + ", " + calls("free") + ", " + calls("unknown"),
      "    ", "      ");
  const std::vector<const Json*> unknown = ElementsOf(Field(ops, "unknown"));
  if (!unknown.empty()) {
    std::string names;
    for (size_t i = 0; i < std::min(unknown.size(), options.top); ++i) {
      names += (i ? ", " : "") + StringText(Field(*unknown[i], "op")) + " x" +
               CountText(Field(*unknown[i], "calls"));
    }
    out += WrapText(names, "    unknown (FLOPs marked + are lower bounds): ", "      ");
    out += WrapText(StringText(Field(ops, "unknown_remedy")), "      ", "      ");
  }
  const Json& achieved = Field(work, "achieved");
  if (Field(achieved, "refusal").is_object()) {
    out += WorkRefusal(Field(achieved, "refusal"), "achieved FLOP/s");
  }
  out += Mfu(Field(work, "mfu"));
  TextTable table("  ",
                  {{"pass (FLOPs: self, total; bytes self)", true},
                   {"flops"},
                   {"total"},
                   {"bytes"},
                   {"achieved"},
                   {"FLOP/B*"}},
                  TextTable::Names::kWhole);
  AddWorkRows(table, Field(process, "passes"), 0, options);
  return out + table.Render() +
         "  * arithmetic intensity: a hypothesis from the traffic estimate\n" +
         WorkSteps(Field(process, "steps"), step_rows, options);
}

std::string Families(const Json& families, const ReportViewOptions& options) {
  if (!families.is_array()) return "  kernel families: n/a\n";
  if (families.empty()) return "  kernel families: none\n";
  std::vector<const Json*> rows = ElementsOf(families);
  std::stable_sort(rows.begin(), rows.end(), [](const Json* a, const Json* b) {
    return NumberOf(Field(*a, "total_ns")).value_or(-1) >
           NumberOf(Field(*b, "total_ns")).value_or(-1);
  });
  const size_t shown = std::min(rows.size(), options.top);
  std::string out = "  kernel families by device time (ms; api, latency: launch medians)\n";
  TextTable table(
      "  ",
      {{"family", true}, {"kernels"}, {"total"}, {"share"}, {"mean"}, {"api µs"}, {"latency µs"}});
  for (size_t i = 0; i < shown; ++i) {
    const Json& family = *rows[i];
    const Json& launch = Field(family, "launch");
    table.Add({StringText(Field(family, "family")), CountText(Field(family, "kernels")),
               MsText(Field(family, "total_ns")), Percent(Field(family, "share")),
               MsText(Field(family, "mean_ns")), Us(Field(Field(launch, "api_ns"), "median")),
               Us(Field(Field(launch, "latency_ns"), "median"))});
  }
  if (rows.size() > shown) {
    double total = 0;
    for (size_t i = shown; i < rows.size(); ++i) {
      total += std::max(0.0, NumberOf(Field(*rows[i], "total_ns")).value_or(0));
    }
    table.AddNote("… " + std::to_string(rows.size() - shown) + " more (" +
                  Formatted("%.3f", total / 1e6) + " ms)");
  }
  return out + table.Render();
}

std::string Devices(const Json& devices, const ReportViewOptions& options) {
  if (!devices.is_array()) return "  device time: not measured\n";
  if (devices.empty()) return "  devices: none\n";
  std::string out;
  for (const Json* device_ptr : ElementsOf(devices)) {
    const Json& device = *device_ptr;
    out += ElideMiddle("  device " + CountText(Field(device, "id")) + " (" +
                           StringText(Field(device, "name")) + "): span " +
                           MsText(Field(device, "span_ns")) + " ms, busy " +
                           MsText(Field(device, "busy_ns")) + " ms, idle " +
                           MsText(Field(device, "idle_ns")) + " ms (" +
                           Percent(Field(device, "idle_fraction")) + ")",
                       kTextWidth) +
           "\n";
    const Json& categories = Field(device, "categories");
    if (categories.is_object()) {
      out += "    compute " + MsText(Field(categories, "compute_ns")) + " ms, communication " +
             MsText(Field(categories, "communication_ns")) + " ms (hidden " +
             MsText(Field(categories, "communication_hidden_ns")) + ", exposed " +
             MsText(Field(categories, "communication_exposed_ns")) + "), memory " +
             MsText(Field(categories, "memory_ns")) + " ms\n";
    }
    const std::vector<const Json*> copies = ElementsOf(Field(device, "copies"));
    if (!copies.empty()) {
      TextTable table("    ", {{"copy", true}, {"copies"}, {"MB"}, {"ms"}});
      for (const Json* copy : copies) {
        const std::optional<double> bytes = NumberOf(Field(*copy, "bytes"));
        table.Add(
            {StringText(Field(*copy, "direction")) + " " + StringText(Field(*copy, "src_kind")) +
                 " → " + StringText(Field(*copy, "dst_kind")),
             CountText(Field(*copy, "copies")),
             bytes ? Formatted("%.1f", *bytes / 1e6) : kNotMeasured, MsText(Field(*copy, "ns"))});
      }
      out += table.Render();
    }
    const std::vector<const Json*> streams = ElementsOf(Field(device, "streams"));
    if (!streams.empty()) {
      TextTable table("    ", {{"stream", true}, {"busy ms"}, {"idle ms"}, {"activities"}});
      const size_t shown = std::min(streams.size(), options.top);
      for (size_t i = 0; i < shown; ++i) {
        table.Add({CountText(Field(*streams[i], "id")), MsText(Field(*streams[i], "busy_ns")),
                   MsText(Field(*streams[i], "idle_ns")),
                   CountText(Field(*streams[i], "activities"))});
      }
      if (streams.size() > shown) {
        table.AddNote("… " + std::to_string(streams.size() - shown) + " more");
      }
      out += table.Render();
    }
    const Json& gaps = Field(device, "gaps");
    if (!gaps.is_object()) {
      out += "    gaps: n/a\n";
      continue;
    }
    out += "    gaps " + CountText(Field(gaps, "count")) + ": host_bound " +
           MsText(Field(gaps, "host_bound_ns")) + " ms, dependency " +
           MsText(Field(gaps, "dependency_ns")) + " ms, unclassified " +
           MsText(Field(gaps, "unclassified_ns")) + " ms; tail " + MsText(Field(gaps, "tail_ns")) +
           " ms\n";
    const std::vector<const Json*> largest = ElementsOf(Field(gaps, "largest"));
    if (largest.empty()) continue;
    const std::optional<double> first_start = NumberOf(Field(device, "first_start_ns"));
    TextTable table("    ",
                    {{"host range (largest gaps)", true}, {"ms"}, {"at ms"}, {"class", true}},
                    TextTable::Names::kWhole);
    const size_t shown = std::min(largest.size(), options.top);
    for (size_t i = 0; i < shown; ++i) {
      const Json& gap = *largest[i];
      const std::optional<double> start = NumberOf(Field(gap, "start_ns"));
      table.Add(
          {ReadablePathText(Field(gap, "host_range")), MsText(Field(gap, "ns")),
           start && first_start ? Formatted("%.3f", (*start - *first_start) / 1e6) : kNotMeasured,
           StringText(Field(gap, "class"))});
    }
    if (largest.size() > shown) {
      table.AddNote("… " + std::to_string(largest.size() - shown) + " more");
    }
    out += table.Render();
  }
  return out;
}

std::string Phases(const Json& phases) {
  if (!phases.is_object()) return "  phases: n/a\n";
  TextTable table("  ", {{"phases (ms)", true},
                         {"forward"},
                         {"backward"},
                         {"recompute"},
                         {"optimizer"},
                         {"loss"},
                         {"comm"},
                         {"other"},
                         {"r"}});
  table.Add({"", MsText(Field(phases, "forward_ns")), MsText(Field(phases, "backward_ns")),
             MsText(Field(phases, "recompute_ns")), MsText(Field(phases, "optimizer_ns")),
             MsText(Field(phases, "loss_ns")), MsText(Field(phases, "communication_ns")),
             MsText(Field(phases, "other_ns")), Fixed(Field(phases, "recompute_fraction"))});
  return table.Render();
}

// PyTorch modules (docs/attribution.md §Modules): shown when the trace had module ranges. One
// row per module, by its name (the live annotator's qualified name, or torch's `Class_k`).
std::string Modules(const Json& modules, const ReportViewOptions& options) {
  if (!modules.is_array() || modules.empty()) return "";
  const std::vector<const Json*> rows = ElementsOf(modules);  // most device time first
  const size_t shown = std::min(rows.size(), options.top);
  std::string out =
      "  modules (nn.Module) by device time of their own (ms; r = recompute / forward)\n";
  TextTable table("  ",
                  {{"module", true},
                   {"calls"},
                   {"forward"},
                   {"backward"},
                   {"recompute"},
                   {"loss"},
                   {"comm"},
                   {"other"},
                   {"r"}},
                  TextTable::Names::kWhole);
  for (size_t i = 0; i < shown; ++i) {
    const Json& row = *rows[i];
    table.Add({ReadableName(StringText(Field(row, "module")), ""), CountText(Field(row, "calls")),
               MsText(Field(row, "forward_ns")), MsText(Field(row, "backward_ns")),
               MsText(Field(row, "recompute_ns")), MsText(Field(row, "loss_ns")),
               MsText(Field(row, "communication_ns")), MsText(Field(row, "other_ns")),
               Fixed(Field(row, "recompute_fraction"))});
  }
  if (rows.size() > shown) table.AddNote("… " + std::to_string(rows.size() - shown) + " more");
  return out + table.Render();
}

// The step table's columns after its first, in order.
constexpr const char* kStepCellKeys[] = {
    "host_ns",          "forward_ns", "backward_ns",     "recompute_ns", "loss_ns", "optimizer_ns",
    "communication_ns", "other_ns",   "unattributed_ns", "busy_ns",      "gaps_ns"};

// `member(key)` gives the cell's value of each key of kStepCellKeys.
template <typename Member>
std::vector<std::string> StepCells(std::string first, const Member& member) {
  std::vector<std::string> cells = {std::move(first)};
  for (const char* key : kStepCellKeys) cells.push_back(MsText(member(key)));
  return cells;
}

std::string Steps(const Json& steps, const Json& reason, const StepRowColumns& rows,
                  const ReportViewOptions& options) {
  if (!steps.is_object()) {
    return FitLine("  steps: n/a (",
                   (reason.is_string() ? StringText(reason) : "no step range") + ")");
  }
  const Json& detected = Field(steps, "detected");
  std::string how;
  if (detected.is_boolean()) how = detected.get<bool>() ? " (auto-detected)" : " (--step)";
  std::string out =
      FitLine("  steps (ms): ", "range '" + StringText(Field(steps, "range")) + "'" + how + ", " +
                                    CountText(Field(steps, "instances")) + " instances, " +
                                    CountText(Field(steps, "skipped")) + " skipped, " +
                                    std::to_string(rows.size()) + " rows");
  TextTable table("  ", {{"step", true},
                         {"host"},
                         {"F"},
                         {"B"},
                         {"rF"},
                         {"loss"},
                         {"opt"},
                         {"comm"},
                         {"other"},
                         {"unattr"},
                         {"busy"},
                         {"gaps"}});
  const size_t shown = std::min(rows.size(), options.top);
  for (size_t i = 0; i < shown; ++i) {
    table.Add(StepCells(CountText(rows.Member(i, "index")),
                        [&](const char* key) { return rows.Member(i, key); }));
  }
  if (rows.size() > shown) table.AddNote("… " + std::to_string(rows.size() - shown) + " more");
  const Json& summary = Field(steps, "summary");
  table.Add(StepCells("median", [&](const char* key) { return Field(summary, key); }));
  return out + table.Render() + "  host: the step as instrumented, under gpuattr\n";
}

std::string Coverage(const Json& coverage) {
  if (!coverage.is_object()) return "  coverage: n/a\n";
  std::string out = "  coverage: " + CoverageLine(coverage) + "\n";
  const Json& by_phase = Field(coverage, "by_phase");
  if (by_phase.is_object()) {
    out += "    by phase:";
    bool first = true;
    for (const auto& [phase, fraction] : by_phase.items()) {
      out += (first ? " " : ", ") + SanitizedText(phase) + " " + Percent(fraction);
      first = false;
    }
    out += "\n";
  } else {
    out += "    by phase: n/a\n";
  }
  const Json& unattributed = Field(coverage, "unattributed");
  if (!unattributed.is_array()) {
    out += "    unattributed: n/a\n";
  } else if (unattributed.empty()) {
    out += "    unattributed: none\n";
  } else {
    TextTable table("    ", {{"unattributed reason", true}, {"ms"}, {"activities"}});
    for (const Json* reason : ElementsOf(unattributed)) {
      table.Add({StringText(Field(*reason, "reason")), MsText(Field(*reason, "ns")),
                 CountText(Field(*reason, "activities"))});
    }
    out += table.Render();
  }
  return out;
}

std::string Refusals(const Json& refusals) {
  std::string out;
  for (const Json* refusal : ElementsOf(refusals)) {
    out += WrapText(StringText(Field(*refusal, "cause")),
                    "  refused (" + StringText(Field(*refusal, "code")) + "): ", "    ");
    out += WrapText(StringText(Field(*refusal, "remedy")), "    remedy: ", "    ");
  }
  return out;
}

std::string Process(const Json& process, const StepRowColumns& step_rows,
                    const ReportViewOptions& options) {
  std::string out = FitLine("process " + CountText(Field(process, "pid")) + "  rank " +
                                CountText(Field(process, "rank")) + "  status " +
                                StringText(Field(process, "status")) + "  exit " +
                                CountText(Field(process, "exit_status")) + "  exe ",
                            StringText(Field(process, "exe")));
  out += StatusNote(process);
  out += Refusals(Field(process, "refusals"));
  out += WrapText(Totals(Field(process, "totals")), "  totals: ", "    ");
  out += "\n" + PassTree(process, options);
  out += "\n" + Families(Field(process, "families"), options);
  out += "\n" + Devices(Field(process, "devices"), options);
  out += "\n" + Phases(Field(process, "phases"));
  const std::string modules = Modules(Field(process, "modules"), options);
  if (!modules.empty()) out += "\n" + modules;
  out += Steps(Field(process, "steps"), Field(process, "steps_reason"), step_rows, options);
  const std::string work = Work(process, step_rows, options);
  if (!work.empty()) out += "\n" + work;
  out += "\n" + Coverage(Field(process, "coverage"));
  const Json& loss = Field(process, "loss");
  if (!loss.is_object()) {
    out += "  loss: n/a\n";
  } else {
    const std::string counters = NonZeroCounters(loss);
    out += WrapText(counters.empty() ? "none" : counters, "  loss: ", "    ");
  }
  return out;
}

std::string Header(const Json& report) {
  std::string out =
      ElideMiddle("gpuattr report (" + StringText(Field(report, "schema_version")) +
                      ", written by " + StringText(Field(Field(report, "tool"), "name")) + " " +
                      StringText(Field(Field(report, "tool"), "version")) + ")",
                  kTextWidth) +
      "\n";
  const Json& capture = Field(report, "capture");
  std::string command;
  for (const Json* arg : ElementsOf(Field(capture, "command"))) {
    command += (command.empty() ? "" : " ") + StringText(*arg);
  }
  // An import has no command; its source names the format and the files read.
  const Json& source = Field(capture, "source");
  if (command.empty() && source.is_object()) {
    command = StringText(Field(source, "format")) + ":";
    for (const Json* file : ElementsOf(Field(source, "files"))) command += " " + StringText(*file);
  }
  // A merged report whose inputs ran different commands names its inputs instead.
  const std::vector<const Json*> inputs = ElementsOf(Field(capture, "merged_from"));
  if (command.empty() && !inputs.empty()) {
    command = "merged from " + std::to_string(inputs.size()) + " reports:";
    for (const Json* input : inputs) {
      const Json& host = Field(*input, "host");
      command += " " + StringText(Field(*input, "file")) +
                 (host.is_string() ? " (" + StringText(host) + ")" : "");
    }
  }
  out += FitLine("capture " + StringText(Field(capture, "mode")) + ": ",
                 command.empty() ? std::string(kNotMeasured) : command);
  out += ElideMiddle("  host " + StringText(Field(capture, "host")) + ", started " +
                         StringText(Field(capture, "started_at")) + ", duration " +
                         MsText(Field(capture, "duration_ns")) + " ms, inherit " +
                         YesNoText(Field(capture, "inherit")),
                     kTextWidth) +
         "\n";
  const Json& summary = Field(report, "summary");
  const Json& statuses = Field(summary, "statuses");
  out += "processes " + CountText(Field(summary, "processes")) + ": complete " +
         CountText(Field(statuses, "complete")) + ", truncated " +
         CountText(Field(statuses, "truncated")) + ", refused " +
         CountText(Field(statuses, "refused")) + ", host only " +
         CountText(Field(statuses, "host_only")) + "\n";
  out += WrapText(Totals(Field(summary, "totals")), "  all: ", "    ");
  out += "  coverage: " + CoverageLine(Field(summary, "coverage")) + "\n";
  const std::vector<const Json*> ranks = ElementsOf(Field(summary, "ranks"));
  if (ranks.size() > 1) {
    // The rank table: per rank the median step, busy, idle and exposed communication; then the
    // straggler (docs/attribution.md §Ranks). The host leads when the rows name several (a
    // merged job).
    std::set<Json> hosts;
    for (const Json* rank : ranks) hosts.insert(Field(*rank, "host"));
    const bool by_host = hosts.size() > 1;
    std::vector<TextTable::Column> columns = {{"rank", true},      {"pid"},     {"status", true},
                                              {"step ms"},         {"busy ms"}, {"idle ms"},
                                              {"exposed comm ms"}, {"coverage"}};
    if (by_host) columns.insert(columns.begin(), {"host", true});
    TextTable table("  ", std::move(columns));
    for (const Json* rank : ranks) {
      std::vector<std::string> cells = {CountText(Field(*rank, "rank")),
                                        CountText(Field(*rank, "pid")),
                                        StringText(Field(*rank, "status")),
                                        MsText(Field(*rank, "step_ns")),
                                        MsText(Field(*rank, "busy_ns")),
                                        MsText(Field(*rank, "idle_ns")),
                                        MsText(Field(*rank, "communication_exposed_ns")),
                                        Percent(Field(*rank, "coverage"))};
      if (by_host) cells.insert(cells.begin(), StringText(Field(*rank, "host")));
      table.Add(std::move(cells));
    }
    out += table.Render();
    const Json& slowest = Field(summary, "slowest");
    if (slowest.is_object()) {
      const Json& fastest = Field(summary, "fastest");
      out += "  straggler: rank " + CountText(Field(slowest, "rank")) + " (median step " +
             MsText(Field(slowest, "step_ns")) + " ms) against rank " +
             CountText(Field(fastest, "rank")) + " (" + MsText(Field(fastest, "step_ns")) +
             " ms): spread " + Percent(Field(summary, "straggler_spread")) + "\n";
    }
  }
  const std::string diagnostics = NonZeroCounters(Field(report, "diagnostics"));
  if (!diagnostics.empty()) out += WrapText(diagnostics, "  collector diagnostics: ", "    ");
  return out;
}

bool Selected(const Json& process, const ReportViewOptions& options) {
  if (!options.pid) return true;
  const Json& pid = Field(process, "pid");
  return IsCount(pid) && pid.get<uint64_t>() == *options.pid;
}

}  // namespace

std::string RenderReportView(const LoadedReport& loaded, const ReportViewOptions& options) {
  ReportViewOptions effective = options;
  effective.top = std::max<size_t>(effective.top, 1);
  const Json& report = loaded.document();
  std::string out = Header(report);
  const Json& processes = Field(report, "processes");
  if (!processes.is_array()) return out + "\nprocesses: n/a\n";
  const std::string advice = AdviceText(Field(report, "advice"));
  if (processes.empty()) {
    return out +
           "\nno traced process (a process that never initialises CUDA nor calls NVTX is not "
           "reported)\n" +
           advice;
  }
  for (size_t i = 0; i < processes.size(); ++i) {
    if (Selected(processes[i], effective)) {
      out += "\n" + Process(processes[i], loaded.StepRows(i), effective);
    }
  }
  return out + advice;
}

}  // namespace gpuattr::collector
