// `gpuattr merge` (issue 20, docs/jobs.md) end to end: per-rank and per-node reports of one job
// merged into the report one capture of the whole job gives, the refusals of inputs that cannot
// be one job, and its outputs.
//
// Two kinds of equality are checked. Imports are deterministic, so a 2-rank real trace imported
// as one report and imported per rank then merged must agree on every byte of the summary and of
// each process. Live runs of the simulated GPU are not (host clocks move between runs), so the
// 4-rank job run once and run per rank (two faked "nodes" of two ranks) agree exactly on every
// number the device timeline decides, and the merged report's host-timed numbers must be its
// inputs' own, with stragglers and launch statistics recomputed here from the inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using Json = nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;
using test_support::WriteFile;

const std::string kTraces = std::string(GPUATTR_SOURCE_DIR) + "/../shared/traces";
const std::string kRank0 = kTraces + "/hta_2rank_sampled/sampled_rank-0.json.gz";
const std::string kRank1 = kTraces + "/hta_2rank_sampled/sampled_rank-1.json.gz";

ProcessResult Gpuattr(std::vector<std::string> args) {
  args.insert(args.begin(), GPUATTR_BIN);
  return RunProcess(args, {}, 120);
}

void Import(const std::string& report, const std::vector<std::string>& traces,
            const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args = {"import", "-q", "--force-overwrite", "-o", report};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), traces.begin(), traces.end());
  const ProcessResult imported = Gpuattr(args);
  INFO(imported.err);
  REQUIRE(ExitStatus(imported) == 0);
}

ProcessResult Merge(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"merge", "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Gpuattr(argv);
}

// `report` with its host faked: capture, processes, rank rows and launchers say `host`.
void FakeHost(const std::string& path, const std::string& host) {
  Json report = ReadJson(path);
  REQUIRE(report.is_object());
  report["capture"]["host"] = host;
  for (Json& process : report["processes"]) process["host"] = host;
  for (Json& row : report["summary"]["ranks"]) row["host"] = host;
  for (Json& launcher : report["launchers"]) launcher["host"] = host;
  WriteFile(path, report.dump(2));
}

TEST_CASE("merge: a real 2-rank trace imported per rank merges into the one import's report",
          "[e2e][merge]") {
  TempDir dir;
  Import(dir.File("both.json"), {kRank0, kRank1});
  Import(dir.File("r0.json"), {kRank0});
  Import(dir.File("r1.json"), {kRank1});
  // Inputs in any order: the merged report is in report order.
  const ProcessResult merged =
      Merge({"-o", dir.File("job.json"), dir.File("r1.json"), dir.File("r0.json")});
  INFO(merged.err);
  REQUIRE(ExitStatus(merged) == 0);
  REQUIRE(SchemaValid(dir.File("job.json")));
  const Json both = ReadJson(dir.File("both.json"));
  const Json job = ReadJson(dir.File("job.json"));
  CHECK(job["summary"] == both["summary"]);
  CHECK(job["processes"] == both["processes"]);
  CHECK(job["capture"]["mode"] == "import");
  CHECK(job["capture"]["source"]["format"] == "kineto");
  CHECK(job["capture"]["source"]["files"] == Json({kRank1, kRank0}));
  CHECK(job["capture"]["source"]["unused_events"] == both["capture"]["source"]["unused_events"]);
  CHECK(job["capture"]["started_at"] == both["capture"]["started_at"]);
  REQUIRE(job["capture"]["merged_from"].size() == 2);
  CHECK(job["capture"]["merged_from"][0]["file"] == dir.File("r1.json"));
  // Two processes' launch samples: the summary keeps no median (docs/attribution.md).
  for (const Json& family : job["summary"]["families"]) {
    const Json& api = family["launch"]["api_ns"];
    if (api.is_object() && api["count"].get<uint64_t>() > 1) {
      INFO(family["family"]);
      bool in_both = true;
      for (const Json& process : job["processes"]) {
        in_both = in_both && std::any_of(process["families"].begin(), process["families"].end(),
                                         [&](const Json& own) {
                                           return own["family"] == family["family"] &&
                                                  own["launch"]["api_ns"].is_object();
                                         });
      }
      if (in_both) CHECK(api["median"].is_null());
    }
  }
}

