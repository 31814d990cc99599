// End-to-end gates (issue 6) on pairs of simulated runs with seeded per-kernel jitter.
//
// What is real and what is resampled: every report here is a real `gpuattr run` of a
// tests/scenarios/gate_*.json scenario on the simulated GPU, each with its own scenario `seed`
// (every kernel drawn uniformly within ±10 %). For the 100-trial statistics, 30 baseline runs and
// 30 slow-forward runs are made once; a trial is a distinct pair of them (identical workloads:
// pairs (i, j), i < j, of baseline runs; slow: pairs (baseline i, slow j)), judged in-process
// by the same EvaluateGate the CLI runs, with the default rules. A handful of pairs also go
// through the `gpuattr gate` binary, and the outputs and exit statuses are checked there.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gate/gate.h"
#include "gate/rules.h"
#include "report/report_reader.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using Json = nlohmann::json;
using test_support::ProcessResult;
using test_support::RunProcess;
using test_support::TempDir;

constexpr int kRuns = 30;
constexpr int kTrials = 100;
const std::string kForward = "passes[\"step/forward\"].device.total_ns";

// Runs tests/scenarios/NAME.json with `seed` under gpuattr; returns the report's path.
std::string RunSeeded(const TempDir& dir, const std::string& name, int seed) {
  Json scenario = test_support::ReadJson(GPUATTR_SCENARIO_DIR "/" + name + ".json");
  REQUIRE(scenario.is_object());
  scenario["seed"] = seed;
  const std::string stem = dir.File(name + "_" + std::to_string(seed));
  {
    FILE* file = std::fopen((stem + ".scenario.json").c_str(), "w");
    REQUIRE(file != nullptr);
    const std::string text = scenario.dump();
    REQUIRE(std::fwrite(text.data(), 1, text.size(), file) == text.size());
    REQUIRE(std::fclose(file) == 0);
  }
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "-q", "-o", stem + ".report.json", "--", SIMGPU_RUN,
                  stem + ".scenario.json", "--truth", stem + ".truth.json"});
  INFO(run.err);
  REQUIRE(ExitStatus(run) == 0);
  return stem + ".report.json";
}

// The gate over two report files, read as `gpuattr gate` reads them.
collector::GateOutcome Judge(const std::string& baseline_path, const std::string& current_path) {
  StatusOr<collector::LoadedReport> baseline = collector::LoadReport(baseline_path);
  StatusOr<collector::LoadedReport> current = collector::LoadReport(current_path);
  REQUIRE(baseline.ok());
  REQUIRE(current.ok());
  StatusOr<collector::GateOutcome> outcome = collector::EvaluateGate(
      *baseline, *current, collector::DefaultGateRules(baseline->document()));
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  return *outcome;
}

bool ForwardFailed(const collector::GateOutcome& outcome) {
  for (const collector::Check& check : outcome.checks) {
    if (check.metric == kForward) return !check.passed;
  }
  FAIL("no check of " << kForward);
  return false;
}

