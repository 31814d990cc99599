// End-to-end on the issue-3 scenario library (tests/scenarios/README.md): each scenario runs on the
// simulated GPU under `gpuattr run --activities`, and the report must agree with the contract of
// docs/attribution.md as derived from the simulator's truth (contract_expect.h): every activity's
// attribution kind, path, reason and phase exactly; pass self/total, device busy/idle, gap classes
// and step phase terms exactly; coverage fractions to 1e-9; reconciliation; schema validity.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "contract_expect.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadFile;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;

// Host instants (range pushes and pops, launch entries) are read by the shim and by the simulator
// separately, so a thread descheduled between the two readings shifts one against the other: on a
// loaded 2-core machine 11.5 ms was seen. Host numbers are therefore checked to be in the right
// neighbourhood only; device times are compared exactly.
constexpr int64_t kHostSkewNs = 50'000'000;

struct Run {
  json report;
  json truth;
  std::vector<json> activities;  // the --activities export, one object per line
};

Run RunLibraryScenario(const TempDir& dir, const std::string& name,
                       const std::vector<std::string>& flags = {}) {
  const std::string report_path = dir.File("report.json");
  const std::string truth_path = dir.File("truth.json");
  const std::string activities_path = dir.File("activities.jsonl");
  std::vector<std::string> argv = {GPUATTR_BIN, "run",          "--quiet",      "-o",
                                   report_path, "--activities", activities_path};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const std::string& arg : {std::string("--"), std::string(SIMGPU_RUN),
                                 std::string(GPUATTR_SCENARIO_DIR "/") + name + ".json",
                                 std::string("--truth"), truth_path}) {
    argv.push_back(arg);
  }
  const ProcessResult run = RunProcess(argv);
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  Run out{ReadJson(report_path), ReadJson(truth_path), {}};
  REQUIRE_FALSE(out.report.is_discarded());
  REQUIRE_FALSE(out.truth.is_discarded());
  std::istringstream lines(ReadFile(activities_path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    out.activities.push_back(json::parse(line, nullptr, false));
    REQUIRE_FALSE(out.activities.back().is_discarded());
  }
  return out;
}

// The truth as `--no-inherit` defines it: inherited activities are unattributed.
json WithoutInheritance(json truth) {
  for (auto& process : truth["processes"]) {
    for (auto& activity : process["activities"]) {
      if (activity["attribution"] == "inherited") {
        activity["attribution"] = "none";
        activity["range_path"] = json::array();
      }
    }
  }
  return truth;
}

bool Near(double actual, double expected) {
  return std::fabs(actual - expected) <= 1e-9 * std::max(1.0, std::fabs(expected));
}

void CheckFraction(const json& actual, std::optional<double> expected) {
  if (!expected) {
    CHECK(actual.is_null());
    return;
  }
  REQUIRE(actual.is_number());
  INFO("fraction " << actual.get<double>() << " expected " << *expected);
  CHECK(Near(actual.get<double>(), *expected));
}

std::optional<double> Ratio(uint64_t num, uint64_t den) {
  if (den == 0) return std::nullopt;
  return static_cast<double>(num) / static_cast<double>(den);
}

