// LoadReport, StepRowColumns and WriteLoadedReport (report/report_reader.h,
// report/step_row_columns.h, report/report_writer.h): a report read back is the document
// nlohmann's DOM parser gives of the file, with each process's step rows in columns that give
// every row back as the file held it, and it writes back as dump(2) of that document; the limits
// and the refusals.
#include "report/report_reader.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <utility>

#include "report/report_writer.h"
#include "report/step_row_columns.h"
#include "test_files.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;
using test_support::TempDir;

// The file's document as nlohmann's DOM parser reads it, with every processes[i].steps.rows
// emptied: what LoadedReport::document() must be.
Json WithoutRows(Json document) {
  if (!document.contains("processes") || !document["processes"].is_array()) return document;
  for (Json& process : document["processes"]) {
    if (process.is_object() && process.contains("steps") && process["steps"].is_object() &&
        process["steps"].contains("rows") && process["steps"]["rows"].is_array()) {
      process["steps"]["rows"] = Json::array();
    }
  }
  return document;
}

// Checks everything a reader can see of `text` read from a file against its DOM parse.
void CheckReadsAsItsDom(const std::string& text) {
  TempDir dir;
  test_support::WriteFile(dir.File("r.json"), text);
  const Json dom = Json::parse(text);
  StatusOr<LoadedReport> loaded = LoadReport(dir.File("r.json"));
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(loaded->document() == WithoutRows(dom));
  const Json& processes = dom["processes"];
  for (size_t i = 0; i < processes.size(); ++i) {
    const Json& rows = Field(Field(processes[i], "steps"), "rows");
    const StepRowColumns& columns = loaded->StepRows(i);
    REQUIRE(columns.size() == (rows.is_array() ? rows.size() : 0));
    if (!rows.is_array()) continue;
    for (size_t r = 0; r < rows.size(); ++r) {
      CHECK(columns.Row(r) == rows[r]);
      for (const char* key : {"index", "name", "busy_ns", "recompute_fraction", "extra"}) {
        CHECK(columns.Member(r, key) == Field(rows[r], key));
      }
    }
  }
  const LoadedReport from_memory = LoadedReport::FromDocument(dom);
  CHECK(from_memory.document() == loaded->document());
  // Written back (`report --json`): dump(2)'s text of the whole, rows from their columns.
  REQUIRE(WriteLoadedReport(*loaded, dir.File("back.json"), ExistingFile::kReplace).ok());
  CHECK(test_support::ReadFile(dir.File("back.json")) ==
        dom.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  CHECK(std::move(*loaded).TakeDocumentWithRows() == dom);
}

Json ReportWithRows(Json rows) {
  return {{"schema_version", "gpuattr.report/1"},
          {"processes",
           {{{"pid", 1}, {"steps", {{"range", "step"}, {"rows", std::move(rows)}}}},
            {{"pid", 2}, {"steps", nullptr}}}}};
}

TEST_CASE("a report read back is its DOM with the step rows in columns: the goldens",
          "[unit][report]") {
  for (const char* name : {"nested_ranges", "warmup_steps", "four_ranks", "fault_crash",
                           "autograd_threads", "graph_replay"}) {
    INFO(name);
    const std::string text =
        test_support::ReadFile(std::string(GPUATTR_GOLDEN_DIR) + "/" + name + "/report.json");
    CheckReadsAsItsDom(text);
    // A report this gpuattr wrote reads back and writes out to the same bytes.
    TempDir dir;
    test_support::WriteFile(dir.File("r.json"), text);
    StatusOr<LoadedReport> loaded = LoadReport(dir.File("r.json"));
    REQUIRE(loaded.ok());
    REQUIRE(WriteLoadedReport(*loaded, dir.File("back.json"), ExistingFile::kReplace).ok());
    CHECK(test_support::ReadFile(dir.File("back.json")) == text);
  }
}

TEST_CASE("step rows of any shape come back as the file held them", "[unit][report]") {
  const Json rows = Json::parse(R"([
    {"index": 0, "name": "step", "busy_ns": 18446744073709551615, "recompute_fraction": 0.25},
    {"index": -3, "name": "other", "busy_ns": null, "recompute_fraction": null, "extra": [1, {"a": 2}]},
    {"index": 2, "name": {"nested": true}, "busy_ns": 1.5, "forward_ns": true, "extra": "x"},
    7,
    [1, 2],
    {},
    {"busy_ns": [1], "busy_ns": 4, "name": "step", "name": ["again"]}
  ])");
  CheckReadsAsItsDom(ReportWithRows(rows).dump(2));
  CheckReadsAsItsDom(ReportWithRows(rows).dump());  // and without whitespace

  const LoadedReport loaded = LoadedReport::FromDocument(ReportWithRows(rows));
  const StepRowColumns& columns = loaded.StepRows(0);
  const size_t busy = *StepRowColumns::ColumnOf("busy_ns");
  CHECK(columns.Number(0, busy) == 18446744073709551615.0);
  CHECK_FALSE(columns.Number(1, busy));  // null
  CHECK(columns.Number(2, busy) == 1.5);
  CHECK_FALSE(columns.Number(3, busy));  // the row is not an object
  CHECK(columns.Number(6, busy) == 4);   // a key met twice: the last value
  CHECK(columns.Member(6, "name") == Json::array({"again"}));
  CHECK(columns.Member(3, "index").is_null());
  CHECK(loaded.StepRows(1).empty());
  CHECK(loaded.StepRows(99).empty());
  CHECK_FALSE(StepRowColumns::ColumnOf("extra"));
}

