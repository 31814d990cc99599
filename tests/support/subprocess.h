// Subprocess: starts a command for a component or end-to-end test, with pipes on its stdout and
// stderr, and waits for it with a deadline. Test-only; single-threaded.
#ifndef GPUATTR_TESTS_SUPPORT_SUBPROCESS_H_
#define GPUATTR_TESTS_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace gpuattr::test_support {

struct ProcessResult {
  bool timed_out = false;  // killed with SIGKILL at the deadline
  bool exited = false;     // WIFEXITED
  int exit_code = -1;      // WEXITSTATUS when exited
  int signal = 0;          // WTERMSIG when killed by a signal
  double seconds = 0;      // from Start to the end of Wait
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  // Starts argv[0] (PATH is searched) with the current environment plus `extra_env`; stdin is
  // /dev/null. A failure to start fails the running test.
  Subprocess(const std::vector<std::string>& argv,
             const std::map<std::string, std::string>& extra_env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // Collects output until the process exits (SIGKILL after `timeout_s`).
  ProcessResult Wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  double started_ = 0;
};

// Runs and waits in one go.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env = {},
                         double timeout_s = 30);

// The pids of `pid`'s children (/proc/PID/task/PID/children).
std::vector<pid_t> ChildrenOf(pid_t pid);

// /proc/PID/comm without the newline; empty when the process is gone.
std::string CommandName(pid_t pid);

double MonotonicSeconds();

}  // namespace gpuattr::test_support

#endif  // GPUATTR_TESTS_SUPPORT_SUBPROCESS_H_
