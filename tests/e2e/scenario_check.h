// What every end-to-end test does: run a scenario on the simulated GPU under `gpuattr run`,
// check that the report validates, and compare it with the simulator's truth exactly — counts,
// device time by kind, every device's span/busy/idle, every pass path's self/total and its split
// by attribution kind, and the reconciliation of root totals plus unattributed time with all
// device time. Test-only; uses Catch2 assertions.
#ifndef GPUATTR_TESTS_E2E_SCENARIO_CHECK_H_
#define GPUATTR_TESTS_E2E_SCENARIO_CHECK_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {

// Exit status as a shell reports it: the code, or 128 + the signal.
int ExitStatus(const test_support::ProcessResult& result);

// The report's process with this pid, or null.
const nlohmann::json* FindProcess(const nlohmann::json& report, int64_t pid);

// Validates a report file against the schema; explains failures in the test log.
bool SchemaValid(const std::string& report_path);

// Runs `scenario` under gpuattr (extra environment `env`), requires exit 0 and a valid report,
// and returns {report, truth}.
std::pair<nlohmann::json, nlohmann::json> RunScenario(
    const test_support::TempDir& dir, const std::string& scenario,
    const std::map<std::string, std::string>& env = {});

// Every process of the truth against the report, exactly.
void CheckAgainstTruth(const nlohmann::json& report, const nlohmann::json& truth);

// The report process's unattributed device time, over all reasons.
uint64_t UnattributedNs(const nlohmann::json& process);

// DESIGN §2's reconciliation within one report process: the root passes' totals plus the
// unattributed time equal all its device activity time, exactly.
void CheckReconciliation(const nlohmann::json& process);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_SCENARIO_CHECK_H_