TEST_CASE("a member met twice replaces the first, rows and all, as in a DOM", "[unit][report]") {
  const std::string row = R"({"index": 1, "busy_ns": 5})";
  CheckReadsAsItsDom(R"({"schema_version": "gpuattr.report/1",
    "processes": [{"steps": {"rows": [)" +
                     row + R"(]}}],
    "processes": [{"steps": {"rows": [)" +
                     row + "," + row + R"(], "rows": [)" + row + R"(]}},
                  {"steps": {"rows": [)" +
                     row + R"(]}, "steps": {"range": "s"}},
                  {"steps": {"rows": [)" +
                     row + R"(]}, "steps": {"rows": 3}}]})");
}

TEST_CASE("a report nested deeper than the limit, not JSON, or not a report is refused",
          "[unit][report]") {
  TempDir dir;
  const auto refusal = [&](const std::string& text) {
    test_support::WriteFile(dir.File("r.json"), text);
    StatusOr<LoadedReport> loaded = LoadReport(dir.File("r.json"));
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == StatusCode::kDataLoss);
    return loaded.status().message();
  };
  const auto nested = [](size_t depth) {  // a value inside `depth` arrays
    return R"({"schema_version": "gpuattr.report/1", "x": )" + std::string(depth - 1, '[') + "0" +
           std::string(depth - 1, ']') + "}";
  };
  test_support::WriteFile(dir.File("deep.json"), nested(kMaxReportDepth));
  CHECK(LoadReport(dir.File("deep.json")).ok());
  CHECK_THAT(refusal(nested(kMaxReportDepth + 1)), Catch::Contains("nested deeper than 512"));
  CHECK_THAT(refusal(R"({"schema_version": "gpuattr.report/1"} x)"), Catch::Contains("not JSON"));
  CHECK_THAT(refusal("{\"schema_version\": \"gpuattr.report/1\", \"s\": \"\xff\"}"),
             Catch::Contains("not JSON"));
  CHECK_THAT(refusal("[1, 2]"), Catch::Contains("not a gpuattr report"));
  CHECK_THAT(refusal(R"({"schema_version": "gpuattr.report/2"})"),
             Catch::Contains("has schema_version \"gpuattr.report/2\""));
  StatusOr<LoadedReport> directory = LoadReport(dir.path());
  REQUIRE_FALSE(directory.ok());
  CHECK_THAT(directory.status().message(), Catch::Contains("Is a directory"));
  StatusOr<LoadedReport> missing = LoadReport(dir.File("none.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gpuattr::collector
