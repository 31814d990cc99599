// The annotator's two paths (issue 44, docs/pytorch.md §Cost): the compiled core
// (python/core, built into the build tree's gpuattr_site) and the pure-Python fallback. The
// report names the path a process took in a mark, `gpuattr.pytorch: core: compiled` or
// `gpuattr.pytorch: core: python (<why>)`; a broken core falls back and says why, and the program
// gets the same module rows either way. The PyTorch tier runs every case once per path too
// (GPUATTR_PYTORCH_CORE=python in the `-python` variants, cmake/GpuattrTorch.cmake).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pytorch_e2e_util.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::TempDir;
using test_support::WriteFile;

// Three steps of a two-module model, forward and backward.
const std::vector<std::string>& SmallTrainingCommand() {
  static const std::vector<std::string> command = {
      kPython, "-c",
      "import torch\n"
      "torch.manual_seed(0)\n"
      "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
      "x = torch.ones(2, 4)\n"
      "for _ in range(3):\n"
      "    model(x).sum().backward()\n"};
  return command;
}

// The names of the report's marks that name the annotator's path.
std::vector<std::string> CoreMarks(const json& report) {
  std::vector<std::string> names;
  for (const json& mark : report["processes"][0]["marks"]) {
    const std::string name = mark["name"].get<std::string>();
    if (name.rfind(kCoreMarkPrefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// The paths of the report's pass tree, sorted: siblings that start at the same time (a backward
// leaf and the accumulator's) may be listed in either order.
std::vector<std::string> PassPaths(const json& report) {
  std::vector<std::string> paths;
  ForEachPass(report["processes"][0]["passes"], [&](const json& node) {
    std::string path;
    for (const json& name : node["path"]) path += name.get<std::string>() + " / ";
    paths.push_back(path);
  });
  std::sort(paths.begin(), paths.end());
  return paths;
}

json RunSmallTraining(const TempDir& dir, const std::string& name,
                      const std::map<std::string, std::string>& env) {
  const std::string report_path = dir.File(name + ".json");
  const ProcessResult run = RunUnderGpuattr({}, SmallTrainingCommand(), report_path, env);
  INFO("stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  return report;
}

// The build tree's annotator directory, where `gpuattr run` finds it beside its executable.
std::filesystem::path BuiltPythonSite() {
  return std::filesystem::path(GPUATTR_BIN).parent_path().parent_path() / "python" / "gpuattr_site";
}

TEST_CASE("the report names the annotator's path: the compiled core, or pure Python where asked",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const json report = RunSmallTraining(dir, "report", {});
  const char* asked = std::getenv("GPUATTR_PYTORCH_CORE");
  const bool pure_python = asked != nullptr && std::string(asked) == "python";
  const std::string expected = std::string(kCoreMarkPrefix) +
                               (pure_python ? "python (GPUATTR_PYTORCH_CORE=python)" : "compiled");
  CHECK(CoreMarks(report) == std::vector<std::string>{expected});
  const std::vector<std::string> paths = PassPaths(report);
  CHECK(std::count(paths.begin(), paths.end(), "ProfilerStep#* / nn.Module: Sequential_0 / ") == 1);
  CHECK(std::count(paths.begin(), paths.end(),
                   "ProfilerStep#* / nn.Module: Sequential_0 / nn.Module: 0 / ") == 1);
}

TEST_CASE("a broken compiled core falls back to pure Python, says why, and gives the same rows",
          "[e2e]") {
  RequireTorch();
  TempDir dir;
  const std::filesystem::path site = dir.File("gpuattr_site");
  std::filesystem::copy(BuiltPythonSite(), site, std::filesystem::copy_options::recursive);
  const std::filesystem::path core = site / "gpuattr_pytorch" / "_gpuattr_core.abi3.so";
  REQUIRE(std::filesystem::exists(core));  // the build made it: otherwise nothing is tested here
  WriteFile(core.string(), "not an ELF file\n");
  const std::map<std::string, std::string> try_the_core = {{"GPUATTR_PYTORCH_CORE", ""}};
  std::map<std::string, std::string> broken = try_the_core;
  broken["GPUATTR_PYTHON_SITE"] = site.string();
  const json with_core = RunSmallTraining(dir, "with_core", try_the_core);
  const json fallback = RunSmallTraining(dir, "fallback", broken);
  CHECK(CoreMarks(with_core) == std::vector<std::string>{"gpuattr.pytorch: core: compiled"});
  const std::vector<std::string> fallback_marks = CoreMarks(fallback);
  REQUIRE(fallback_marks.size() == 1);
  INFO(fallback_marks[0]);
  CHECK(fallback_marks[0].rfind("gpuattr.pytorch: core: python (ImportError: ", 0) == 0);
  CHECK(fallback_marks[0].find("_gpuattr_core.abi3.so") != std::string::npos);
  CHECK(PassPaths(fallback) == PassPaths(with_core));
}

}  // namespace
}  // namespace gpuattr::e2e
