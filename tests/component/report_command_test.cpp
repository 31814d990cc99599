// `gpuattr report` as a user runs it: on a report that `gpuattr run` wrote for a simulated
// scenario, and on files that are not reports. GPUATTR_BINARY, SIMGPU_RUN and GPUATTR_SOURCE_DIR
// come from tests/component/CMakeLists.txt.
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::component {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;
using test_support::WriteFile;

std::vector<std::string> Gpuattr(std::vector<std::string> args) {
  args.insert(args.begin(), GPUATTR_BINARY);
  return args;
}

std::string Ms(const json& ns) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.3f", ns.get<double>() / 1e6);
  return out;
}

// nested_ranges.json under `gpuattr run` on the simulated GPU; the report's path.
std::string NestedRangesReport(const TempDir& dir) {
  const std::string report = dir.File("report.json");
  const ProcessResult run =
      RunProcess(Gpuattr({"run", "--quiet", "-o", report, "--", SIMGPU_RUN,
                          std::string(GPUATTR_SOURCE_DIR) + "/tests/scenarios/nested_ranges.json",
                          "--truth", dir.File("truth.json")}));
  INFO("gpuattr run stderr: " << run.err);
  REQUIRE(run.exited);
  REQUIRE(run.exit_code == 0);
  return report;
}

// The pass named `name` anywhere in the tree under `passes`, or null.
const json* FindPass(const json& passes, const std::string& name) {
  for (const json& pass : passes) {
    if (pass["name"] == name) return &pass;
    if (const json* found = FindPass(pass["children"], name)) return found;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("gpuattr report shows the passes, families and device time of a run", "[report]") {
  TempDir dir;
  const std::string report_path = NestedRangesReport(dir);
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];

  const ProcessResult shown = RunProcess(Gpuattr({"report", report_path}));
  INFO("stdout:\n" << shown.out << "\nstderr:\n" << shown.err);
  REQUIRE(shown.exited);
  CHECK(shown.exit_code == 0);
  CHECK(shown.err.empty());
  CHECK_THAT(shown.out, Catch::Contains("process " + process["pid"].dump()));
  for (const char* name : {"step", "forward", "backward", "layer1", "layer2"}) {
    const json* pass = FindPass(process["passes"], name);
    REQUIRE(pass != nullptr);
    // name, self, total, busy on one line, in the report's numbers.
    CHECK_THAT(shown.out, Catch::Matches("(.|\\n)*\\n +" + std::string(name) + " +" +
                                         Ms((*pass)["device"]["self_ns"]) + " +" +
                                         Ms((*pass)["device"]["total_ns"]) + " +" +
                                         Ms((*pass)["device"]["busy_ns"]) + " (.|\\n)*"));
  }
  for (const json& family : process["families"]) {
    CHECK_THAT(shown.out, Catch::Contains(family["family"].get<std::string>()));
    CHECK_THAT(shown.out, Catch::Contains(Ms(family["total_ns"])));
  }
  const json& device = process["devices"][0];
  CHECK_THAT(shown.out, Catch::Contains("busy " + Ms(device["busy_ns"]) + " ms, idle " +
                                        Ms(device["idle_ns"]) + " ms"));
  CHECK_THAT(shown.out, Catch::Contains("coverage: 100.00% of kernel time attributed"));
  CHECK(shown.out.find("n/a ms") == std::string::npos);  // every time was measured here
}

TEST_CASE("gpuattr report --json re-emits the report", "[report]") {
  TempDir dir;
  const std::string report_path = NestedRangesReport(dir);
  const ProcessResult shown = RunProcess(Gpuattr({"report", "--json", report_path}));
  INFO("stderr: " << shown.err);
  REQUIRE(shown.exited);
  CHECK(shown.exit_code == 0);
  const json reemitted = json::parse(shown.out, nullptr, /*allow_exceptions=*/false);
  REQUIRE_FALSE(reemitted.is_discarded());
  CHECK(reemitted == ReadJson(report_path));
}

TEST_CASE("gpuattr report --process selects one process and an absent pid is a usage error",
          "[report]") {
  TempDir dir;
  const std::string report_path = NestedRangesReport(dir);
  const std::string pid = ReadJson(report_path)["processes"][0]["pid"].dump();
  const ProcessResult one = RunProcess(Gpuattr({"report", "--process", pid, report_path}));
  REQUIRE(one.exited);
  CHECK(one.exit_code == 0);
  CHECK_THAT(one.out, Catch::Contains("process " + pid));

  const ProcessResult none = RunProcess(Gpuattr({"report", "--process", "1", report_path}));
  REQUIRE(none.exited);
  CHECK(none.exit_code == 2);
  CHECK(none.out.empty());
  CHECK_THAT(none.err, Catch::Contains("gpuattr report: no process 1 in") &&
                           Catch::Contains("its processes: " + pid));
}

TEST_CASE("gpuattr report refuses what is not a gpuattr.report/1 file with exit 3", "[report]") {
  TempDir dir;
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "is not JSON"},
      {"garbage",
       "\x7f"
       "ELF\x01\x02 not json at all {",
       "is not JSON"},
      {"truncated", R"({"schema_version": "gpuattr.report/1", "processes": [)", "is not JSON"},
      {"array", "[1, 2, 3]", "is JSON but not a gpuattr report"},
      {"no version", R"({"processes": []})", "is JSON but not a gpuattr report"},
      {"version not a string", R"({"schema_version": 1})", "is JSON but not a gpuattr report"},
      {"other version", R"({"schema_version": "gpuattr.report/2"})",
       "has schema_version \"gpuattr.report/2\"; this gpuattr reads gpuattr.report/1"},
      {"too deep", std::string(100000, '[') + std::string(100000, ']'), "nested deeper than"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string path = dir.File("bad.json");
      WriteFile(path, c.bytes);
      const ProcessResult result = RunProcess(Gpuattr({"report", path}));
      INFO("stderr: " << result.err);
      REQUIRE(result.exited);  // not killed by a signal
      CHECK(result.exit_code == 3);
      CHECK(result.out.empty());
      CHECK_THAT(result.err, Catch::StartsWith("gpuattr report: ") && Catch::Contains(c.message));
    }
  }
  SECTION("a missing file") {
    const ProcessResult result = RunProcess(Gpuattr({"report", dir.File("missing.json")}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("cannot read report") &&
                               Catch::Contains("No such file or directory"));
  }
  SECTION("a directory") {
    const ProcessResult result = RunProcess(Gpuattr({"report", dir.path()}));
    REQUIRE(result.exited);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("Is a directory"));
  }
}