// The job's summary without what host clocks decide (pids, step and idle times, launch costs
// and latencies but their counts and whether a median is kept, the straggler's step times): what
// two live runs of one job must share exactly.
Json DeviceDecided(Json summary) {
  for (Json& row : summary["ranks"]) {
    for (const char* key : {"host", "pid", "ppid", "step_ns", "idle_ns"}) row.erase(key);
  }
  for (Json& family : summary["families"]) {
    for (const char* stat : {"api_ns", "latency_ns"}) {
      Json& launch = family["launch"][stat];
      if (!launch.is_object()) continue;
      launch = Json{{"count", launch["count"]}, {"median_kept", !launch["median"].is_null()}};
    }
  }
  for (const char* end : {"slowest", "fastest"}) summary[end] = summary[end]["rank"];
  summary.erase("straggler_spread");
  return summary;
}

TEST_CASE("merge: four per-rank runs of a 4-rank job on two faked nodes merge into its one run",
          "[e2e][merge]") {
  TempDir dir;
  const Json job = ReadJson(GPUATTR_SCENARIO_DIR "/four_ranks.json");
  REQUIRE(job["processes"].size() == 4);
  const ProcessResult whole =
      Gpuattr({"run", "-q", "-o", dir.File("whole.json"), "--", SIMGPU_RUN,
               GPUATTR_SCENARIO_DIR "/four_ranks.json", "--truth", dir.File("whole.truth.json")});
  INFO(whole.err);
  REQUIRE(ExitStatus(whole) == 0);

  // srun-style: one gpuattr per rank, ranks 0 and 1 on node-a, 2 and 3 on node-b.
  std::vector<std::string> reports;
  Json truth = {{"processes", Json::array()}};
  for (size_t rank = 0; rank < 4; ++rank) {
    Json scenario = job;
    scenario["processes"] = Json::array({job["processes"][rank]});
    const std::string stem = dir.File("rank" + std::to_string(rank));
    WriteFile(stem + ".scenario.json", scenario.dump());
    const ProcessResult run = Gpuattr({"run", "-q", "-o", stem + ".json", "--", SIMGPU_RUN,
                                       stem + ".scenario.json", "--truth", stem + ".truth.json"});
    INFO(run.err);
    REQUIRE(ExitStatus(run) == 0);
    const Json rank_truth = ReadJson(stem + ".truth.json");
    CheckAgainstTruth(ReadJson(stem + ".json"), rank_truth);
    for (const Json& process : rank_truth["processes"]) truth["processes"].push_back(process);
    FakeHost(stem + ".json", rank < 2 ? "node-a" : "node-b");
    reports.push_back(stem + ".json");
  }
  std::vector<std::string> args = {"-o", dir.File("job.json")};
  args.insert(args.end(), reports.rbegin(), reports.rend());
  const ProcessResult merged = Merge(args);
  INFO(merged.err);
  REQUIRE(ExitStatus(merged) == 0);
  REQUIRE(SchemaValid(dir.File("job.json")));
  const Json merged_report = ReadJson(dir.File("job.json"));
  const Json& summary = merged_report["summary"];

  // What the device timeline decides is the one run's, exactly; every process is still its
  // truth's.
  CHECK(DeviceDecided(summary) == DeviceDecided(ReadJson(dir.File("whole.json"))["summary"]));
  CheckAgainstTruth(merged_report, truth);
  CHECK(summary["processes"] == 4);
  CHECK(summary["slowest"]["rank"] == 2);
  CHECK(summary["fastest"]["rank"] == 0);

  // The processes are the inputs', with their hosts, in rank order; the rank rows are theirs.
  std::vector<Json> inputs;
  for (const std::string& report : reports) inputs.push_back(ReadJson(report));
  REQUIRE(merged_report["processes"].size() == 4);
  for (size_t rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    CHECK(merged_report["processes"][rank] == inputs[rank]["processes"][0]);
    CHECK(summary["ranks"][rank] == inputs[rank]["summary"]["ranks"][0]);
    CHECK(summary["ranks"][rank]["host"] == (rank < 2 ? "node-a" : "node-b"));
  }
  // Stragglers and launch statistics, recomputed from the inputs.
  uint64_t slow_ns = 0;
  uint64_t fast_ns = UINT64_MAX;
  for (const Json& input : inputs) {
    const uint64_t step_ns = input["summary"]["ranks"][0]["step_ns"].get<uint64_t>();
    slow_ns = std::max(slow_ns, step_ns);
    fast_ns = std::min(fast_ns, step_ns);
  }
  CHECK(summary["slowest"]["step_ns"] == slow_ns);
  CHECK(summary["fastest"]["step_ns"] == fast_ns);
  CHECK(summary["straggler_spread"].get<double>() ==
        Approx(static_cast<double>(slow_ns - fast_ns) / static_cast<double>(fast_ns)));
  for (const Json& family : summary["families"]) {
    INFO(family["family"]);
    uint64_t count = 0;
    uint64_t total = 0;
    uint64_t min = UINT64_MAX;
    for (const Json& input : inputs) {
      for (const Json& own : input["processes"][0]["families"]) {
        if (own["family"] != family["family"] || !own["launch"]["api_ns"].is_object()) continue;
        count += own["launch"]["api_ns"]["count"].get<uint64_t>();
        total += own["launch"]["api_ns"]["total"].get<uint64_t>();
        min = std::min(min, own["launch"]["api_ns"]["min"].get<uint64_t>());
      }
    }
    CHECK(family["launch"]["api_ns"]["count"] == count);
    CHECK(family["launch"]["api_ns"]["total"] == total);
    CHECK(family["launch"]["api_ns"]["min"] == min);
  }
  CHECK(merged_report["capture"]["host"].is_null());  // two hosts
  CHECK(merged_report["capture"]["mode"] == "run");
  REQUIRE(merged_report["launchers"].size() == 4);
  CHECK(merged_report["launchers"][0]["host"] == "node-a");
  CHECK(merged_report["launchers"][3]["host"] == "node-b");

  // The text view's rank table names the hosts.
  const ProcessResult view = Gpuattr({"report", dir.File("job.json")});
  INFO(view.err);
  CHECK(ExitStatus(view) == 0);
  CHECK(view.out.find("node-b") != std::string::npos);
}