// Each export line against its truth activity, matched by (correlation id, start).
void CheckActivities(const std::vector<json>& exported, const ContractProcess& expected,
                     bool inherit) {
  std::map<std::pair<uint64_t, uint64_t>, const json*> by_key;
  for (const json& line : exported) {
    if (line["pid"].get<int64_t>() != expected.pid) continue;
    by_key[{line["correlation_id"].get<uint64_t>(), line["start_ns"].get<uint64_t>()}] = &line;
  }
  CHECK(by_key.size() == expected.activities.size());
  std::vector<std::string> mismatches;
  auto expect = [&](bool ok, const json& truth, const std::string& what, const json& got) {
    if (!ok && mismatches.size() < 20) {
      mismatches.push_back(what + ": got " + got.dump() + " for truth " + truth.dump());
    }
  };
  for (const ContractActivity& a : expected.activities) {
    const json& t = a.truth;
    const auto it =
        by_key.find({t["correlation_id"].get<uint64_t>(), t["start_ns"].get<uint64_t>()});
    if (it == by_key.end()) {
      expect(false, t, "missing from the export", nullptr);
      continue;
    }
    const json& e = *it->second;
    expect(e["kind"] == t["kind"], t, "kind", e["kind"]);
    // Kernels carry their name (mangled or demangled); memcpy and memset may carry none.
    const bool kernel = t["kind"] == "kernel";
    expect(e["name"] == t["name"] || e["name"] == Demangle(t["name"].get<std::string>()) ||
               (!kernel && e["name"].is_null()),
           t, "name", e["name"]);
    expect(e["device"] == t["device"] && e["stream"] == t["stream"], t, "device/stream", e);
    expect(e["end_ns"] == t["end_ns"], t, "end_ns", e["end_ns"]);
    expect(e["launch_ns"].is_number() && std::llabs(e["launch_ns"].get<int64_t>() -
                                                    t["launch_ns"].get<int64_t>()) < kHostSkewNs,
           t, "launch_ns", e["launch_ns"]);
    expect(e["thread"].is_string() ? e["thread"] == t["thread"] : e["thread"] == t["tid"], t,
           "thread", e["thread"]);
    expect(e["graph_node"] == t["graph_node"], t, "graph_node", e["graph_node"]);
    if (a.attribution == "none") {
      expect(e["attribution"] == "none" || e["attribution"].is_null(), t, "attribution",
             e["attribution"]);
      expect(e["path"].is_null() || e["path"] == json::array(), t, "path", e["path"]);
      expect(e["reason"] == *a.reason, t, "reason", e["reason"]);
      expect(e["phase"].is_null(), t, "phase", e["phase"]);
    } else {
      expect(e["attribution"] == a.attribution, t, "attribution", e["attribution"]);
      expect(e["path"] == a.path, t, "path", e["path"]);
      expect(e["reason"].is_null(), t, "reason", e["reason"]);
      expect(a.phase ? e["phase"] == *a.phase : e["phase"].is_null(), t, "phase", e["phase"]);
    }
    if (!t["graph_node"].is_null() && a.attribution == "captured") {
      // The launch context, the second dimension; inherited only when inheritance is on.
      const bool dropped = !inherit && t["launch_attribution"] == "inherited";
      const json want = dropped ? json::array() : t["launch_path"];
      expect(e["launch_path"] == want, t, "launch_path", e["launch_path"]);
    }
  }
  for (const std::string& m : mismatches) UNSCOPED_INFO(m);
  CHECK(mismatches.empty());
}

void CheckGaps(const json& process, const ContractProcess& expected) {
  for (const json& device : process["devices"]) {
    const int64_t id = device["id"].get<int64_t>();
    INFO("device " << id);
    REQUIRE(expected.devices.count(id) == 1);
    const ContractDevice& want = expected.devices.at(id);
    const json& gaps = device["gaps"];
    REQUIRE(gaps.is_object());
    // Exact when no gap's class is ambiguous; otherwise each ambiguous gap lands whole in one.
    INFO("ambiguous ns " << want.ambiguous_ns);
    const uint64_t host_bound = gaps["host_bound_ns"].get<uint64_t>();
    CHECK(host_bound >= want.host_bound_ns);
    CHECK(host_bound <= want.host_bound_ns + want.ambiguous_ns);
    CHECK(host_bound + gaps["dependency_ns"].get<uint64_t>() ==
          want.host_bound_ns + want.dependency_ns + want.ambiguous_ns);
    CHECK((gaps["unclassified_ns"].is_null() || gaps["unclassified_ns"] == 0));
    if (gaps.contains("count")) CHECK(gaps["count"] == want.holes.size());
    CHECK(want.host_bound_ns + want.dependency_ns + want.ambiguous_ns ==
          device["idle_ns"].get<uint64_t>());
    REQUIRE(gaps["largest"].is_array());
    CHECK(gaps["largest"].size() <= want.holes.size());
    if (!want.holes.empty()) REQUIRE_FALSE(gaps["largest"].empty());
    for (size_t i = 0; i < gaps["largest"].size(); ++i) {
      const json& gap = gaps["largest"][i];
      INFO("largest gap " << gap.dump());
      // Ranked by length: the i-th listed is as long as the truth's i-th longest hole.
      CHECK(gap["ns"] == want.holes[i].end_ns - want.holes[i].start_ns);
      const auto match =
          std::find_if(want.holes.begin(), want.holes.end(), [&](const ContractGap& h) {
            return gap["start_ns"] == h.start_ns && gap["end_ns"] == h.end_ns;
          });
      REQUIRE(match != want.holes.end());
      CHECK((gap["class"] == match->gap_class || match->class_ambiguous));
      // The range open on the main thread, else the launching thread: its path or innermost name.
      const bool range_ok =
          std::any_of(match->host_range_candidates.begin(), match->host_range_candidates.end(),
                      [&](const Path& candidate) {
                        const Path innermost = candidate.empty() ? Path{} : Path{candidate.back()};
                        return (candidate.empty() && gap["host_range"].is_null()) ||
                               gap["host_range"] == candidate || gap["host_range"] == innermost;
                      });
      CHECK(range_ok);
    }
  }
}

