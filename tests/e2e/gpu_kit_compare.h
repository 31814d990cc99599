// compare.py (tests/gpu/compare.py) run on a directory of outputs, and its summary read back by
// check name: shared by the GPU kit's e2e tests.
#ifndef GPUATTR_TESTS_E2E_GPU_KIT_COMPARE_H_
#define GPUATTR_TESTS_E2E_GPU_KIT_COMPARE_H_

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {

struct Summary {
  int exit_status = -1;
  std::map<std::string, nlohmann::json> rows;  // by check
};

inline Summary Compare(const std::string& out) {
  const test_support::ProcessResult run =
      test_support::RunProcess({GPUATTR_PYTHON, GPUATTR_SOURCE_DIR "/tests/gpu/compare.py", out});
  INFO(run.out << run.err);
  Summary summary;
  summary.exit_status = ExitStatus(run);
  const nlohmann::json rows = test_support::ReadJson(out + "/summary.json");
  REQUIRE(rows.is_array());
  for (const nlohmann::json& row : rows) summary.rows[row["check"]] = row;
  return summary;
}

inline std::string Result(const Summary& summary, const std::string& check) {
  const auto row = summary.rows.find(check);
  INFO("check: " << check);
  REQUIRE(row != summary.rows.end());
  return row->second["result"];
}

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_GPU_KIT_COMPARE_H_
