// The report's multi-process parts (docs/attribution.md §Ranks): the per-rank table's step time,
// the slowest and fastest rank and the straggler spread, each process's parent, and the launchers
// (parents gpuattr reaped that never connected), on hand-fed traces; and what `gpuattr merge`
// builds on: process entries read back, the summary rebuilt from them, the streamed text.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "report/process_reader.h"
#include "report/report_json.h"
#include "report/report_writer.h"
#include "report/summary.h"
#include "report_test_util.h"
#include "test_files.h"
#include "views/report_view.h"
#include "views/run_summary.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using test_support::TempDir;

// A traced process: one top-level `step` range per entry of `step_ns` (its host duration), each
// with a 10 ns kernel, then Goodbye.
void Feed(ProcessTrace& trace, uint32_t pid, uint32_t ppid, int32_t rank,
          const std::vector<uint64_t>& step_ns) {
  Feeder feed(trace);
  Message m;
  wire::Hello hello = MakeHello(pid, rank);
  hello.ppid = ppid;
  m.Add(hello).Str(1, "step").Str(2, "_Z4gemmPfS_").Add(MakeNode(10, 0, 1)).Add(CuptiOk());
  uint64_t t = 100;
  uint32_t correlation = 1;
  for (uint64_t duration : step_ns) {
    m.Push(t, 1, 10).Add(MakeLaunch(correlation, t + 1, 1, 10));
    m.Add(MakeKernel(correlation, t + 2, t + 12, 7, 2)).Pop(t + duration, 1, 10);
    t += duration + 100;
    ++correlation;
  }
  m.Add(wire::Goodbye{t, 1, 0});
  REQUIRE(feed.Send(m).ok());
}

Json Report(const std::vector<ProcessTrace*>& traces,
            const std::map<uint32_t, int>& exit_statuses = {}) {
  ReportInputs inputs;
  inputs.capture = {"run", {"torchrun", "train.py"}, "node-a", 1700000000123456789ull, 10000};
  for (ProcessTrace* trace : traces) {
    inputs.processes.push_back(trace->TakeAnalysis());
  }
  inputs.exit_statuses = exit_statuses;
  return ReportAsWritten(BuildReport(inputs));
}

bool SchemaValid(const Json& report) {
  TempDir dir;
  const std::string path = dir.File("report.json");
  REQUIRE(WriteReportAtomically(collector::Report{report, {}}, path).ok());
  const test_support::SchemaCheck check = test_support::ValidateReport(path);
  INFO(check.output);
  return check.valid;
}

TEST_CASE("the rank table: median step time, slowest, fastest and straggler spread",
          "[unit][report]") {
  ProcessTrace rank0, rank1, rank2, rank3;
  Feed(rank0, 300, 100, 0, {100, 300, 200});  // lower median 200
  Feed(rank1, 301, 100, 1, {400, 500});       // lower median 400
  Feed(rank2, 302, 100, 2, {900});            // one instance: no step range, no step time
  Feed(rank3, 303, 100, 3, {200, 200, 200});  // ties with rank 0, which comes first
  const Json report = Report({&rank3, &rank2, &rank1, &rank0}, {{100, 0}});
  CHECK(SchemaValid(report));
  const Json& summary = report["summary"];
  const Json& ranks = summary["ranks"];
  REQUIRE(ranks.size() == 4);
  CHECK(ranks[0]["rank"] == 0);
  CHECK(ranks[0]["local_rank"] == 0);
  CHECK(ranks[0]["pid"] == 300);
  CHECK(ranks[0]["ppid"] == 100);
  CHECK(ranks[0]["step_ns"] == 200);
  CHECK(ranks[0]["step_ns"] == report["processes"][0]["steps"]["summary"]["host_ns"]);
  CHECK(ranks[1]["step_ns"] == 400);
  CHECK(ranks[2]["step_ns"].is_null());
  CHECK(ranks[2]["busy_ns"] == 10);  // measured all the same
  CHECK(ranks[3]["step_ns"] == 200);
  CHECK(summary["slowest"] == Json({{"rank", 1}, {"pid", 301}, {"step_ns", 400}}));
  CHECK(summary["fastest"] == Json({{"rank", 0}, {"pid", 300}, {"step_ns", 200}}));
  CHECK(summary["straggler_spread"] == 1.0);

  const std::string text = RenderSummary(report);
  using Catch::Contains;
  CHECK_THAT(text, Contains("step time: slowest rank 1 (pid 301) 0.000 ms, fastest rank 0"));
  CHECK_THAT(text, Contains("spread 100.0%"));
  CHECK_THAT(text, Contains("launcher pid 100 (exit 0, not traced): children 300, 301, 302, 303"));

  // The report view's rank table: per rank the median step, busy, idle and exposed
  // communication (measured: 0, no communication kernels here), then the straggler.
  CHECK(ranks[0]["communication_exposed_ns"] == 0);
  const std::string view =
      RenderReportView(LoadedReport::FromDocument(report), ReportViewOptions{});
  CHECK_THAT(view, Contains("step ms") && Contains("exposed comm ms"));
  CHECK_THAT(view, Contains("straggler: rank 1 (median step 0.000 ms) against rank 0 (0.000 ms): "
                            "spread 100.00%"));
}