void CheckPhasesAndCoverage(const json& process, const ContractProcess& expected) {
  const json& phases = process["phases"];
  REQUIRE(phases.is_object());
  for (const std::string& term : kPhaseTerms) {
    INFO("phase " << term);
    CHECK(phases[term + "_ns"] == expected.phase_ns.at(term));
  }
  CheckFraction(phases["recompute_fraction"],
                Ratio(expected.phase_ns.at("recompute"), expected.phase_ns.at("forward")));

  const json& coverage = process["coverage"];
  const std::optional<double> fraction = Ratio(expected.attributed_kernel_ns, expected.kernel_ns);
  CheckFraction(coverage["attributed_fraction"], fraction);
  if (coverage.contains("attributed_kernel_ns")) {
    CHECK(coverage["attributed_kernel_ns"] == expected.attributed_kernel_ns);
  }
  CHECK(coverage["threshold"] == 0.95);
  if (fraction) CHECK(coverage["passed"] == (*fraction >= 0.95));
  for (const std::string phase : {"forward", "backward"}) {
    INFO("by_phase." << phase);
    const auto at = [&](const std::map<std::string, uint64_t>& m) {
      return m.count(phase) != 0 ? m.at(phase) : uint64_t{0};
    };
    const uint64_t attributed = at(expected.phase_kernel_ns);
    CheckFraction(coverage["by_phase"][phase],
                  Ratio(attributed, attributed + at(expected.phase_unattributed_kernel_ns)));
  }
  std::map<std::string, std::pair<uint64_t, uint64_t>> unattributed;
  for (const json& entry : coverage["unattributed"]) {
    if (entry["ns"] == 0) continue;
    unattributed[entry["reason"].get<std::string>()] = {entry["ns"].get<uint64_t>(),
                                                        entry["activities"].get<uint64_t>()};
  }
  CHECK(unattributed == expected.unattributed);
  // Reconciliation, from the contract's own totals.
  uint64_t roots = 0;
  for (const json& root : process["passes"]) roots += root["device"]["total_ns"].get<uint64_t>();
  uint64_t unattributed_ns = 0;
  for (const auto& [reason, entry] : expected.unattributed) unattributed_ns += entry.first;
  CHECK(roots + unattributed_ns == expected.device_ns);
}

void CheckSteps(const json& process, const ContractProcess& expected, size_t skip) {
  const json& steps = process["steps"];
  if (!expected.steps) {
    CHECK(steps.is_null());
    return;
  }
  REQUIRE(steps.is_object());
  CHECK(steps["range"] == expected.steps->range);
  CHECK(steps["skipped"] == skip);
  const auto& rows = expected.steps->rows;
  REQUIRE(rows.size() > skip);
  REQUIRE(steps["rows"].size() == rows.size() - skip);
  std::vector<std::string> device_terms = kPhaseTerms;
  device_terms.push_back("unattributed");
  for (size_t i = skip; i < rows.size(); ++i) {
    const json& row = steps["rows"][i - skip];
    const ContractStepRow& want = rows[i];
    INFO("step row " << row.dump());
    CHECK(row["index"] == i);
    CHECK(row["name"] == expected.steps->range);
    for (const std::string& term : device_terms) CHECK(row[term + "_ns"] == want.ns.at(term));
    CHECK(row["busy_ns"] == want.busy_ns);
    CHECK(row["gaps_ns"].get<int64_t>() ==
          row["host_ns"].get<int64_t>() - row["busy_ns"].get<int64_t>());
    CHECK(std::llabs(row["host_ns"].get<int64_t>() - static_cast<int64_t>(want.host_ns)) <
          kHostSkewNs);
  }
  if (!steps.contains("summary")) return;
  const json& summary = steps["summary"];
  REQUIRE(summary.is_object());
  for (const std::string& term : device_terms) {
    std::vector<uint64_t> kept;
    for (size_t i = skip; i < rows.size(); ++i) kept.push_back(rows[i].ns.at(term));
    const auto [lower, upper] = MedianBounds(kept);
    INFO("summary " << term << "_ns " << summary[term + "_ns"]);
    CHECK(summary[term + "_ns"] >= lower);
    CHECK(summary[term + "_ns"] <= upper);
  }
}

