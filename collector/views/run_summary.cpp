// RenderSummary (run_summary.h).
#include "views/run_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "report/report_reader.h"
#include "views/text.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

// Any scalar as text: strings sanitised, integers as written, other numbers with three
// decimals, booleans yes/no; kNotMeasured for the rest.
std::string Text(const Json& value) {
  if (value.is_string()) return StringText(value);
  if (value.is_number_integer()) return CountText(value);
  if (value.is_number_float()) return Formatted("%.3f", value.get<double>());
  return YesNoText(value);
}

std::string Percent(const Json& value) {
  const std::optional<double> fraction = NumberOf(value);
  return fraction ? Formatted("%.1f%%", *fraction * 100.0) : kNotMeasured;
}

std::string Row(const char* format, const std::string& a, const std::string& b,
                const std::string& c, const std::string& d) {
  char out[512];
  std::snprintf(out, sizeof(out), format, a.c_str(), b.c_str(), c.c_str(), d.c_str());
  return out;
}

// A pass path in the summary's 48-column field, padded by display width (printf's %-48s counts
// bytes, and "…" is three).
std::string PathLabel(const Json& path) {
  constexpr size_t kColumns = 48;
  const std::string label = ElideMiddle(PathText(path), kColumns);
  return label + std::string(kColumns - DisplayWidth(label), ' ');
}

// Every node of the pass tree, flattened, to rank the top passes by total device time.
void Flatten(const Json& passes, std::vector<const Json*>& out) {
  if (!passes.is_array()) return;
  for (const Json& pass : passes) {
    out.push_back(&pass);
    Flatten(Field(pass, "children"), out);
  }
}

double TotalNs(const Json& pass) {
  const Json& total = Field(Field(pass, "device"), "total_ns");
  if (total.is_number()) return total.get<double>();
  const Json& host = Field(Field(pass, "host_ns"), "total");
  return host.is_number() ? host.get<double>() : 0.0;
}

// The FLOP counter in one line (docs/attribution.md §FLOPs): what it counted and MFU, or the
// refusal's code where a figure is null.
std::string WorkLine(const Json& work) {
  const Json& refusal = Field(work, "refusal");
  if (refusal.is_object()) return "  FLOPs: refused (" + Text(Field(refusal, "code")) + ")\n";
  const Json& unknown = Field(Field(work, "ops"), "unknown");
  std::string line = "  FLOPs " + SiText(Field(work, "flops"), "FLOP");
  if (unknown.is_array() && !unknown.empty()) {
    line += " (a lower bound: " + std::to_string(unknown.size()) + " ops without a rule)";
  }
  const Json& mfu = Field(work, "mfu");
  const Json& mfu_refusal = Field(mfu, "refusal");
  line += mfu_refusal.is_object() ? ", MFU refused (" + Text(Field(mfu_refusal, "code")) + ")"
                                  : ", MFU " + Percent(Field(mfu, "value"));
  const Json& achieved = Field(Field(work, "achieved"), "refusal");
  if (achieved.is_object()) {
    line += ", achieved FLOP/s refused (" + Text(Field(achieved, "code")) + ")";
  }
  return line + "\n";
}

}  // namespace

std::string RenderRankTable(const Json& report) {
  const Json& summary = Field(report, "summary");
  const Json& ranks = Field(summary, "ranks");
  if (!ranks.is_array() || ranks.size() < 2) return "";
  std::set<Json> hosts;
  for (const Json& row : ranks) hosts.insert(Field(row, "host"));
  const bool by_host = hosts.size() > 1;
  constexpr size_t kHostColumns = 16;
  auto host_cell = [&](const std::string& text) {
    if (!by_host) return std::string();
    const std::string cell = ElideMiddle(text, kHostColumns);
    return "  " + cell + std::string(kHostColumns - DisplayWidth(cell), ' ');
  };
  std::string out = "\nranks\n";
  char line[256];
  std::snprintf(line, sizeof(line), "%s  %-5s %-5s %8s %8s %-10s %12s %12s %12s %8s\n",
                host_cell("host").c_str(), "rank", "local", "pid", "ppid", "status", "step ms",
                "busy ms", "idle ms", "coverage");
  out += line;
  for (const Json& row : ranks) {
    std::snprintf(line, sizeof(line), "%s  %-5s %-5s %8s %8s %-10s %12s %12s %12s %8s\n",
                  host_cell(Text(Field(row, "host"))).c_str(), Text(Field(row, "rank")).c_str(),
                  Text(Field(row, "local_rank")).c_str(), Text(Field(row, "pid")).c_str(),
                  Text(Field(row, "ppid")).c_str(), Text(Field(row, "status")).c_str(),
                  MsText(Field(row, "step_ns")).c_str(), MsText(Field(row, "busy_ns")).c_str(),
                  MsText(Field(row, "idle_ns")).c_str(), Percent(Field(row, "coverage")).c_str());
    out += line;
  }
  auto who = [](const Json& entry) {
    return "rank " + Text(Field(entry, "rank")) + " (pid " + Text(Field(entry, "pid")) + ") " +
           MsText(Field(entry, "step_ns")) + " ms";
  };
  const Json& slowest = Field(summary, "slowest");
  const Json& fastest = Field(summary, "fastest");
  if (slowest.is_object() && fastest.is_object()) {
    out += "  step time: slowest " + who(slowest) + ", fastest " + who(fastest) + ", spread " +
           Percent(Field(summary, "straggler_spread")) + "\n";
  } else {
    out += "  step time: fewer than two processes with steps\n";
  }
  const Json& launchers = Field(report, "launchers");
  if (launchers.is_array()) {
    for (const Json& launcher : launchers) {
      std::string children;
      const Json& pids = Field(launcher, "children");
      if (pids.is_array()) {
        for (const Json& pid : pids) children += (children.empty() ? "" : ", ") + Text(pid);
      }
      out += "  launcher pid " + Text(Field(launcher, "pid")) + " (exit " +
             Text(Field(launcher, "exit_status")) + ", not traced): children " + children + "\n";
    }
  }
  return out;
}