TEST_CASE("with fewer than two processes with steps there is no straggler", "[unit][report]") {
  ProcessTrace rank0, rank2;
  Feed(rank0, 300, 100, 0, {100, 300, 200});
  Feed(rank2, 302, 100, 2, {900});
  const Json report = Report({&rank0, &rank2});
  CHECK(SchemaValid(report));
  CHECK(report["summary"]["ranks"][0]["step_ns"] == 200);
  CHECK(report["summary"]["slowest"].is_null());
  CHECK(report["summary"]["fastest"].is_null());
  CHECK(report["summary"]["straggler_spread"].is_null());
  CHECK_THAT(RenderSummary(report), Catch::Contains("fewer than two processes with steps"));
}

TEST_CASE("rank rows read from a merge's inputs may lack members: the straggler reads them as null",
          "[unit][report][merge]") {
  // A merge takes each input's summary.ranks row as the file held it. A row without "rank" once
  // reached the straggler's const operator[] (undefined behaviour; the merge fuzz smoke crashed).
  SummaryBuilder summary;
  ProcessAnalysis analysis;
  summary.Add(analysis, Json{{"pid", 7}, {"step_ns", 300}});
  summary.Add(analysis, Json{{"pid", 8}, {"rank", 1}, {"step_ns", 100}});
  summary.Add(analysis, Json{{"pid", 9}, {"step_ns", -5}});  // not a step time: skipped
  const Json built = std::move(summary).Finish(0.95);
  CHECK(built["slowest"] == Json({{"rank", nullptr}, {"pid", 7}, {"step_ns", 300}}));
  CHECK(built["fastest"] == Json({{"rank", 1}, {"pid", 8}, {"step_ns", 100}}));
  CHECK(built["straggler_spread"] == 2.0);
}

TEST_CASE("launchers are reaped parents that never connected, each listed once", "[unit][report]") {
  // 100: the command, a launcher of 300 and 301; 300 also forked 302 (a traced parent);
  // 303's parent 50 was not reaped by gpuattr; 999 was reaped but is nobody's parent.
  ProcessTrace a, b, c, d;
  Feed(a, 300, 100, 0, {100, 100});
  Feed(b, 301, 100, 1, {100, 100});
  Feed(c, 302, 300, -1, {100, 100});
  Feed(d, 303, 50, -1, {100, 100});
  const Json report = Report({&d, &c, &b, &a}, {{100, 3}, {300, 0}, {999, 1}});
  CHECK(SchemaValid(report));
  const Json& launchers = report["launchers"];
  REQUIRE(launchers.size() == 1);
  CHECK(launchers[0] ==
        Json({{"host", "node-a"}, {"pid", 100}, {"exit_status", 3}, {"children", {300, 301}}}));
  REQUIRE(report["processes"].size() == 4);  // no row for the launcher
  std::map<uint32_t, Json> parents;
  for (const Json& process : report["processes"]) parents[process["pid"]] = process["parent"];
  CHECK(parents[300] == Json({{"pid", 100}, {"kind", "launcher"}}));
  CHECK(parents[301] == Json({{"pid", 100}, {"kind", "launcher"}}));
  CHECK(parents[302] == Json({{"pid", 300}, {"kind", "traced"}}));
  CHECK(parents[303] == Json({{"pid", 50}, {"kind", "outside"}}));
}

TEST_CASE("a summary rebuilt from the written processes is the report's own",
          "[unit][report][merge]") {
  // What `gpuattr merge` does: each process entry read back (process_reader.h) and added to a
  // SummaryBuilder with its rank row gives the summary BuildReport gave from the analyses.
  ProcessTrace a, b, c;
  Feed(a, 300, 100, 0, {100, 250, 175});
  Feed(b, 301, 100, 1, {400, 90});
  Feed(c, 302, 300, -1, {60});
  const Json report = Report({&c, &b, &a});
  SummaryBuilder rebuilt;
  for (size_t i = 0; i < report["processes"].size(); ++i) {
    StatusOr<ProcessAnalysis> terms = SummaryTermsOf(report["processes"][i], "test");
    INFO(terms.status().message());
    REQUIRE(terms.ok());
    rebuilt.Add(*terms, report["summary"]["ranks"][i]);
  }
  const Json summary = std::move(rebuilt).Finish(report["summary"]["coverage"]["threshold"]);
  CHECK(summary == report["summary"]);
  // Three processes' launch samples of one family: the summary keeps no median.
  const Json& latency = report["summary"]["families"][0]["launch"]["latency_ns"];
  CHECK(latency["count"] == 6);
  CHECK(latency["median"].is_null());
  CHECK(report["processes"][0]["families"][0]["launch"]["latency_ns"]["median"].is_number());
}