ProcessResult Gate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {GPUATTR_BIN, "gate"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

TEST_CASE("gate: 100 seeded trials of identical and of 10 % slower forward workloads",
          "[e2e][gate]") {
  TempDir dir;
  std::vector<std::string> base_paths, slow_paths;
  std::vector<Json> base, slow;
  for (int i = 0; i < kRuns; ++i) {
    base_paths.push_back(RunSeeded(dir, "gate_baseline", 1 + i));
    slow_paths.push_back(RunSeeded(dir, "gate_slow_forward", 1001 + i));
    base.push_back(test_support::ReadJson(base_paths.back()));
    slow.push_back(test_support::ReadJson(slow_paths.back()));
    CHECK(SchemaValid(base_paths.back()));
    CHECK(SchemaValid(slow_paths.back()));
    CheckReconciliation(base.back()["processes"][0]);
    CheckReconciliation(slow.back()["processes"][0]);
  }
  REQUIRE(base[0]["processes"][0]["steps"]["rows"].size() == 24);

  int identical_passed = 0;
  int trials = 0;
  for (int i = 0; i < kRuns && trials < kTrials; ++i) {
    for (int j = i + 1; j < kRuns && trials < kTrials; ++j, ++trials) {
      identical_passed += Judge(base_paths[i], base_paths[j]).Passed() ? 1 : 0;
    }
  }
  REQUIRE(trials == kTrials);
  int slow_caught = 0;
  for (int k = 0; k < kTrials; ++k) {
    slow_caught +=
        ForwardFailed(Judge(base_paths[k % kRuns], slow_paths[(k + k / kRuns) % kRuns])) ? 1 : 0;
  }
  std::printf(
      "gate e2e: identical workloads passed %d of %d trials; 10 %% slower forward "
      "failed %d of %d\n",
      identical_passed, kTrials, slow_caught, kTrials);
  CHECK(identical_passed >= 99);
  CHECK(slow_caught >= 99);

  // The binary agrees on a few pairs.
  for (int k = 0; k < 3; ++k) {
    const ProcessResult same = Gate({"--baseline", base_paths[k], "--current", base_paths[k + 3]});
    INFO(same.out << same.err);
    CHECK(ExitStatus(same) == 0);
    const ProcessResult regressed = Gate({"--baseline", base_paths[k], "--current", slow_paths[k]});
    INFO(regressed.out << regressed.err);
    CHECK(ExitStatus(regressed) == 1);
    CHECK(regressed.out.find("FAIL     " + kForward) != std::string::npos);
  }
}

TEST_CASE("gate: a coverage drop below the threshold fails, and its outputs are checked",
          "[e2e][gate]") {
  TempDir dir;
  const std::string baseline = RunSeeded(dir, "gate_baseline", 7);
  const std::string low = RunSeeded(dir, "gate_low_coverage", 8);
  const std::string markdown = dir.File("gate.md");
  const std::string junit = dir.File("gate.xml");
  const std::string json = dir.File("gate.json");
  const ProcessResult result = Gate({"--baseline", baseline, "--current", low, "--markdown",
                                     markdown, "--junit", junit, "--json", json});
  INFO(result.out << result.err);
  CHECK(ExitStatus(result) == 1);
  CHECK(result.out.find("FAIL     coverage.attributed_fraction") != std::string::npos);

  const Json outcome = test_support::ReadJson(json);
  REQUIRE(outcome.is_object());
  CHECK(outcome["verdict"] == "fail");
  const size_t total = outcome["checks_total"].get<size_t>();
  const size_t failed = outcome["checks_failed"].get<size_t>();
  CHECK(failed >= 1);
  bool coverage_failed = false;
  for (const Json& check : outcome["checks"]) {
    coverage_failed = coverage_failed || (check["metric"] == "coverage.attributed_fraction" &&
                                          check["verdict"] == "fail");
  }
  CHECK(coverage_failed);

  const std::string md = test_support::ReadFile(markdown);
  CHECK(md.find("## gpuattr gate: **FAIL**") != std::string::npos);
  CHECK(md.find("| **FAIL** | coverage | `coverage.attributed_fraction` |") != std::string::npos);
  size_t table_rows = 0;
  for (size_t at = md.find("\n| "); at != std::string::npos; at = md.find("\n| ", at + 1)) {
    ++table_rows;
  }
  CHECK(table_rows == total + 1);  // the header and one row per check

  // JUnit parses as XML, with one testcase per check and one <failure> per failed check.
  const ProcessResult xml =
      RunProcess({GPUATTR_PYTHON, "-c",
                  "import sys, xml.etree.ElementTree as E\n"
                  "root = E.parse(sys.argv[1]).getroot()\n"
                  "suite = root.find('testsuite')\n"
                  "print(root.tag, suite.get('tests'), suite.get('failures'), "
                  "len(suite.findall('testcase')), len(suite.findall('testcase/failure')))\n",
                  junit});
  INFO(xml.err);
  REQUIRE(ExitStatus(xml) == 0);
  const std::string n = std::to_string(total);
  const std::string f = std::to_string(failed);
  CHECK(xml.out == "testsuites " + n + " " + f + " " + n + " " + f + "\n");
}

TEST_CASE("gate: a missing metric, a bad rules file and bad input exit 3, usage exits 2",
          "[e2e][gate]") {
  TempDir dir;
  const std::string baseline = RunSeeded(dir, "gate_baseline", 3);
  const std::string rules = dir.File("rules.json");
  {
    FILE* file = std::fopen(rules.c_str(), "w");
    REQUIRE(file != nullptr);
    std::fputs(R"({"rules": [{"metric": "passes[\"step/validation\"].device.total_ns",
                              "max_increase_pct": 5}]})",
               file);
    REQUIRE(std::fclose(file) == 0);
  }
  const ProcessResult missing =
      Gate({"--baseline", baseline, "--current", baseline, "--rules", rules});
  CHECK(ExitStatus(missing) == 3);
  CHECK(missing.err.find("passes[\"step/validation\"].device.total_ns") != std::string::npos);

  const ProcessResult bad_rules =
      Gate({"--baseline", baseline, "--current", baseline, "--rules", baseline});
  CHECK(ExitStatus(bad_rules) == 3);
  CHECK(bad_rules.err.find("unknown field") != std::string::npos);
  CHECK(ExitStatus(Gate({"--baseline", baseline, "--current", dir.File("none.json")})) == 3);
  CHECK(ExitStatus(Gate({"--baseline", baseline})) == 2);
  // The example rules of tests/scenarios validate against schemas/gate.schema.json and run.
  const ProcessResult schema =
      RunProcess({GPUATTR_PYTHON, GPUATTR_SOURCE_DIR "/scripts/validate_report.py",
                  GPUATTR_SCENARIO_DIR "/gate_rules.json", "--schema",
                  GPUATTR_SOURCE_DIR "/schemas/gate.schema.json"});
  INFO(schema.out << schema.err);
  CHECK(ExitStatus(schema) == 0);
  CHECK(ExitStatus(Gate({"--baseline", baseline, "--current", baseline, "--rules",
                         GPUATTR_SCENARIO_DIR "/gate_rules.json"})) == 0);
}