TEST_CASE("merge: inputs that cannot be one job are refused with the cause", "[e2e][merge]") {
  TempDir dir;
  Import(dir.File("r0.json"), {kRank0});
  Import(dir.File("r1.json"), {kRank1});
  auto refused = [&](const std::vector<std::string>& inputs, int exit_status,
                     const std::string& cause) {
    std::vector<std::string> args = {"-o", dir.File("refused.json")};
    args.insert(args.end(), inputs.begin(), inputs.end());
    const ProcessResult merged = Merge(args);
    INFO(merged.err);
    CHECK(ExitStatus(merged) == exit_status);
    CHECK(merged.err.find(cause) != std::string::npos);
    CHECK_FALSE(ReadJson(dir.File("refused.json")).is_object());  // nothing written
  };

  // The same process twice: a copy of one report, or one file by two names.
  WriteFile(dir.File("copy.json"), test_support::ReadFile(dir.File("r0.json")));
  refused({dir.File("r0.json"), dir.File("copy.json")}, 2, "one process captured twice");
  refused({dir.File("r0.json"), dir.path() + "/./r0.json"}, 2, "is the same file as");

  // Another schema.
  Json other = ReadJson(dir.File("r1.json"));
  other["schema_version"] = "gpuattr.report/2";
  WriteFile(dir.File("other_schema.json"), other.dump());
  refused({dir.File("r0.json"), dir.File("other_schema.json")}, 3, "gpuattr.report/2");

  // A field the summary needs, malformed or missing (a report of an older gpuattr).
  Json malformed = ReadJson(dir.File("r1.json"));
  malformed["processes"][0]["totals"]["kernels"] = "many";
  WriteFile(dir.File("malformed.json"), malformed.dump());
  refused({dir.File("r0.json"), dir.File("malformed.json")}, 3, "totals.kernels");
  Json older = ReadJson(dir.File("r1.json"));
  older["processes"][0]["coverage"].erase("by_phase_kernel_ns");
  WriteFile(dir.File("older.json"), older.dump());
  refused({dir.File("r0.json"), dir.File("older.json")}, 3, "coverage.by_phase_kernel_ns");

  Json launcher = ReadJson(dir.File("r1.json"));
  launcher["launchers"] = Json::array({{{"pid", "init"}}});
  WriteFile(dir.File("launcher.json"), launcher.dump());
  refused({dir.File("r0.json"), dir.File("launcher.json")}, 3, "a launcher is not");

  // Different attribution settings.
  Import(dir.File("no_inherit.json"), {kRank1}, {"--no-inherit"});
  refused({dir.File("r0.json"), dir.File("no_inherit.json")}, 2, "inherit");
  Import(dir.File("threshold.json"), {kRank1}, {"--coverage-threshold", "0.5"});
  refused({dir.File("r0.json"), dir.File("threshold.json")}, 2, "--coverage-threshold");
  const ProcessResult judged = Merge({"--coverage-threshold", "0.9", "-o", dir.File("judged.json"),
                                      dir.File("r0.json"), dir.File("threshold.json")});
  INFO(judged.err);
  REQUIRE(ExitStatus(judged) == 0);
  CHECK(ReadJson(dir.File("judged.json"))["summary"]["coverage"]["threshold"] == 0.9);

  // Captures of different kinds, unless asked.
  const ProcessResult run =
      Gpuattr({"run", "-q", "-o", dir.File("run.json"), "--", SIMGPU_RUN,
               GPUATTR_SCENARIO_DIR "/nested_ranges.json", "--truth", dir.File("truth.json")});
  INFO(run.err);
  REQUIRE(ExitStatus(run) == 0);
  refused({dir.File("r0.json"), dir.File("run.json")}, 2, "--allow-mixed-captures");
  const ProcessResult mixed = Merge({"--allow-mixed-captures", "-o", dir.File("mixed.json"),
                                     dir.File("r0.json"), dir.File("run.json")});
  INFO(mixed.err);
  REQUIRE(ExitStatus(mixed) == 0);
  REQUIRE(SchemaValid(dir.File("mixed.json")));
  const Json mixed_report = ReadJson(dir.File("mixed.json"));
  CHECK(mixed_report["capture"]["mode"] == "mixed");
  CHECK(mixed_report["capture"]["source"].is_null());
  CHECK(mixed_report["summary"]["processes"] == 2);
}

