#include "test_files.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "subprocess.h"

namespace gpuattr::test_support {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/gpuattr-test-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> TempDir::Entries() const {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path_, error)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadFile(path), nullptr, /*allow_exceptions=*/false);
}

SchemaCheck ValidateReport(const std::string& path) {
  // Python's jsonschema takes tens of seconds on a report with tens of thousands of step rows
  // (the stress test's) on a slow machine; the deadline only guards against a hung validator.
  constexpr double kValidatorTimeoutSeconds = 240;
  const ProcessResult result =
      RunProcess({GPUATTR_PYTHON, GPUATTR_SOURCE_DIR "/scripts/validate_report.py", path}, {},
                 kValidatorTimeoutSeconds);
  const int exit_code = result.exited ? result.exit_code : -1;
  std::string output = result.out + result.err;
  if (result.timed_out) {
    output += "validate_report.py killed after " + std::to_string(result.seconds) + " s";
  }
  return {exit_code == 0, exit_code, output};
}

}  // namespace gpuattr::test_support
