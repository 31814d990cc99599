// simgpu-run SCENARIO.json --truth TRUTH.json
//
// The launcher parses and validates the scenario (errors: a message naming the JSON path, exit 2),
// sets GPUATTR_CUPTI_LIBRARY to the fake libcupti.so.13 beside this executable when unset, then
// runs every scenario process concurrently as its own OS process: a re-exec of this binary with
// the hidden `--run-process N --truth-part FILE` flags and the process's "env" applied, so each
// gets its own injection and shim connection. It merges the processes' truth parts (and those of
// their forked children) into TRUTH.json and exits with the first process's exit status, or
// 128 + signal when it was killed. It writes nothing on stdout.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runner.h"
#include "scenario.h"

namespace {

using gpuattr::simgpu::Scenario;
using nlohmann::json;

constexpr int kUsageError = 2;

int Usage(const char* message) {
  std::fprintf(stderr, "simgpu-run: %s\nusage: simgpu-run SCENARIO.json --truth TRUTH.json\n",
               message);
  return kUsageError;
}

std::string SelfPath() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<size_t>(n));
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

bool LoadScenario(const std::string& path, Scenario* scenario) {
  std::string text;
  if (!ReadFile(path, &text)) {
    std::fprintf(stderr, "simgpu-run: %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  std::string error;
  if (!gpuattr::simgpu::ParseScenario(text, scenario, &error)) {
    std::fprintf(stderr, "simgpu-run: %s: %s\n", path.c_str(), error.c_str());
    return false;
  }
  return true;
}

// Parts of process i: "p<i>.json" then its forks "p<i>.json.fork.<pid>..." in name order.
std::vector<std::string> PartsOf(const std::string& dir, size_t index) {
  const std::string base = "p" + std::to_string(index) + ".json";
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
      if (!tmp && (name == base || name.rfind(base + ".fork.", 0) == 0)) names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void RemoveDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

int Launch(const std::string& scenario_path, const std::string& truth_path) {
  Scenario scenario;
  if (!LoadScenario(scenario_path, &scenario)) return kUsageError;
  const std::string self = SelfPath();
  if (std::getenv("GPUATTR_CUPTI_LIBRARY") == nullptr && !self.empty()) {
    const std::string dir = self.substr(0, self.rfind('/'));
    setenv("GPUATTR_CUPTI_LIBRARY", (dir + "/libcupti.so.13").c_str(), 1);
  }
  const char* tmp_root = std::getenv("TMPDIR");
  std::string dir_template =
      std::string(tmp_root != nullptr ? tmp_root : "/tmp") + "/simgpu-truth-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::fprintf(stderr, "simgpu-run: mkdtemp: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string parts_dir = dir_template;

  std::vector<pid_t> pids;
  for (size_t i = 0; i < scenario.processes.size(); ++i) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [key, value] : scenario.processes[i].env) {
        setenv(key.c_str(), value.c_str(), 1);
      }
      // Read by the process's SimClock, and through it by the shim, before main (sim_clock.h).
      if (scenario.simulated_clock) {
        setenv("SIMGPU_CLOCK", "simulated", 1);
      } else {
        unsetenv("SIMGPU_CLOCK");
      }
      const std::string index = std::to_string(i);
      const std::string part = parts_dir + "/p" + index + ".json";
      execl(self.c_str(), "simgpu-run", "--run-process", index.c_str(), "--truth-part",
            part.c_str(), scenario_path.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "simgpu-run: exec %s: %s\n", self.c_str(), std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> statuses(pids.size(), 0);
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    if (pids[i] > 0) waitpid(pids[i], &status, 0);
    statuses[i] = pids[i] <= 0          ? 1
                  : WIFEXITED(status)   ? WEXITSTATUS(status)
                  : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                        : 1;
  }

  json truth = {{"processes", json::array()}};
  for (size_t i = 0; i < scenario.processes.size(); ++i) {
    const std::vector<std::string> parts = PartsOf(parts_dir, i);
    if (parts.empty()) {
      // The process died before writing its truth (killed from outside, exec failure).
      truth["processes"].push_back({{"pid", pids[i]},
                                    {"rank", nullptr},
                                    {"name", scenario.processes[i].name},
                                    {"activities", json::array()},
                                    {"ranges", json::array()},
                                    {"marks", json::array()},
                                    {"truth_missing", true}});
    }
    for (const std::string& name : parts) {
      std::string text;
      const json part = ReadFile(parts_dir + "/" + name, &text)
                            ? json::parse(text, nullptr, /*allow_exceptions=*/false)
                            : json();
      if (!part.is_object() || !part.contains("processes")) continue;
      for (const json& process : part["processes"]) {
        json entry = process;
        entry["exit_status"] =
            name.find(".fork.") == std::string::npos ? json(statuses[i]) : json(nullptr);
        truth["processes"].push_back(std::move(entry));
      }
    }
  }
  RemoveDir(parts_dir);
  const std::string tmp = truth_path + ".tmp";
  {
    std::ofstream out(tmp);
    out << truth.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "simgpu-run: cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), truth_path.c_str()) != 0) {
    std::fprintf(stderr, "simgpu-run: rename to %s: %s\n", truth_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  return statuses.empty() ? 0 : statuses[0];
}

int RunOne(const std::string& scenario_path, const std::string& index_text,
           const std::string& part) {
  Scenario scenario;
  if (!LoadScenario(scenario_path, &scenario)) return kUsageError;
  char* end = nullptr;
  const unsigned long index = std::strtoul(index_text.c_str(), &end, 10);
  if (end == index_text.c_str() || *end != '\0' || index >= scenario.processes.size()) {
    return Usage("bad --run-process index");
  }
  return gpuattr::simgpu::RunProcess(scenario, index, part);
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario;
  std::string truth;
  std::string run_process;
  std::string truth_part;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    if (arg == "--truth") {
      if (!value(&truth)) return Usage("--truth needs a file");
    } else if (arg == "--run-process") {
      if (!value(&run_process)) return Usage("--run-process needs an index");
    } else if (arg == "--truth-part") {
      if (!value(&truth_part)) return Usage("--truth-part needs a file");
    } else if (arg == "-h" || arg == "--help") {
      return Usage("runs a simulated-GPU scenario (tests/simgpu/README.md)");
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(("unknown option " + arg).c_str());
    } else if (scenario.empty()) {
      scenario = arg;
    } else {
      return Usage("more than one scenario");
    }
  }
  if (scenario.empty()) return Usage("no scenario");
  if (!run_process.empty()) {
    if (truth_part.empty()) return Usage("--run-process needs --truth-part");
    return RunOne(scenario, run_process, truth_part);
  }
  if (truth.empty()) return Usage("--truth is required");
  return Launch(scenario, truth);
}