// Everything the contract fixes, for every process of the run.
std::vector<ContractProcess> CheckContract(const Run& run, const ContractOptions& options = {},
                                           size_t skip_steps = 0) {
  const json truth = options.inherit ? run.truth : WithoutInheritance(run.truth);
  CheckAgainstTruth(run.report, truth);
  const std::vector<ContractProcess> expected = ExpectContract(run.truth, options);
  for (const ContractProcess& process : expected) {
    INFO("pid " << process.pid);
    const json* report = FindProcess(run.report, process.pid);
    REQUIRE(report != nullptr);
    CheckActivities(run.activities, process, options.inherit);
    CheckPhasesAndCoverage(*report, process);
    CheckGaps(*report, process);
    CheckSteps(*report, process, skip_steps);
  }
  return expected;
}

uint64_t Duration(const json& activity) {
  return activity["end_ns"].get<uint64_t>() - activity["start_ns"].get<uint64_t>();
}

TEST_CASE("the GPU course block: fusion ratios from the families", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "gpu_course_block");
  CheckContract(run);
  const json& process = run.report["processes"][0];
  const json& truth = run.truth["processes"][0];

  // Group the truth's kernels by the range that launched them: linear, eager, fused.
  std::map<std::string, std::set<std::string>> names_by_group;
  std::map<std::string, uint64_t> truth_ns_by_name;
  std::map<std::string, uint64_t> truth_ns_by_group;
  for (const json& activity : truth["activities"]) {
    const std::string group = activity["range_path"][0].get<std::string>();
    const std::string name = Demangle(activity["name"].get<std::string>());
    names_by_group[group].insert(name);
    truth_ns_by_name[name] += Duration(activity);
    truth_ns_by_group[group] += Duration(activity);
  }
  REQUIRE(names_by_group.size() == 3);
  CHECK(names_by_group["eager"].size() == 4);  // mul, add (twice), gelu, clamp

  // Each family belongs to one group; its total is the truth's sum over its names.
  REQUIRE(process["families"].is_array());
  std::map<std::string, uint64_t> family_ns_by_group;
  for (const json& family : process["families"]) {
    INFO("family " << family.dump());
    std::set<std::string> groups;
    uint64_t truth_ns = 0;
    REQUIRE(family["names"].size() < 5);  // fewer than the cap: the list is complete
    for (const json& name : family["names"]) {
      for (const auto& [group, names] : names_by_group) {
        if (names.count(name.get<std::string>()) != 0) groups.insert(group);
      }
      truth_ns += truth_ns_by_name[name.get<std::string>()];
    }
    REQUIRE(groups.size() == 1);
    CHECK(family["total_ns"] == truth_ns);
    family_ns_by_group[*groups.begin()] += family["total_ns"].get<uint64_t>();
  }
  CHECK(family_ns_by_group == truth_ns_by_group);

  const double gemm = static_cast<double>(family_ns_by_group["linear"]);
  const double eager = static_cast<double>(family_ns_by_group["eager"]);
  const double fused = static_cast<double>(family_ns_by_group["fused"]);
  const double truth_gemm = static_cast<double>(truth_ns_by_group["linear"]);
  const double truth_eager = static_cast<double>(truth_ns_by_group["eager"]);
  const double truth_fused = static_cast<double>(truth_ns_by_group["fused"]);
  CHECK(Near(eager / fused, truth_eager / truth_fused));
  CHECK(Near((gemm + eager) / (gemm + fused),
             (truth_gemm + truth_eager) / (truth_gemm + truth_fused)));
  // The lesson's numbers: 1.512 / 0.410 and (6.24 + 1.512) / (6.24 + 0.410).
  CHECK(eager / fused == Approx(1.512 / 0.410).epsilon(1e-9));
  CHECK((gemm + eager) / (gemm + fused) == Approx(7.752 / 6.650).epsilon(1e-9));
}

