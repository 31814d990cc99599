// Files for tests: a private temporary directory, whole-file reads, and the report schema check
// (scripts/validate_report.py with the python3 that has jsonschema, found at configure time).
// Test-only; single-threaded.
#ifndef GPUATTR_TESTS_SUPPORT_TEST_FILES_H_
#define GPUATTR_TESTS_SUPPORT_TEST_FILES_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpuattr::test_support {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries in the directory, unordered.
  std::vector<std::string> Entries() const;

 private:
  std::string path_;
};

// The file's bytes; empty when it cannot be read.
std::string ReadFile(const std::string& path);

// Writes `bytes` to the file, replacing it; fails the running test when it cannot.
void WriteFile(const std::string& path, const std::string& bytes);

// The file parsed as JSON; a discarded value when it is missing or not JSON.
nlohmann::json ReadJson(const std::string& path);

struct SchemaCheck {
  bool valid = false;  // the validator ran and accepted the report
  int exit_code = -1;  // 0 valid, 1 invalid, anything else: the check itself failed
  std::string output;  // the validator's explanation when invalid
};

// Validates a report file against schemas/report.schema.json.
SchemaCheck ValidateReport(const std::string& path);

}  // namespace gpuattr::test_support

#endif  // GPUATTR_TESTS_SUPPORT_TEST_FILES_H_
