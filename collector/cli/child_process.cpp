#include "cli/child_process.h"

#include <errno.h>
#include <spawn.h>
#include <sys/wait.h>

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

// The dynamic loader splits LD_PRELOAD at spaces and colons.
bool ListsLibrary(const std::string& preload, const std::string& library) {
  size_t begin = 0;
  while (begin <= preload.size()) {
    size_t end = preload.find_first_of(": ", begin);
    if (end == std::string::npos) end = preload.size();
    if (preload.compare(begin, end - begin, library) == 0 && end - begin == library.size()) {
      return true;
    }
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
  } else if (!ListsLibrary(preload, shim)) {
    SetVariable(&result, "LD_PRELOAD", shim + ":" + preload);
  }
  SetVariable(&result, "CUDA_INJECTION64_PATH", shim);
  SetVariable(&result, "NVTX_INJECTION64_PATH", shim);
  SetVariable(&result, kSocketEnv, socket_path);
  // Traced from the start, whatever the caller's environment says (`run --armed` overrides).
  SetVariable(&result, kModeEnv, "traced");
  return result;
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
                                 const sigset_t& signal_mask) {
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
  SpawnResult result;
  // glibc's posix_spawnp reports a failed exec as its return value (it spawns with CLONE_VFORK
  // and waits for the exec), so "not found" needs no pipe of our own.
  const int error = posix_spawnp(&result.pid, argv[0].c_str(), nullptr, &attributes,
                                 argv_pointers.data(), env_pointers.data());
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