TEST_CASE("a graph-replayed microstep: captured attribution and 0.16 % idle", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "graph_microstep");
  const auto expected = CheckContract(run);
  const json& process = run.report["processes"][0];
  const json& truth = run.truth["processes"][0];
  REQUIRE(truth["activities"].size() == 2 * 4948);
  for (const ContractActivity& a : expected[0].activities) REQUIRE(a.attribution == "captured");

  const ExpectedProcess device = ExpectFromTruth(run.truth)[0];
  const json& report_device = process["devices"][0];
  const double idle = static_cast<double>(device.devices.begin()->second.idle_ns) /
                      static_cast<double>(device.devices.begin()->second.span_ns);
  CheckFraction(report_device["idle_fraction"], idle);
#if !defined(__SANITIZE_ADDRESS__)
  // The scenario's shape: the second replay is enqueued while the first runs. A sanitized
  // simulator submits the 4,948 nodes of a replay slower than its device runs them, which opens a
  // host-bound hole between the replays; the exact comparison above holds either way.
  CHECK(idle > 0.0014);
  CHECK(idle < 0.0018);
#endif

  // The launch context: every captured nanosecond was launched inside train_step.
  for (const auto& [path, pass] : FlattenPasses(process)) {
    const uint64_t captured = pass["attribution"]["captured_ns"].get<uint64_t>();
    if (captured == 0) continue;
    INFO("pass " << json(path).dump());
    REQUIRE(pass["launch_contexts"].size() == 1);
    CHECK(pass["launch_contexts"][0]["path"] == json::array({"train_step"}));
    CHECK(pass["launch_contexts"][0]["ns"] == captured);
  }
}

TEST_CASE("activation checkpointing: recompute inside backward is measured", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "activation_checkpointing");
  const auto expected = CheckContract(run);
  CHECK(expected[0].phase_ns.at("recompute") > 0);
  const json& phases = run.report["processes"][0]["phases"];
  CHECK(phases["recompute_fraction"].get<double>() > 0.5);
}

TEST_CASE("autograd threads: backward inherited from the main thread, and --no-inherit",
          "[e2e][library]") {
  TempDir inherit_dir;
  const Run inherit = RunLibraryScenario(inherit_dir, "autograd_threads");
  const auto with = CheckContract(inherit);
  uint64_t inherited = 0;
  for (const ContractActivity& a : with[0].activities) {
    if (a.attribution == "inherited") {
      ++inherited;
      CHECK(a.path == Path{"step", "backward"});
    }
  }
  CHECK(inherited == 3 * 4);

  TempDir no_inherit_dir;
  const Run no_inherit = RunLibraryScenario(no_inherit_dir, "autograd_threads", {"--no-inherit"});
  ContractOptions options;
  options.inherit = false;
  CheckContract(no_inherit, options);
  CHECK(no_inherit.report["capture"]["inherit"] == false);
  const json& on = inherit.report["processes"][0]["coverage"];
  const json& off = no_inherit.report["processes"][0]["coverage"];
  CHECK(off["attributed_fraction"].get<double>() < on["attributed_fraction"].get<double>());
  CHECK(on["by_phase"]["backward"] == 1.0);
  CHECK(off["by_phase"]["backward"].get<double>() < 0.1);
  CHECK(off["by_phase"]["forward"] == on["by_phase"]["forward"]);
}

