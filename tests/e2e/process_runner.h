// Runs a command as a child process for end-to-end tests and captures its stdout, stderr and exit
// status. Test-only; single-threaded.
#ifndef GPUATTR_TESTS_E2E_PROCESS_RUNNER_H_
#define GPUATTR_TESTS_E2E_PROCESS_RUNNER_H_

#include <map>
#include <string>
#include <vector>

namespace gpuattr::e2e {

struct RunResult {
  int exit_status = -1;  // the exit code, or 128 + signal
  std::string out;
  std::string err;
};

// Runs argv[0] (searched on PATH) with the current environment plus `extra_env` (a value of
// "<unset>" removes the variable).
RunResult RunCommand(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& extra_env = {});

// A fresh private directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_PROCESS_RUNNER_H_