std::string RenderSummary(const nlohmann::json& report) {
  constexpr size_t kTop = 5;
  std::string out = "gpuattr summary (" + Text(Field(report, "schema_version")) + ")\n";
  const Json& processes = Field(report, "processes");
  const std::string advice = AdviceText(Field(report, "advice"));
  if (!processes.is_array() || processes.empty()) {
    return out + "  no traced process reported\n" + advice;
  }
  for (const Json& process : processes) {
    out += "\nprocess pid " + Text(Field(process, "pid")) + "  rank " +
           Text(Field(process, "rank")) + "  status " + Text(Field(process, "status")) + "  exit " +
           Text(Field(process, "exit_status")) + "\n";
    out += StatusNote(process);
    const Json& refusals = Field(process, "refusals");
    if (refusals.is_array()) {
      for (const Json& refusal : refusals)
        out += "  refused: " + Text(Field(refusal, "code")) + "\n";
    }
    const Json& devices = Field(process, "devices");
    if (devices.is_array()) {
      out += Row("  %-8s %14s %14s %8s\n", "device", "span ms", "busy ms", "idle");
      for (const Json& device : devices) {
        out += Row("  %-8s %14s %14s %8s\n", Text(Field(device, "id")),
                   MsText(Field(device, "span_ns")), MsText(Field(device, "busy_ns")),
                   Percent(Field(device, "idle_fraction")));
      }
    } else {
      out += "  device time: not measured\n";
    }
    std::vector<const Json*> passes;
    Flatten(Field(process, "passes"), passes);
    std::stable_sort(passes.begin(), passes.end(),
                     [](const Json* a, const Json* b) { return TotalNs(*a) > TotalNs(*b); });
    if (!passes.empty()) {
      out += Row("  %-48s %14s %14s %8s\n", "pass", "device ms", "host ms", "n");
      for (size_t i = 0; i < passes.size() && i < kTop; ++i) {
        const Json& pass = *passes[i];
        out += Row("  %-48s %14s %14s %8s\n", PathLabel(Field(pass, "path")),
                   MsText(Field(Field(pass, "device"), "total_ns")),
                   MsText(Field(Field(pass, "host_ns"), "total")), Text(Field(pass, "instances")));
      }
    }
    const Json& families = Field(process, "families");
    if (families.is_array() && !families.empty()) {
      out += Row("  %-48s %14s %14s %8s\n", "kernel family", "total ms", "share", "kernels");
      for (size_t i = 0; i < families.size() && i < kTop; ++i) {
        std::string name = Text(Field(families[i], "family"));
        if (name.size() > 48) name = name.substr(0, 45) + "...";
        out += Row("  %-48s %14s %14s %8s\n", name, MsText(Field(families[i], "total_ns")),
                   Percent(Field(families[i], "share")), Text(Field(families[i], "kernels")));
      }
    }
    const Json& phases = Field(process, "phases");
    if (Field(phases, "forward_ns").is_number()) {
      out += "  phases ms: forward " + MsText(Field(phases, "forward_ns")) + ", backward " +
             MsText(Field(phases, "backward_ns")) + ", recompute " +
             MsText(Field(phases, "recompute_ns")) + ", optimizer " +
             MsText(Field(phases, "optimizer_ns")) + ", loss " + MsText(Field(phases, "loss_ns")) +
             ", communication " + MsText(Field(phases, "communication_ns")) + ", other " +
             MsText(Field(phases, "other_ns")) + "\n";
    }
    const Json& steps = Field(process, "steps");
    if (steps.is_object()) {
      const Json& median = Field(steps, "summary");
      out += "  steps '" + Text(Field(steps, "range")) + "': " + Text(Field(steps, "instances")) +
             " (skipped " + Text(Field(steps, "skipped")) + "), median ms: instrumented step " +
             MsText(Field(median, "host_ns")) + ", busy " + MsText(Field(median, "busy_ns")) +
             ", gaps " + MsText(Field(median, "gaps_ns")) + "\n";
    }
    const Json& work = Field(process, "work");
    if (work.is_object()) out += WorkLine(work);
    const Json& coverage = Field(process, "coverage");
    out += "  coverage " + Percent(Field(coverage, "attributed_fraction")) + " (threshold " +
           Percent(Field(coverage, "threshold")) + ", passed " + Text(Field(coverage, "passed")) +
           ")\n";
    const Json& loss = Field(process, "loss");
    out += "  loss: dropped " + Text(Field(loss, "dropped_records")) + ", unmatched launches " +
           Text(Field(loss, "unmatched_launches")) + ", orphan activities " +
           Text(Field(loss, "orphan_activities")) + ", lost messages " +
           Text(Field(loss, "lost_messages")) + "\n";
  }
  return out + RenderRankTable(report) + advice;
}

}  // namespace gpuattr::collector
