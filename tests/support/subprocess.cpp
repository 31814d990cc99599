#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

extern char** environ;

namespace gpuattr::test_support {

double MonotonicSeconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& extra_env) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    const size_t eq = text.find('=');
    if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
  }
#if defined(__SANITIZE_ADDRESS__)
  // In a sanitized build the commands are sanitized too, and gpuattr puts the (sanitized) shim
  // ahead of the ASan runtime in their LD_PRELOAD; ASan refuses that unless told it is meant.
  env.emplace("ASAN_OPTIONS", "verify_asan_link_order=0");
#endif
  for (const auto& [name, value] : extra_env) env[name] = value;
  std::vector<std::string> env_entries;
  for (const auto& [name, value] : env) env_entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (auto& arg : args) argvp.push_back(arg.data());
  argvp.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  started_ = MonotonicSeconds();
  const int error = posix_spawnp(&pid_, argvp[0], &actions, nullptr, argvp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  INFO("spawning " << argv[0]);
  REQUIRE(error == 0);
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

ProcessResult Subprocess::Wait(double timeout_s) {
  ProcessResult result;
  const double deadline = started_ + timeout_s;
  int status = 0;
  bool reaped = false;
  double reaped_at = 0;
  for (;;) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int open = 0;
    for (pollfd& fd : fds) open += fd.fd >= 0 ? 1 : 0;
    // Descendants may hold the pipes open after the process exits: read a short while longer,
    // then stop.
    if (reaped && (open == 0 || MonotonicSeconds() > reaped_at + 1.0)) break;
    poll(fds, 2, 20);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(got));
      } else if (got == 0) {
        close(fds[i].fd);
        (i == 0 ? out_fd_ : err_fd_) = -1;
      }
    }
    if (!reaped && waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped = true;
      reaped_at = MonotonicSeconds();
      result.seconds = reaped_at - started_;
    }
    if (!reaped && MonotonicSeconds() > deadline) {
      kill(pid_, SIGKILL);
      result.timed_out = true;
    }
  }
  pid_ = -1;
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env, double timeout_s) {
  Subprocess process(argv, extra_env);
  return process.Wait(timeout_s);
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> children;
  pid_t child = 0;
  while (file >> child) children.push_back(child);
  return children;
}

std::string CommandName(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(file, name);
  return name;
}

}  // namespace gpuattr::test_support
