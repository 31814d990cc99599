// Test helper: imports trace files written into a TempDir and returns the report (as written and
// read back) and the per-activity export. Test-only; single-threaded.
#ifndef GPUATTR_TESTS_UNIT_IMPORT_IMPORT_TEST_UTIL_H_
#define GPUATTR_TESTS_UNIT_IMPORT_IMPORT_TEST_UTIL_H_

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/import_command.h"
#include "report/report_builder.h"
#include "test_files.h"

namespace gpuattr::collector::testing {

struct Imported {
  nlohmann::json report;
  std::vector<nlohmann::json> activities;
};

inline Imported ImportPaths(const std::vector<std::string>& paths,
                            const std::string& ranges = "annotations",
                            const std::string& kernel_maps = "") {
  test_support::TempDir dir;
  ImportOptions options;
  options.files = paths;
  options.ranges = ranges;
  options.analysis.kernel_maps = kernel_maps;
  options.output = dir.File("report.json");
  options.exports.activities = dir.File("activities.jsonl");
  StatusOr<ImportResult> result = WriteImport(options, /*write_report=*/true);
  INFO((result.ok() ? std::string() : result.status().message()));
  REQUIRE(result.ok());
  // Every imported report must satisfy the report schema.
  const test_support::SchemaCheck schema = test_support::ValidateReport(options.output);
  INFO(schema.output);
  CHECK(schema.valid);
  Imported out{nlohmann::json::parse(test_support::ReadFile(options.output)), {}};
  std::istringstream stream(test_support::ReadFile(options.exports.activities));
  for (std::string line; std::getline(stream, line);) {
    out.activities.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// The activities whose `field` equals `value`.
inline std::vector<nlohmann::json> Where(const std::vector<nlohmann::json>& activities,
                                         const std::string& field, const nlohmann::json& value) {
  std::vector<nlohmann::json> out;
  for (const auto& activity : activities) {
    if (activity.value(field, nlohmann::json()) == value) out.push_back(activity);
  }
  return out;
}

}  // namespace gpuattr::collector::testing

#endif  // GPUATTR_TESTS_UNIT_IMPORT_IMPORT_TEST_UTIL_H_
