// The report as a whole: it validates against schemas/report.schema.json (through
// scripts/validate_report.py, as CI does), the summary merges processes, the text summary
// renders, and the file is written atomically.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "report/report_json.h"
#include "report/report_writer.h"
#include "report_test_util.h"
#include "test_files.h"
#include "views/run_summary.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using test_support::ReadFile;
using test_support::TempDir;

// Writes `report` as `name` and returns the validator's exit status: 0 valid, 1 invalid.
int Validate(const Json& report, const TempDir& dir, const std::string& name) {
  const std::string path = dir.File(name);
  REQUIRE(WriteReportAtomically(Report{report, {}}, path).ok());
  const test_support::SchemaCheck check = test_support::ValidateReport(path);
  INFO(check.output);
  return check.exit_code;
}

// Rank 0: kernels, a graph, a memcpy, an orphan; rank 1: one kernel; a third process: NVTX-only.
struct Fixture {
  ProcessTrace rank0;
  ProcessTrace rank1;
  ProcessTrace nvtx_only;
  ProcessTrace silent;  // never said Hello

  Fixture() {
    {
      Feeder feed(rank0);
      Message m;
      m.Add(MakeHello(200, 0, 1)).Str(1, "/usr/bin/python3").Str(2, "step").Str(3, "_Z4gemmPfS_");
      m.Str(4, "forward").Str(5, "NVIDIA H200").Add(wire::Device{0, 5}).Add(CuptiOk());
      m.Add(MakeNode(10, 0, 2)).Add(MakeNode(11, 10, 4)).Add(wire::ThreadName{1, 2});
      m.Push(100, 1, 10)
          .Push(105, 1, 11)
          .Add(MakeLaunch(1, 110, 1, 11))
          .Add(MakeGraphNode(500, 2, 11));
      m.Pop(120, 1, 11).Add(MakeLaunch(3, 130, 1, 10, wire::ApiKind::kGraph));
      m.Add(MakeKernel(1, 200, 230, 1, 3)).Add(MakeKernel(3, 240, 270, 2, 3, 500));
      m.Add(MakeMemcpy(0, 280, 290, 1)).Pop(300, 1, 10);
      m.Add(wire::RangeStart{1, 1, 1, 4, 0, 0}).Add(wire::RangeEnd{2, 1, 1, 0});
      m.Add(wire::Mark{3, 1, 2, 0, 0}).Add(wire::Diagnostics{}).Add(wire::Goodbye{400, 1, 0});
      REQUIRE(feed.Send(m).ok());
    }
    {
      Feeder feed(rank1);
      Message m;
      m.Add(MakeHello(201, 1)).Str(3, "_Z4gemmPfS_").Add(CuptiOk());
      m.Add(MakeLaunch(1, 5, 1, 0)).Add(MakeKernel(1, 10, 20, 0, 3)).Add(wire::Goodbye{50, 1, 0});
      REQUIRE(feed.Send(m).ok());
    }
    {
      Feeder feed(nvtx_only);
      Message m;
      m.Add(MakeHello(202)).Str(2, "load").Add(MakeNode(10, 0, 2)).Push(1, 1, 10).Pop(9, 1, 10);
      m.Add(wire::Goodbye{10, 1, 0});
      REQUIRE(feed.Send(m).ok());
    }
    rank0.Finish();
    rank1.Finish();
    nvtx_only.Finish();
    silent.Finish();
  }

  Json Report() {
    ReportInputs inputs;
    inputs.capture = {"run", {"python3", "train.py"}, "node-a", 1700000000123456789ull, 10000};
    for (ProcessTrace* trace : {&nvtx_only, &rank1, &silent, &rank0}) {
      inputs.processes.push_back(trace->TakeAnalysis());
    }
    inputs.exit_statuses = {{200, 0}, {202, 3}};
    inputs.rejected_connections = 1;
    inputs.rejected_messages = 2;
    return ReportAsWritten(BuildReport(inputs));
  }
};