TEST_CASE("gpuattr report reads values up to 512 containers deep, and refuses one deeper",
          "[report]") {
  TempDir dir;
  // The 1 sits inside the top-level object and `arrays` arrays: depth arrays + 1. Brackets inside
  // a string do not count.
  auto report_with = [](size_t arrays) {
    return R"({"schema_version": "gpuattr.report/1", "processes": [], "note": "[[[[{{{{\"[[",)"
           R"( "x": )" +
           std::string(arrays, '[') + "1" + std::string(arrays, ']') + "}";
  };
  const std::string path = dir.File("deep.json");
  WriteFile(path, report_with(511));
  const ProcessResult deepest = RunProcess(Gpuattr({"report", path}));
  INFO("stderr: " << deepest.err);
  CHECK(deepest.exit_code == 0);
  WriteFile(path, report_with(512));
  const ProcessResult deeper = RunProcess(Gpuattr({"report", path}));
  CHECK(deeper.exit_code == 3);
  CHECK_THAT(deeper.err, Catch::Contains("is nested deeper than 512 levels"));
}

TEST_CASE("gpuattr report renders a gpuattr.report/1 file with wrong fields as n/a", "[report]") {
  TempDir dir;
  const std::string path = dir.File("odd.json");
  WriteFile(path, R"({"schema_version": "gpuattr.report/1", "summary": 5,
                      "processes": [{"pid": "abc", "passes": [{"name": 3, "children": 7}],
                                     "devices": "none", "loss": {"lost_messages": -1}}]})");
  const ProcessResult result = RunProcess(Gpuattr({"report", path}));
  INFO("stderr: " << result.err);
  REQUIRE(result.exited);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out,
             Catch::Contains("process n/a") && Catch::Contains("device time: not measured"));
}

TEST_CASE("gpuattr report without a file is a usage error", "[report]") {
  const ProcessResult result = RunProcess(Gpuattr({"report"}));
  REQUIRE(result.exited);
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
}

}  // namespace gpuattr::component