TEST_CASE("a process entry that is not a report's is refused with the field named",
          "[unit][report][merge]") {
  ProcessTrace a;
  Feed(a, 300, 100, 0, {100});
  const Json process = Report({&a})["processes"][0];
  auto refusal = [](const Json& entry) {
    StatusOr<ProcessAnalysis> terms = SummaryTermsOf(entry, "r.json: processes[0]");
    REQUIRE_FALSE(terms.ok());
    CHECK(terms.status().code() == StatusCode::kDataLoss);
    return terms.status().message();
  };
  Json negative = process;
  negative["totals"]["kernel_ns"] = -5;
  CHECK_THAT(refusal(negative), Catch::StartsWith("r.json: processes[0]: "
                                                  "totals.kernel_ns is not"));
  Json cut = process;
  cut["families"][0]["shapes"][0]["grid"] = {1, 2};
  CHECK_THAT(refusal(cut), Catch::Contains("families[0].shapes[0].grid"));
  Json status = process;
  status["status"] = "finished";
  CHECK_THAT(refusal(status), Catch::Contains("status is none of"));
  Json older = process;
  older["families"][0]["launch"]["latency_ns"].erase("total");
  CHECK_THAT(refusal(older), Catch::Contains("families[0].launch.latency_ns.total"));
  Json wide = process;
  wide["families"][0]["shapes"][0]["shared_memory_bytes"] = uint64_t{1} << 33;
  CHECK_THAT(refusal(wide), Catch::Contains("does not fit 32 bits"));
  // Not measured: nothing but the status and the null totals is read.
  Json unmeasured = process;
  unmeasured["totals"]["kernel_ns"] = nullptr;
  unmeasured["families"] = nullptr;
  StatusOr<ProcessAnalysis> terms = SummaryTermsOf(unmeasured, "r.json");
  REQUIRE(terms.ok());
  CHECK_FALSE(terms->device_measured);
}

TEST_CASE("a streamed report is the text of the whole DOM", "[unit][report][merge]") {
  ProcessTrace a, b;
  Feed(a, 300, 100, 0, {100, 250});
  Feed(b, 301, 100, 1, {400});
  const Json report = Report({&a, &b}, {{100, 0}});
  TempDir dir;
  for (bool with_processes : {true, false}) {
    Json whole = report;
    if (!with_processes) whole["processes"] = Json::array();
    Json before;
    Json after;
    for (auto member = whole.begin(); member != whole.end(); ++member) {
      if (member.key() < "processes") before[member.key()] = member.value();
      if (member.key() > "processes") after[member.key()] = member.value();
    }
    const std::string path = dir.File(with_processes ? "streamed.json" : "empty.json");
    StatusOr<std::unique_ptr<StreamedReport>> stream =
        StreamedReport::Open(path, ExistingFile::kRefuse);
    REQUIRE(stream.ok());
    (*stream)->Begin(before);
    for (const Json& process : whole["processes"]) (*stream)->AddProcess(process);
    REQUIRE((*stream)->Finish(after).ok());
    CHECK(test_support::ReadFile(path) == SerializeReport(collector::Report{whole, {}}));
  }
}

TEST_CASE("ISO-8601 UTC times read back to the nanosecond", "[unit][report]") {
  for (uint64_t ns : {uint64_t{0}, uint64_t{1700000000123456789}, uint64_t{951782400000000001}}) {
    CHECK(ParseIsoUtc(IsoUtc(ns)) == ns);
  }
  CHECK(ParseIsoUtc("2023-04-28T23:51:37.2267Z") == uint64_t{1682725897226700000});
  CHECK_FALSE(ParseIsoUtc("2023-04-28T23:51:37Z").has_value());  // IsoUtc always has a fraction
  CHECK_FALSE(ParseIsoUtc("2023-04-28T23:51:37.1Z trailing").has_value());
  CHECK_FALSE(ParseIsoUtc("yesterday").has_value());
}

}  // namespace
}  // namespace gpuattr::collector::testing
