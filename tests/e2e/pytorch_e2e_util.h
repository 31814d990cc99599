// What the PyTorch e2e tests share (pytorch_annotator_e2e_test.cpp, pytorch_flops_e2e_test.cpp):
// the interpreter that has torch, running a command under `gpuattr run`, the simulated GPU's
// environment for torch, and walking a report's pass tree. Needs the target's compile
// definitions GPUATTR_BIN, FAKE_CUPTI_LIBRARY, SIMGPU_PYWORK_LIBRARY and SIMGPU_TORCH_DIR; the
// interpreter is the environment's GPUATTR_TORCH_PYTHON, which ctest sets per torch
// (tests/e2e/CMakeLists.txt: each case runs once per torch found).
#ifndef GPUATTR_TESTS_E2E_PYTORCH_E2E_UTIL_H_
#define GPUATTR_TESTS_E2E_PYTORCH_E2E_UTIL_H_

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess.h"

namespace gpuattr::e2e {

// The interpreter that has torch, as ctest names it; empty when none had it at configure time.
inline const std::string kPython = [] {
  const char* python = std::getenv("GPUATTR_TORCH_PYTHON");
  return std::string(python == nullptr ? "" : python);
}();

// The prefix of the mark that names the annotator's path (compiled core or pure Python), one in
// every annotated process's report (pytorch_core_e2e_test.cpp).
inline constexpr char kCoreMarkPrefix[] = "gpuattr.pytorch: core: ";

// Every case starts here: without torch there is nothing to test, and that is a failure
// (scripts/setup.sh installs torch in .venv and python3-torch), never a skip.
inline void RequireTorch() {
  INFO(
      "no interpreter that imports torch was found when the build was configured, or the test "
      "ran outside ctest without GPUATTR_TORCH_PYTHON; run scripts/setup.sh and configure again");
  REQUIRE(!kPython.empty());
}

inline const nlohmann::json* FindPass(const nlohmann::json& nodes,
                                      const std::vector<std::string>& path) {
  for (const nlohmann::json& node : nodes) {
    if (node["path"].get<std::vector<std::string>>() == path) return &node;
    if (const nlohmann::json* found = FindPass(node["children"], path)) return found;
  }
  return nullptr;
}

template <typename Visit>
void ForEachPass(const nlohmann::json& nodes, const Visit& visit) {
  for (const nlohmann::json& node : nodes) {
    visit(node);
    ForEachPass(node["children"], visit);
  }
}

inline test_support::ProcessResult RunUnderGpuattr(
    const std::vector<std::string>& gpuattr_flags, const std::vector<std::string>& command,
    const std::string& report_path, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {GPUATTR_BIN, "run", "--quiet", "-o", report_path};
  argv.insert(argv.end(), gpuattr_flags.begin(), gpuattr_flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return test_support::RunProcess(argv, env, /*timeout_s=*/120);
}

#ifdef GPUATTR_ASAN_SHIM
// True, with a warning, where a program that runs torch.compile cannot be tested: Inductor compiles
// in subprocesses (g++, its compile workers) that inherit LD_PRELOAD, and the ASan-built shim
// there crashes those uninstrumented programs at start (pc 0). A sanitizer-build artefact, as for
// static programs; the dev build's run checks the same case.
inline bool InductorCannotRunUnderThisShim() {
  if (!GPUATTR_ASAN_SHIM) return false;
  WARN("skipped under the asan-ubsan preset");
  return true;
}
#endif

inline std::map<std::string, std::string> SimulatedTorchEnvironment() {
  return {{"GPUATTR_CUPTI_LIBRARY", FAKE_CUPTI_LIBRARY},
          {"SIMGPU_PYWORK_LIBRARY", SIMGPU_PYWORK_LIBRARY},
          {"PYTHONPATH", SIMGPU_TORCH_DIR}};
}

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_PYTORCH_E2E_UTIL_H_
