// The module table's terms as the truth of a simulated torch run has them
// (tests/e2e/pytorch/train_simulated.py), computed from the truth alone, for the PyTorch e2e tests
// that compare a report's `modules` rows with it (pytorch_checkpoint_e2e_test.cpp,
// pytorch2_e2e_test.cpp).
#ifndef GPUATTR_TESTS_E2E_PYTORCH_MODULE_TRUTH_H_
#define GPUATTR_TESTS_E2E_PYTORCH_MODULE_TRUTH_H_

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace gpuattr::e2e {

struct ModuleTerms {
  uint64_t forward_ns = 0;
  uint64_t backward_ns = 0;
  uint64_t recompute_ns = 0;
  uint64_t loss_ns = 0;
  bool operator==(const ModuleTerms&) const = default;
};

inline std::ostream& operator<<(std::ostream& out, const ModuleTerms& terms) {
  return out << "{forward " << terms.forward_ns << ", backward " << terms.backward_ns
             << ", recompute " << terms.recompute_ns << ", loss " << terms.loss_ns << "}";
}

inline bool IsModule(const std::string& name) { return name.starts_with("nn.Module: "); }
inline bool IsLeaf(const std::string& name) {
  return name == "backward" || name == "backward_unlinked";
}

// Each module's device time by phase, from the truth's activities alone: an activity is its
// path's innermost module's; backward when the path ends in a leaf (the module made that
// backward), recompute when a leaf lies above the module (it ran inside backward), else its
// forward, which a loss module's is loss.
inline std::map<std::string, ModuleTerms> ModuleTermsOfTruth(const nlohmann::json& truth) {
  std::map<std::string, ModuleTerms> out;
  for (const nlohmann::json& activity : truth["processes"][0]["activities"]) {
    const auto path = activity["range_path"].get<std::vector<std::string>>();
    const auto module = std::find_if(path.rbegin(), path.rend(), IsModule);
    if (module == path.rend()) continue;
    const uint64_t ns = activity["end_ns"].get<uint64_t>() - activity["start_ns"].get<uint64_t>();
    ModuleTerms& terms = out[*module];
    if (IsLeaf(path.back())) {
      terms.backward_ns += ns;
    } else if (std::any_of(path.begin(), module.base(), IsLeaf)) {
      terms.recompute_ns += ns;
    } else if (module->find("Loss_") != std::string::npos) {
      terms.loss_ns += ns;
    } else {
      terms.forward_ns += ns;
    }
  }
  return out;
}

// The report's `modules` rows of its first process by module name; a module with two rows is
// a failure.
inline std::map<std::string, ModuleTerms> ModuleRowsOf(const nlohmann::json& report) {
  std::map<std::string, ModuleTerms> rows;
  for (const nlohmann::json& row : report["processes"][0]["modules"]) {
    const std::string module = row["module"].get<std::string>();
    INFO("module " << module);
    CHECK(rows.count(module) == 0);
    rows[module] = {row["forward_ns"].get<uint64_t>(), row["backward_ns"].get<uint64_t>(),
                    row["recompute_ns"].get<uint64_t>(), row["loss_ns"].get<uint64_t>()};
  }
  return rows;
}

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_PYTORCH_MODULE_TRUTH_H_
