// What the component tests of `gpuattr import` share: the shared traces' directory, one import
// run (its report and --activities export), and pytorch_phase_reference.py's independent phase
// terms for a trace.
#ifndef GPUATTR_TESTS_COMPONENT_IMPORT_RUN_H_
#define GPUATTR_TESTS_COMPONENT_IMPORT_RUN_H_

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::test {

inline const std::string kTraces = std::string(GPUATTR_SOURCE_DIR) + "/../shared/traces/";

struct ImportRun {
  test_support::ProcessResult process;
  nlohmann::json report;
  std::vector<nlohmann::json> activities;
};

inline ImportRun Import(const test_support::TempDir& dir, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv = {GPUATTR_BINARY,
                                   "import",
                                   "-q",
                                   "-o",
                                   dir.File("report.json"),
                                   "--activities",
                                   dir.File("activities.jsonl")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  ImportRun run;
  run.process = test_support::RunProcess(argv, {}, 120);
  if (run.process.exit_code == 0) {
    run.report = test_support::ReadJson(dir.File("report.json"));
    std::ifstream lines(dir.File("activities.jsonl"));
    for (std::string line; std::getline(lines, line);)
      run.activities.push_back(nlohmann::json::parse(line));
  }
  return run;
}

inline const std::vector<std::string> kPhaseTerms = {
    "forward_ns", "backward_ns",      "recompute_ns", "optimizer_ns",
    "loss_ns",    "communication_ns", "other_ns"};

// pytorch_phase_reference.py's phase terms and device categories for a trace, by pid.
inline nlohmann::json ReferencePhases(const std::string& trace,
                                      const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv = {
      GPUATTR_PYTHON,
      std::string(GPUATTR_SOURCE_DIR) + "/tests/component/pytorch_phase_reference.py", trace};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const test_support::ProcessResult script = test_support::RunProcess(argv, {}, 300);
  INFO(script.err);
  REQUIRE(script.exit_code == 0);
  return nlohmann::json::parse(script.out);
}

}  // namespace gpuattr::test

#endif  // GPUATTR_TESTS_COMPONENT_IMPORT_RUN_H_