TEST_CASE("wall-clock times are written in UTC, to the nanosecond or the second",
          "[unit][report]") {
  constexpr uint64_t kRealtimeNs = 1'700'000'000'123'456'789;  // 2023-11-14T22:13:20Z + 0.12 s
  CHECK(IsoUtc(kRealtimeNs) == "2023-11-14T22:13:20.123456789Z");
  CHECK(IsoUtc(5) == "1970-01-01T00:00:00.000000005Z");
  CHECK(UtcSeconds(kRealtimeNs, "%Y%m%dT%H%M%SZ") == "20231114T221320Z");
}

TEST_CASE("a report validates against the schema", "[unit][report]") {
  Fixture fixture;
  const Json report = fixture.Report();
  TempDir dir;
  CHECK(Validate(report, dir, "full.json") == 0);
  CHECK(Validate(ReportFor({}), dir, "empty.json") == 0);

  SECTION("and the validator rejects what breaks the contract") {
    Json wrong_version = report;
    wrong_version["schema_version"] = "gpuattr.report/2";
    CHECK(Validate(wrong_version, dir, "wrong_version.json") == 1);
    Json missing = report;
    missing["processes"][0].erase("loss");
    CHECK(Validate(missing, dir, "missing.json") == 1);
    Json bad_status = report;
    bad_status["processes"][0]["status"] = "finished";
    CHECK(Validate(bad_status, dir, "bad_status.json") == 1);
  }
}

TEST_CASE("the report has the contract's top level and per-process order", "[unit][report]") {
  Fixture fixture;
  const Json report = fixture.Report();
  CHECK(report["schema_version"] == "gpuattr.report/1");
  CHECK(report["tool"]["name"] == "gpuattr");
  CHECK(report["tool"]["version"] == "0.1.0");
  CHECK(report["capture"]["started_at"] == "2023-11-14T22:13:20.123456789Z");
  CHECK(report["capture"]["source"].is_null());
  CHECK(report["capture"]["clock"] == "CLOCK_MONOTONIC");
  CHECK(report["diagnostics"]["rejected_connections"] == 1);
  CHECK(report["diagnostics"]["rejected_messages"] == 2);
  CHECK(report["diagnostics"]["connections_without_hello"] == 1);
  const Json& processes = report["processes"];
  REQUIRE(processes.size() == 3);
  CHECK(processes[0]["pid"] == 200);  // rank 0, rank 1, then no rank
  CHECK(processes[1]["pid"] == 201);
  CHECK(processes[2]["pid"] == 202);
  CHECK(processes[0]["exit_status"] == 0);
  CHECK(processes[1]["exit_status"].is_null());
  CHECK(processes[2]["exit_status"] == 3);
  CHECK(processes[2]["status"] == "host_only");
  CHECK(processes[2]["refusals"].empty());
  // step/forward holds both kernels (one direct, one captured); the memcpy has no launch.
  CHECK(processes[0]["phases"]["forward_ns"] == 60);
  CHECK(processes[0]["phases"]["other_ns"] == 0);
  CHECK(processes[0]["phases"]["recompute_fraction"] == 0.0);
  CHECK(processes[0]["steps"].is_null());  // one instance of `step`: no step range
  CHECK(processes[0]["steps_reason"].is_string());
  CHECK(processes[0]["coverage"]["by_phase"]["forward"] == 1.0);
  CHECK(processes[0]["coverage"]["by_phase"]["backward"].is_null());
  CHECK(processes[2]["phases"]["forward_ns"].is_null());  // device time not measured
  CHECK(processes[2]["coverage"]["by_phase"]["forward"].is_null());
  for (const Json& process : processes) {
    if (!process["devices"].is_null()) CheckReconciliation(process);
  }
}