TEST_CASE("diff: a slower forward pass leads the pass list, with its delta", "[e2e][gate]") {
  TempDir dir;
  const std::string baseline = RunSeeded(dir, "gate_baseline", 5);
  const std::string slow = RunSeeded(dir, "gate_slow_forward", 5);  // same draws, 1.1x forward
  const ProcessResult json = RunProcess({GPUATTR_BIN, "diff", "--json", baseline, slow});
  REQUIRE(ExitStatus(json) == 0);
  const Json diff = Json::parse(json.out, nullptr, false);
  REQUIRE(diff.is_object());
  const Json& passes = diff["processes"][0]["passes"];
  // step and step/forward move by the same amount (forward is step's only change).
  CHECK(passes[0]["total_ns"]["delta"] == passes[1]["total_ns"]["delta"]);
  CHECK(passes[1]["path"] == Json::array({"step", "forward"}));
  CHECK(passes[1]["total_ns"]["delta_pct"].get<double>() == Approx(10.0).epsilon(0.001));
  CHECK(passes[2]["total_ns"]["delta"] == 0.0);
  const ProcessResult view = RunProcess({GPUATTR_BIN, "diff", baseline, slow});
  REQUIRE(ExitStatus(view) == 0);
  CHECK(view.out.find("step/forward") != std::string::npos);
  CHECK(view.out.find("Kernel families") != std::string::npos);
  CHECK(ExitStatus(RunProcess({GPUATTR_BIN, "diff", baseline, dir.File("none.json")})) == 3);
}

// The TraceDiff pair as the gate meets it in CI: the shared control trace (an A100, rank 3,
// device 3) and a slower copy made here the way the pair's other half differs: every kernel,
// copy and set 25 % longer, on rank 1's device 1 (a V100 in HTA's own pair).
constexpr char kSlowerCopy[] = R"(
import gzip, json, sys
trace = json.load(gzip.open(sys.argv[1], "rt"))
for event in trace["traceEvents"]:
    if event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in event:
        event["dur"] = round(event["dur"] * 1.25, 3)
        event["pid"] = 1
        event.setdefault("args", {})["device"] = 1
