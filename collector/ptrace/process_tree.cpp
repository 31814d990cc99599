#include "ptrace/process_tree.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string_view>

#include "ptrace/process_image.h"

namespace gpuattr::collector {
namespace {

constexpr size_t kMaxEnvironmentBytes = 1 << 20;

// The parent of `pid` from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and
// parentheses, so the fields are read after the last ')'); nullopt when unreadable.
std::optional<pid_t> ParentOf(pid_t pid) {
  std::ifstream stat(ProcPath(pid, "stat"));
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 4 >= line.size()) return std::nullopt;
  const char* fields = line.c_str() + close + 4;  // past ") S "
  char* end = nullptr;
  const long parent = std::strtol(fields, &end, 10);
  if (end == fields || parent < 0) return std::nullopt;
  return static_cast<pid_t>(parent);
}

// Every process's parent, from the numeric entries of /proc.
std::map<pid_t, pid_t> ParentsOfAll() {
  std::map<pid_t, pid_t> parents;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return parents;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    if (std::optional<pid_t> parent = ParentOf(static_cast<pid_t>(pid))) {
      parents[static_cast<pid_t>(pid)] = *parent;
    }
  }
  closedir(proc);
  return parents;
}

bool Descends(pid_t pid, pid_t ancestor, const std::map<pid_t, pid_t>& parents) {
  // Bounded by the table's size: a cycle (pids reused while reading) cannot loop for ever.
  for (size_t steps = 0; steps < parents.size(); ++steps) {
    const auto parent = parents.find(pid);
    if (parent == parents.end() || parent->second <= 0) return false;
    if (parent->second == ancestor) return true;
    pid = parent->second;
  }
  return false;
}

// RANK=N among the NUL-separated entries of /proc/PID/environ.
std::optional<int> RankOf(pid_t pid) {
  const StatusOr<std::string> read =
      ReadFileBytes(ProcPath(pid, "environ"), kMaxEnvironmentBytes, /*truncate=*/true);
  if (!read.ok()) return std::nullopt;
  const std::string& environment = *read;
  constexpr std::string_view kRank = "RANK=";
  for (size_t at = 0; at < environment.size();) {
    const size_t end = std::min(environment.find('\0', at), environment.size());
    const std::string_view entry(environment.data() + at, end - at);
    if (entry.starts_with(kRank)) {
      const std::string digits(entry.substr(kRank.size()));
      char* parsed = nullptr;
      const long rank = std::strtol(digits.c_str(), &parsed, 10);
      if (!digits.empty() && *parsed == '\0' && rank >= 0) return static_cast<int>(rank);
    }
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<bool> HasCudaDriver(pid_t pid) {
  const StatusOr<ProcessImage> image = ReadProcessImage(pid);
  if (!image.ok()) return std::nullopt;
  return image->cuda_driver;
}

std::vector<CudaProcess> FindCudaDescendants(pid_t pid, size_t limit) {
  std::vector<CudaProcess> found;
  const std::map<pid_t, pid_t> parents = ParentsOfAll();
  for (const auto& [candidate, parent] : parents) {  // by pid
    if (found.size() >= limit) break;
    if (!Descends(candidate, pid, parents) || !HasCudaDriver(candidate).value_or(false)) continue;
    found.push_back({candidate, ProcessName(candidate), RankOf(candidate)});
  }
  return found;
}

std::string DescribeProcess(const CudaProcess& process) {
  std::string text = std::to_string(process.pid) + " (" + process.name;
  if (process.rank) text += ", rank " + std::to_string(*process.rank);
  return text + ")";
}

}  // namespace gpuattr::collector