TEST_CASE("the summary merges processes and lists ranks", "[unit][report]") {
  Fixture fixture;
  const Json summary = fixture.Report()["summary"];
  CHECK(summary["processes"] == 3);
  CHECK(summary["statuses"]["complete"] == 2);
  CHECK(summary["statuses"]["host_only"] == 1);
  CHECK(summary["statuses"]["refused"] == 0);
  CHECK(summary["totals"]["kernel_ns"] == 30 + 30 + 10);
  CHECK(summary["totals"]["memcpy_ns"] == 10);
  CHECK(summary["totals"]["kernels"] == 3);
  REQUIRE(summary["families"].size() == 1);
  CHECK(summary["families"][0]["family"] == "gemm");
  CHECK(summary["families"][0]["kernels"] == 3);
  CHECK(summary["families"][0]["share"] == 1.0);
  // rank 0: both kernels attributed; rank 1: its kernel had no range.
  CHECK(summary["coverage"]["attributed_fraction"].get<double>() == Approx(60.0 / 70.0));
  const Json& ranks = summary["ranks"];
  REQUIRE(ranks.size() == 3);
  CHECK(ranks[0]["rank"] == 0);
  CHECK(ranks[0]["busy_ns"] == 30 + 30 + 10);
  CHECK(ranks[0]["idle_ns"] == 20);
  CHECK(ranks[1]["coverage"] == 0.0);
  CHECK(ranks[2]["rank"].is_null());
  CHECK(ranks[2]["busy_ns"].is_null());
  CHECK(ranks[2]["coverage"].is_null());
}

TEST_CASE("the text summary names processes, devices, passes and families", "[unit][report]") {
  Fixture fixture;
  const std::string text = RenderSummary(fixture.Report());
  using Catch::Contains;
  CHECK_THAT(text, Contains("pid 200"));
  CHECK_THAT(text, Contains("status host_only"));
  CHECK_THAT(text, Contains("host only: CUDA never started in this process"));
  CHECK_THAT(text, !Contains("refused:"));
  CHECK_THAT(text, Contains("step/forward"));
  CHECK_THAT(text, Contains("gemm"));
  CHECK_THAT(text, Contains("device time: not measured"));
  CHECK_THAT(RenderSummary(Json::object()), Contains("no traced process"));
  CHECK_THAT(RenderSummary(Json::array()), Contains("no traced process"));
}

TEST_CASE("a capture without any range advises how to get ranges, in the report and the summary",
          "[unit][report]") {
  // rank1's process launched a kernel inside no range: the only process, so no range at all.
  Fixture fixture;
  const Json without_ranges = ReportFor({&fixture.rank1});
  REQUIRE(without_ranges["advice"].size() == 1);
  const Json& advice = without_ranges["advice"][0];
  CHECK(advice["code"] == "no_ranges");
  using Catch::Contains;
  CHECK_THAT(advice["remedy"].get<std::string>(), Contains("--pytorch modules"));
  CHECK_THAT(advice["remedy"].get<std::string>(), Contains("nvtxRangePushA"));
  const std::string summary = RenderSummary(without_ranges);
  CHECK_THAT(summary, Contains("advice (no_ranges)"));
  CHECK_THAT(summary, Contains("remedy: PyTorch"));
  TempDir dir;
  CHECK(Validate(without_ranges, dir, "advice.json") == 0);

  // No process at all: the same advice.
  CHECK(ReportFor({})["advice"].size() == 1);
  // A process with a range (rank0's steps, nvtx_only's host range) needs no advice.
  const Json with_ranges = ReportFor({&fixture.rank0, &fixture.nvtx_only});
  CHECK(with_ranges["advice"].empty());
  CHECK_THAT(RenderSummary(with_ranges), !Contains("advice ("));
}