trace["distributedInfo"]["rank"] = 1
json.dump(trace, open(sys.argv[2], "w"))
)";

TEST_CASE("gate on imports: a trace against itself passes, its slower copy fails by name",
          "[e2e][gate]") {
  TempDir dir;
  const std::string control = std::string(GPUATTR_SOURCE_DIR) +
                              "/../shared/traces/hta_a100_trace_diff_control/control.json.gz";
  const std::string slower = dir.File("slower.json");
  const ProcessResult made =
      RunProcess({GPUATTR_PYTHON, "-c", kSlowerCopy, control, slower}, {}, 120);
  INFO(made.err);
  REQUIRE(ExitStatus(made) == 0);
  for (const auto& [trace, report] : {std::pair{control, dir.File("a.json")},
                                      {control, dir.File("b.json")},
                                      {slower, dir.File("slow.json")}}) {
    const ProcessResult imported =
        RunProcess({GPUATTR_BIN, "import", "-q", "-o", report, trace}, {}, 120);
    INFO(imported.err);
    REQUIRE(ExitStatus(imported) == 0);
  }

  // Two imports of one trace pass the default rules; what an import cannot measure (the shim's
  // dropped records) is named as not applicable.
  const ProcessResult same = Gate({"--baseline", dir.File("a.json"), "--current",
                                   dir.File("b.json"), "--json", dir.File("same.json")});
  INFO(same.out << same.err);
  CHECK(ExitStatus(same) == 0);
  const Json same_result = test_support::ReadJson(dir.File("same.json"));
  CHECK(same_result["verdict"] == "pass");
  CHECK(same_result["checks_not_applicable"].get<int>() >= 1);
  bool dropped_named = false;
  for (const Json& check : same_result["checks"]) {
    if (check["metric"] == "loss.dropped_records") {
      dropped_named = check["verdict"] == "not_applicable";
    }
  }
  CHECK(dropped_named);

  // The slower copy fails, the regressed passes and families named.
  const ProcessResult slow = Gate({"--baseline", dir.File("a.json"), "--current",
                                   dir.File("slow.json"), "--json", dir.File("slow_result.json")});
  INFO(slow.out << slow.err);
  CHECK(ExitStatus(slow) == 1);
  const Json slow_result = test_support::ReadJson(dir.File("slow_result.json"));
  CHECK(slow_result["verdict"] == "fail");
  std::vector<std::string> failed;
  for (const Json& check : slow_result["checks"]) {
    if (check["verdict"] == "fail") failed.push_back(check["metric"].get<std::string>());
  }
  CHECK(std::find(failed.begin(), failed.end(),
                  "passes[\"ProfilerStep#*/## backward ##\"].device.total_ns") != failed.end());
  CHECK(std::any_of(failed.begin(), failed.end(),
                    [](const std::string& metric) { return metric.rfind("families[", 0) == 0; }));
  CHECK(slow.out.find("FAIL") != std::string::npos);
  CHECK(slow.out.find('\x1b') == std::string::npos);  // not a terminal: no colour

  // Diff pairs the two processes (ranks 3 and 1) and their one device each (3 and 1).
  const ProcessResult diff =
      RunProcess({GPUATTR_BIN, "diff", "--json", dir.File("a.json"), dir.File("slow.json")});
  REQUIRE(ExitStatus(diff) == 0);
  const Json diffed = Json::parse(diff.out, nullptr, false);
  REQUIRE(diffed.is_object());
  REQUIRE(diffed["processes"].size() == 1);
  const Json& process = diffed["processes"][0];
  CHECK(process["devices_matched_by"] == "order");
  REQUIRE(process["devices"].size() == 1);
  CHECK(process["devices"][0]["baseline_id"] == 3);
  CHECK(process["devices"][0]["current_id"] == 1);
  CHECK(process["devices"][0]["busy_ns"]["delta"].get<double>() > 0);
  const ProcessResult view =
      RunProcess({GPUATTR_BIN, "diff", dir.File("a.json"), dir.File("slow.json")});
  CHECK(view.out.find("3 -> 1") != std::string::npos);
  CHECK(view.out.find("paired by order") != std::string::npos);
}