TEST_CASE("communication overlap: busy is the union of the streams", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "comm_overlap");
  CheckContract(run);
  const ExpectedProcess truth = ExpectFromTruth(run.truth)[0];
  const uint64_t sum = truth.kernel_ns + truth.memcpy_ns + truth.memset_ns;
  const json& device = run.report["processes"][0]["devices"][0];
  CHECK(device["busy_ns"].get<uint64_t>() < sum);
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> by_stream;
  // The truth's activities by category: NCCL kernels, other kernels, copies and sets.
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> by_category;
  uint64_t all_reduce_ns = 0;
  for (const json& a : run.truth["processes"][0]["activities"]) {
    by_stream[a["stream"].get<uint64_t>()].emplace_back(a["start_ns"], a["end_ns"]);
    const bool nccl = a["kind"] == "kernel" && a["name"].get<std::string>().rfind("nccl", 0) == 0;
    const std::string category = a["kind"] != "kernel" ? "memory"
                                 : nccl                ? "communication"
                                                       : "compute";
    by_category[category].emplace_back(a["start_ns"], a["end_ns"]);
    if (nccl) all_reduce_ns += a["end_ns"].get<uint64_t>() - a["start_ns"].get<uint64_t>();
  }
  REQUIRE(device["streams"].size() == 2);
  for (const json& stream : device["streams"]) {
    INFO("stream " << stream["id"]);
    const auto& intervals = by_stream[stream["id"].get<uint64_t>()];
    CHECK(stream["busy_ns"] == UnionLength(intervals));
    uint64_t first = intervals.front().first;
    uint64_t last = 0;
    for (const auto& [start, end] : intervals) {
      first = std::min(first, start);
      last = std::max(last, end);
    }
    CHECK(stream["idle_ns"] == last - first - UnionLength(intervals));
  }
  // Compute, communication and the overlap of the two (docs/attribution.md §Compute,
  // communication and memory), from the truth's intervals.
  const json& categories = device["categories"];
  const uint64_t compute = UnionLength(by_category["compute"]);
  const uint64_t communication = UnionLength(by_category["communication"]);
  auto both = by_category["compute"];
  both.insert(both.end(), by_category["communication"].begin(), by_category["communication"].end());
  const uint64_t hidden = compute + communication - UnionLength(both);
  CHECK(communication > 0);
  CHECK(hidden > 0);  // the scenario overlaps its all-reduce with compute
  CHECK(categories["compute_ns"] == compute);
  CHECK(categories["communication_ns"] == communication);
  CHECK(categories["memory_ns"] == UnionLength(by_category["memory"]));
  CHECK(categories["communication_hidden_ns"] == hidden);
  CHECK(categories["communication_exposed_ns"] == communication - hidden);
  // Every all-reduce here is attributed: all of it is the communication phase term.
  CHECK(run.report["processes"][0]["phases"]["communication_ns"] == all_reduce_ns);
}

TEST_CASE("a data-loader-bound loop: host-bound gaps inside dataloader", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "dataloader_bound");
  const auto expected = CheckContract(run);
  const ContractDevice& device = expected[0].devices.begin()->second;
  CHECK(device.host_bound_ns > 10'000'000);
  const json& largest = run.report["processes"][0]["devices"][0]["gaps"]["largest"];
  REQUIRE(largest.size() >= 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(largest[i]["class"] == "host_bound");
    CHECK(largest[i]["host_range"].back() == "dataloader");
  }
}

TEST_CASE("warm-up steps: --skip-steps 2 drops them from the rows and the summary",
          "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "warmup_steps", {"--skip-steps", "2"});
  const auto expected = CheckContract(run, {}, 2);
  REQUIRE(expected[0].steps);
  const auto& rows = expected[0].steps->rows;
  REQUIRE(rows.size() == 7);
  for (size_t i = 2; i < rows.size(); ++i) {
    CHECK(rows[0].busy_ns > rows[i].busy_ns);  // the scenario's premise: warm-up is slow
    CHECK(rows[1].busy_ns > rows[i].busy_ns);
  }
  const json& summary = run.report["processes"][0]["steps"]["summary"];
  std::vector<uint64_t> all;
  for (const ContractStepRow& row : rows) all.push_back(row.busy_ns);
  const auto [all_lower, all_upper] = MedianBounds(all);
  REQUIRE(all_lower == all_upper);
  CHECK(summary["busy_ns"] != all_lower);
}

}  // namespace
}  // namespace gpuattr::e2e
