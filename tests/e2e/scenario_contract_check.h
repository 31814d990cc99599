// The attribution contract checked on a run of the scenario library (tests/scenarios/README.md,
// docs/attribution.md). RunLibraryScenario runs one scenario on the simulated GPU under `gpuattr
// run --activities`; CheckContract holds the report to contract_expect.h's expectation from the
// simulator's truth: every activity's attribution kind, path, reason and phase exactly; pass
// self/total, device busy/idle, gap classes and step phase terms exactly; coverage fractions to
// 1e-9; reconciliation; schema validity. Host instants only to within a skew (the .cpp says why).
#ifndef GPUATTR_TESTS_E2E_SCENARIO_CONTRACT_CHECK_H_
#define GPUATTR_TESTS_E2E_SCENARIO_CONTRACT_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "contract_expect.h"
#include "test_files.h"

namespace gpuattr::e2e {

struct Run {
  nlohmann::json report;
  nlohmann::json truth;
  std::vector<nlohmann::json> activities;  // the --activities export, one object per line
};

// Runs tests/scenarios/NAME.json with `flags` added to `gpuattr run`; the report is schema-valid.
Run RunLibraryScenario(const test_support::TempDir& dir, const std::string& name,
                       const std::vector<std::string>& flags = {});

// Everything the contract fixes, for every process of the run; returns the expectation.
std::vector<ContractProcess> CheckContract(const Run& run, const ContractOptions& options = {},
                                           size_t skip_steps = 0);

// Equal within 1e-9 relative.
bool Near(double actual, double expected);
// A report's fraction (null or a number) against the expected one (empty: null).
void CheckFraction(const nlohmann::json& actual, std::optional<double> expected);
// A truth activity's end - start.
uint64_t Duration(const nlohmann::json& activity);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_SCENARIO_CONTRACT_CHECK_H_