TEST_CASE("merge: -o - writes the report to stdout and an existing name is kept", "[e2e][merge]") {
  TempDir dir;
  Import(dir.File("r0.json"), {kRank0});
  Import(dir.File("r1.json"), {kRank1});
  const ProcessResult to_file =
      Merge({"-o", dir.File("job.json"), dir.File("r0.json"), dir.File("r1.json")});
  REQUIRE(ExitStatus(to_file) == 0);
  const ProcessResult to_stdout = Merge({"-o", "-", dir.File("r0.json"), dir.File("r1.json")});
  INFO(to_stdout.err);
  REQUIRE(ExitStatus(to_stdout) == 0);
  CHECK(to_stdout.out == test_support::ReadFile(dir.File("job.json")));
  CHECK(Json::parse(to_stdout.out)["summary"]["processes"] == 2);

  const ProcessResult again =
      Merge({"-o", dir.File("job.json"), dir.File("r0.json"), dir.File("r1.json")});
  CHECK(ExitStatus(again) == 4);
  CHECK(again.err.find("--force-overwrite") != std::string::npos);
  const ProcessResult forced = Merge(
      {"--force-overwrite", "-o", dir.File("job.json"), dir.File("r0.json"), dir.File("r1.json")});
  CHECK(ExitStatus(forced) == 0);
  const ProcessResult numbered =
      Merge({"-o", dir.File("job%n.json"), dir.File("r0.json"), dir.File("r1.json")});
  CHECK(ExitStatus(numbered) == 0);
  CHECK(ReadJson(dir.File("job1.json"))["summary"]["processes"] == 2);
}

}  // namespace
}  // namespace gpuattr::e2e