TEST_CASE("the written text is dump(2) of the whole report with the step rows in place",
          "[unit][report]") {
  // Process 1 has 20,000 rows (about 9 MB of text: many 1 MiB pieces), process 2 no steps,
  // process 3 rows without device time.
  const Json steps = {{"range", "step \"quoted\""}, {"rows", Json::array()}, {"summary", 5}};
  Report report;
  report.without_step_rows = {{"schema_version", "gpuattr.report/1"},
                              {"processes", Json::array({{{"pid", 1}, {"steps", steps}},
                                                         {{"pid", 2}, {"steps", nullptr}},
                                                         {{"pid", 3}, {"steps", steps}}})},
                              {"summary", {{"ranks", Json::array()}}}};
  std::vector<StepRow> rows;
  for (uint64_t i = 0; i < 20000; ++i) {
    StepRow row;
    row.index = i;
    row.name = "step \"quoted\"";
    row.start_ns = 1000 * i;
    row.end_ns = 1000 * i + 900;
    row.phases.ns[static_cast<size_t>(Phase::kForward)] = 300;
    row.busy_ns = 400;
    rows.push_back(row);
  }
  report.step_rows = {{true, true, std::make_shared<std::vector<StepRow>>(rows)},
                      {true, false, nullptr},
                      {false, false, std::make_shared<std::vector<StepRow>>(1, rows[0])}};

  Json whole = report.without_step_rows;
  for (size_t p = 0; p < 3; ++p) {
    if (report.step_rows[p].rows == nullptr) continue;
    for (const StepRow& row : *report.step_rows[p].rows) {
      whole["processes"][p]["steps"]["rows"].push_back(
          StepRowJson(row, report.step_rows[p].device_measured, report.step_rows[p].work_counted));
    }
  }
  const std::string expected = whole.dump(2) + "\n";
  CHECK(SerializeReport(report) == expected);
  TempDir dir;
  const std::string path = dir.File("report.json");
  REQUIRE(WriteReportAtomically(report, path).ok());
  CHECK(ReadFile(path) == expected);

  const Json read = Json::parse(expected);
  REQUIRE(read["processes"][0]["steps"]["rows"].size() == 20000);
  CHECK(read["processes"][0]["steps"]["rows"][19999]["gaps_ns"] == 500);
  CHECK(read["processes"][2]["steps"]["rows"][0]["host_ns"] == 900);
  CHECK(read["processes"][2]["steps"]["rows"][0]["busy_ns"].is_null());
}

TEST_CASE("reports are written atomically", "[unit][report]") {
  TempDir dir;
  const std::string path = dir.path() + "/report.json";
  SECTION("a new file, then a replacement; no temporary file left") {
    REQUIRE(WriteReportAtomically(Report{Json{{"a", 1}}, {}}, path).ok());
    REQUIRE(WriteReportAtomically(Report{Json{{"a", 2}}, {}}, path).ok());
    const Json read = Json::parse(ReadFile(path), nullptr, false);
    REQUIRE_FALSE(read.is_discarded());
    CHECK(read["a"] == 2);
    CHECK(dir.Entries() == std::vector<std::string>{"report.json"});
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0644);
  }
  SECTION("a missing directory fails with a status and leaves nothing") {
    const Status status =
        WriteReportAtomically(Report{Json{{"a", 1}}, {}}, dir.path() + "/missing/report.json");
    CHECK(status.code() == StatusCode::kUnavailable);  // exit 4, as every unwritable output
    CHECK(status.message().find("missing") != std::string::npos);
    CHECK(dir.Entries().empty());
  }
  SECTION("a rename onto a directory fails and removes the temporary file") {
    REQUIRE(::mkdir(path.c_str(), 0700) == 0);
    CHECK_FALSE(WriteReportAtomically(Report{Json{{"a", 1}}, {}}, path).ok());
    CHECK(dir.Entries() == std::vector<std::string>{"report.json"});
    ::rmdir(path.c_str());
  }
  SECTION("invalid UTF-8 never makes writing throw") {
    const Report invalid_utf8{Json{{"name", std::string("bad \xFF")}}, {}};
    REQUIRE(WriteReportAtomically(invalid_utf8, path).ok());
    CHECK_FALSE(Json::parse(ReadFile(path), nullptr, false).is_discarded());
  }
  CHECK(WriteReportAtomically(Report{Json::object(), {}}, "").code() ==
        StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuattr::collector::testing
