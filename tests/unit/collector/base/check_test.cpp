// GPUATTR_CHECK and GPUATTR_DCHECK: a broken invariant stops the process with the condition on
// stderr; a held one costs nothing visible. Checked in a forked child, whose stderr and end the
// test reads.
#include "base/check.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace gpuattr::collector::testing {
namespace {

struct ChildEnd {
  bool aborted = false;
  std::string err;
};

template <typename Body>
ChildEnd InChild(Body body) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    body();
    _exit(0);
  }
  close(pipe_fds[1]);
  ChildEnd end;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) end.err.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  end.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return end;
}

TEST_CASE("a broken invariant aborts with its condition, file and line", "[unit][check]") {
  const ChildEnd broken = InChild([] {
    const int answer = 41;
    GPUATTR_CHECK(answer == 42);
  });
  CHECK(broken.aborted);
  CHECK(broken.err.find("gpuattr: GPUATTR_CHECK failed: answer == 42 (") != std::string::npos);
  CHECK(broken.err.find("check_test.cpp:") != std::string::npos);

  const ChildEnd held = InChild([] { GPUATTR_CHECK(1 + 1 == 2); });
  CHECK_FALSE(held.aborted);
  CHECK(held.err.empty());
}

TEST_CASE("a debug check is checked in debug builds and not evaluated otherwise", "[unit][check]") {
  int evaluated = 0;
  const ChildEnd end = InChild([&evaluated] { GPUATTR_DCHECK(++evaluated == 0); });
#ifdef NDEBUG
  CHECK_FALSE(end.aborted);
#else
  CHECK(end.aborted);
  CHECK(end.err.find("GPUATTR_CHECK failed: ++evaluated == 0") != std::string::npos);
#endif
  CHECK(evaluated == 0);  // the child's increment, if any, was the child's
}

}  // namespace
}  // namespace gpuattr::collector::testing