// The kernels of a Kineto trace counted without gpuattr: their names and summed time (ns).
constexpr char kKernelCensus[] = R"(
import gzip, json, sys
trace = json.load(gzip.open(sys.argv[1], "rt"))
kernels = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "Kernel") and "dur" in e]
print(json.dumps({"kernel_ns": sum(round(e["dur"] * 1000) for e in kernels),
                  "names": sorted({e["name"] for e in kernels})}))
)";

TEST_CASE(
    "gate across kernel sets: two real traces whose families differ fail by name, not as "
    "bad input",
    "[e2e][gate]") {
  // The two ranks of one job ran different kernels (fbgemm's weighted and unweighted embedding
  // kernels): families vanish and appear between them, as under a fusion change or on another GPU.
  TempDir dir;
  const std::string traces =
      std::string(GPUATTR_SOURCE_DIR) + "/../shared/traces/hta_2rank_sampled/";
  Json census[2];
  for (int rank = 0; rank < 2; ++rank) {
    const std::string trace = traces + "sampled_rank-" + std::to_string(rank) + ".json.gz";
    const ProcessResult counted = RunProcess({GPUATTR_PYTHON, "-c", kKernelCensus, trace}, {}, 120);
    INFO(counted.err);
    REQUIRE(ExitStatus(counted) == 0);
    census[rank] = Json::parse(counted.out);
    const ProcessResult imported = RunProcess(
        {GPUATTR_BIN, "import", "-q", "-o", dir.File(std::to_string(rank) + ".json"), trace}, {},
        120);
    INFO(imported.err);
    REQUIRE(ExitStatus(imported) == 0);
  }
  CHECK(census[0]["names"] != census[1]["names"]);
  const uint64_t baseline_ns = census[0]["kernel_ns"].get<uint64_t>();
  const uint64_t current_ns = census[1]["kernel_ns"].get<uint64_t>();
  REQUIRE(static_cast<double>(current_ns) > 1.05 * static_cast<double>(baseline_ns));

  const auto gate = [&](const std::string& baseline, const std::string& current) {
    const ProcessResult run =
        Gate({"--baseline", dir.File(baseline + ".json"), "--current", dir.File(current + ".json"),
              "--json", dir.File(baseline + current + "_gate.json")});
    INFO(run.out << run.err);
    CHECK(ExitStatus(run) == 1);
    return test_support::ReadJson(dir.File(baseline + current + "_gate.json"));
  };
  // Rank 1 against rank 0: 7 % more kernel time, named by the totals' check.
  const Json grown = gate("0", "1");
  bool totals_failed = false;
  size_t vanished_passed = 0;
  for (const Json& check : grown["checks"]) {
    if (check["metric"] == "totals.kernel_ns") {
      totals_failed = check["verdict"] == "fail";
      CHECK(check["value"] == static_cast<double>(current_ns));
      CHECK(check["baseline"] == static_cast<double>(baseline_ns));
    }
    const std::string why = check["why"].get<std::string>();
    if (why.find("vanished: it is not in the current report") != std::string::npos) {
      CHECK(check["value"] == 0.0);
      vanished_passed += check["verdict"] == "pass" ? 1 : 0;
    }
  }
  CHECK(totals_failed);
  CHECK(vanished_passed > 0);
  // The other way round a pass of rank 1 is missing from rank 0: still a judged change.
  const Json shrunk = gate("1", "0");
  CHECK(std::any_of(shrunk["notes"].begin(), shrunk["notes"].end(), [](const Json& note) {
    return note.get<std::string>().rfind("new family (not in the baseline): ", 0) == 0;
  }));
}

}  // namespace
}  // namespace gpuattr::e2e
