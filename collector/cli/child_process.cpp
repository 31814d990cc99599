#include "cli/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

extern char** environ;

namespace gpuattr::collector {
namespace {

// The value of NAME in `environment`, empty when absent.
std::string GetVariable(const std::vector<std::string>& environment, std::string_view name) {
  const std::string prefix = std::string(name) + "=";
  for (const std::string& entry : environment) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return {};
}

// Whether `list`, split at any of `separators`, has `entry` (the dynamic loader splits
// LD_PRELOAD at spaces and colons, Python splits PYTHONPATH at colons).
bool ListsEntry(const std::string& list, const std::string& entry, const char* separators) {
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find_first_of(separators, begin);
    if (end == std::string::npos) end = list.size();
    if (end - begin == entry.size() && list.compare(begin, end - begin, entry) == 0) return true;
    begin = end + 1;
  }
  return false;
}

}  // namespace

void SetVariable(std::vector<std::string>* environment, std::string_view name,
                 const std::string& value) {
  const std::string prefix = std::string(name) + "=";
  for (std::string& entry : *environment) {
    if (entry.compare(0, prefix.size(), prefix) == 0) {
      entry = prefix + value;
      return;
    }
  }
  environment->push_back(prefix + value);
}

std::vector<std::string> BuildChildEnvironment(const std::vector<std::string>& environment,
                                               const std::string& shim,
                                               const std::string& socket_path) {
  std::vector<std::string> result = environment;
  const std::string preload = GetVariable(result, "LD_PRELOAD");
  if (preload.empty()) {
    SetVariable(&result, "LD_PRELOAD", shim);
  } else if (!ListsEntry(preload, shim, ": ")) {
    SetVariable(&result, "LD_PRELOAD", shim + ":" + preload);
  }
  SetVariable(&result, "CUDA_INJECTION64_PATH", shim);
  SetVariable(&result, "NVTX_INJECTION64_PATH", shim);
  SetVariable(&result, kSocketEnv, socket_path);
  // Traced from the start, whatever the caller's environment says (`run --armed` overrides).
  SetVariable(&result, kModeEnv, "traced");
  return result;
}

namespace {

// `python_site` first on PYTHONPATH, not repeated when already listed.
void PrependPythonPath(std::vector<std::string>* environment, const std::string& python_site) {
  const std::string python_path = GetVariable(*environment, "PYTHONPATH");
  if (python_path.empty()) {
    SetVariable(environment, "PYTHONPATH", python_site);
  } else if (!ListsEntry(python_path, python_site, ":")) {
    SetVariable(environment, "PYTHONPATH", python_site + ":" + python_path);
  }
}

}  // namespace

void AddPythonAnnotator(std::vector<std::string>* environment, const std::string& mode,
                        const std::string& python_site, const std::string& nvtx_library) {
  SetVariable(environment, kPytorchEnv, mode);
  if (mode == "off") return;
  PrependPythonPath(environment, python_site);
  if (!nvtx_library.empty() && GetVariable(*environment, kNvtxLibraryEnv).empty()) {
    SetVariable(environment, kNvtxLibraryEnv, nvtx_library);
  }
}

void AddStepTimer(std::vector<std::string>* environment, const std::string& python_site,
                  const std::string& timer_path) {
  SetVariable(environment, kPytorchEnv, "off");
  SetVariable(environment, kStepTimerEnv, timer_path);
  PrependPythonPath(environment, python_site);
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> result;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    result.emplace_back(*entry);
  }
  return result;
}

StatusOr<SpawnResult> SpawnChild(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& environment,
                                 const sigset_t& signal_mask, ChildStdio stdio) {
  if (argv.empty()) return InvalidArgumentError("no command to run");
  std::vector<char*> argv_pointers;
  for (const std::string& arg : argv) argv_pointers.push_back(const_cast<char*>(arg.c_str()));
  argv_pointers.push_back(nullptr);
  std::vector<char*> env_pointers;
  for (const std::string& entry : environment) {
    env_pointers.push_back(const_cast<char*>(entry.c_str()));
  }
  env_pointers.push_back(nullptr);

  posix_spawnattr_t attributes;
  if (posix_spawnattr_init(&attributes) != 0) {
    return InternalError("posix_spawnattr_init failed");
  }
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setsigmask(&attributes, &signal_mask);
  posix_spawn_file_actions_t file_actions;
  if (posix_spawn_file_actions_init(&file_actions) != 0) {
    posix_spawnattr_destroy(&attributes);
    return InternalError("posix_spawn_file_actions_init failed");
  }
  if (stdio == ChildStdio::kDevNull) {
    posix_spawn_file_actions_addopen(&file_actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&file_actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&file_actions, STDOUT_FILENO, STDERR_FILENO);
  }
  SpawnResult result;
  // glibc's posix_spawnp reports a failed exec as its return value (it spawns with CLONE_VFORK
  // and waits for the exec), so "not found" needs no pipe of our own.
  const int error = posix_spawnp(&result.pid, argv[0].c_str(), &file_actions, &attributes,
                                 argv_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&file_actions);
  posix_spawnattr_destroy(&attributes);
  if (error == 0) return result;
  switch (error) {
    case ENOENT:
    case EACCES:
    case ENOEXEC:
    case ENOTDIR:
    case ELOOP:
    case ENAMETOOLONG:
    case EISDIR:
    case ETXTBSY:
    case E2BIG:
    case EPERM:
      result.pid = -1;
      result.exec_error = error;
      return result;
    default:
      return InternalError("cannot start '" + argv[0] + "': " + std::strerror(error));
  }
}

int ShellExitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 128;  // stopped or continued: wait() only reports those on request, and we never ask
}

}  // namespace gpuattr::collector
