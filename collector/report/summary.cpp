#include "report/summary.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "report/report_json.h"
#include "report/report_reader.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

// The straggler terms of the rank table (docs/attribution.md §Ranks), from the summary.ranks
// rows with a step time: the slowest and the fastest row by step_ns (ties: the earlier row) and
// straggler_spread = (slowest - fastest) / fastest. All null with fewer than two such rows;
// the spread is also null when the fastest step_ns is 0.
void AddStragglers(const Json& ranks, Json* summary) {
  // A merge's rows come from its input files: read them as untrusted (a member may be missing).
  const Json* slowest = nullptr;
  const Json* fastest = nullptr;
  size_t with_steps = 0;
  for (const Json& row : ranks) {
    if (!IsCount(Field(row, "step_ns"))) continue;
    ++with_steps;
    const uint64_t step_ns = Field(row, "step_ns").get<uint64_t>();
    if (slowest == nullptr || step_ns > Field(*slowest, "step_ns").get<uint64_t>()) slowest = &row;
    if (fastest == nullptr || step_ns < Field(*fastest, "step_ns").get<uint64_t>()) fastest = &row;
  }
  auto entry = [](const Json& row) {
    return Json{{"rank", Field(row, "rank")},
                {"pid", Field(row, "pid")},
                {"step_ns", Field(row, "step_ns")}};
  };
  if (with_steps < 2) {
    (*summary)["slowest"] = nullptr;
    (*summary)["fastest"] = nullptr;
    (*summary)["straggler_spread"] = nullptr;
    return;
  }
  const uint64_t slow_ns = Field(*slowest, "step_ns").get<uint64_t>();
  const uint64_t fast_ns = Field(*fastest, "step_ns").get<uint64_t>();
  (*summary)["slowest"] = entry(*slowest);
  (*summary)["fastest"] = entry(*fastest);
  (*summary)["straggler_spread"] =
      fast_ns == 0 ? Json(nullptr)
                   : Json(static_cast<double>(slow_ns - fast_ns) / static_cast<double>(fast_ns));
}

}  // namespace

void SummaryBuilder::Add(const ProcessAnalysis& analysis, Json rank_row) {
  ++processes_;
  ++statuses_[static_cast<size_t>(analysis.status)];
  ranks_.push_back(std::move(rank_row));
  merger_.Add(analysis);
}

Json SummaryBuilder::Finish(double coverage_threshold) && {
  const MergedAnalysis merged = std::move(merger_).Finish();
  const bool measured = merged.any_measured;
  Json families = nullptr;
  if (measured) {
    families = Json::array();
    for (const FamilyStats& family : merged.families) {
      families.push_back(FamilyJson(family, merged.totals.kernel_ns));
    }
  }
  Json statuses = Json::object();
  for (ProcessStatus status : kProcessStatuses) {
    statuses[ProcessStatusName(status)] = statuses_[static_cast<size_t>(status)];
  }
  Json summary = {
      {"processes", processes_},
      {"statuses", std::move(statuses)},
      {"totals", measured ? TotalsJson(merged.totals) : NullTotals()},
      {"coverage", CoverageJson(measured, merged.attributed_kernel_ns, merged.totals.kernel_ns,
                                merged.unattributed, coverage_threshold, merged.phase_coverage)},
      {"families", std::move(families)}};
  summary["coverage"]["fallbacks"] = FallbacksJson(measured, merged.fallbacks);
  AddStragglers(ranks_, &summary);
  summary["ranks"] = std::move(ranks_);
  return summary;
}

Json LaunchersJson(std::vector<ProcessEntry>& processes,
                   const std::map<uint32_t, int>& exit_statuses,
                   const std::optional<std::string>& host) {
  std::set<uint32_t> traced;
  for (const ProcessEntry& process : processes) traced.insert(process.analysis->process->pid);
  std::map<uint32_t, std::vector<uint32_t>> children;  // launcher pid -> traced children
  for (ProcessEntry& process : processes) {
    const ProcessIdentity& identity = *process.analysis->process;
    const char* kind = "outside";
    if (traced.count(identity.ppid) != 0) {
      kind = "traced";
    } else if (exit_statuses.count(identity.ppid) != 0) {
      kind = "launcher";
      children[identity.ppid].push_back(identity.pid);
    }
    process.json["parent"] = {{"pid", identity.ppid}, {"kind", kind}};
  }
  Json launchers = Json::array();
  for (auto& [pid, pids] : children) {
    std::sort(pids.begin(), pids.end());
    launchers.push_back({{"host", OptionalJson(host)},
                         {"pid", pid},
                         {"exit_status", exit_statuses.at(pid)},
                         {"children", pids}});
  }
  return launchers;
}

}  // namespace gpuattr::collector
