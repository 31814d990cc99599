#include "import/compiled_graph_calls.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace gpuattr::collector {
namespace {

// A launch of a kernel that some map generated, on its thread.
struct GeneratedLaunch {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start_ns = 0;
  std::string_view kernel;

  bool operator<(const GeneratedLaunch& other) const {
    return std::tie(pid, tid, start_ns) < std::tie(other.pid, other.tid, other.start_ns);
  }
};

// Each graph call the maps do not name: its first instance, by name id.
std::unordered_map<uint32_t, const ImportedRange*> UnnamedFirstCalls(const ImportedTrace& trace,
                                                                     const KernelMaps& maps) {
  std::unordered_map<uint32_t, const ImportedRange*> first;
  for (const ImportedRange& range : trace.ranges) {
    const std::string& name = trace.strings.Text(range.name);
    if (range.origin != RangeOrigin::kFile || !name.starts_with(kProfilerGraphRangePrefix) ||
        maps.Find(name) != nullptr) {
      continue;
    }
    auto [call, inserted] = first.try_emplace(range.name, &range);
    if (!inserted && range.start_ns < call->second->start_ns) call->second = &range;
  }
  return first;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> MatchCompiledGraphCalls(const ImportedTrace& trace,
                                                                         const KernelMaps& maps) {
  const std::unordered_map<uint32_t, const ImportedRange*> calls = UnnamedFirstCalls(trace, maps);
  if (calls.empty()) return {};
  // Each map's generated kernels in call order, and every map's generated kernel names.
  std::unordered_set<std::string_view> generated;
  std::vector<std::pair<const std::string*, std::vector<std::string_view>>> sequences;
  for (const auto& [range, map] : maps.graphs()) {
    std::vector<std::string_view> kernels;
    for (const CompiledCall& call : map.calls) {
      if (!call.generated) continue;
      kernels.push_back(call.kernel);
      generated.insert(call.kernel);
    }
    if (!kernels.empty()) sequences.emplace_back(&range, std::move(kernels));
  }
  // The launches of generated kernels, by thread and time (a launch's first kernel names it).
  std::unordered_map<uint32_t, uint32_t> kernel_of_correlation;
  for (const ImportedActivity& activity : trace.activities) {
    if (activity.kind == DeviceWork::kKernel && activity.correlation != 0) {
      kernel_of_correlation.emplace(activity.correlation, activity.name);
    }
  }
  std::vector<GeneratedLaunch> launches;
  for (const ImportedApiCall& api : trace.api_calls) {
    auto kernel = kernel_of_correlation.find(api.correlation);
    if (api.correlation == 0 || kernel == kernel_of_correlation.end()) continue;
    const std::string_view name = trace.strings.Text(kernel->second);
    if (generated.contains(name)) launches.push_back({api.pid, api.tid, api.start_ns, name});
  }
  std::sort(launches.begin(), launches.end());

  std::vector<std::pair<std::string, std::string>> named;
  for (const auto& [name, call] : calls) {
    auto first = std::lower_bound(launches.begin(), launches.end(),
                                  GeneratedLaunch{call->pid, call->tid, call->start_ns, {}});
    auto last = std::lower_bound(launches.begin(), launches.end(),
                                 GeneratedLaunch{call->pid, call->tid, call->end_ns, {}});
    std::vector<std::string_view> kernels;
    for (auto launch = first; launch != last; ++launch) kernels.push_back(launch->kernel);
    const std::string* match = nullptr;
    size_t matches = 0;
    for (const auto& [range, sequence] : sequences) {
      if (sequence == kernels) {
        match = range;
        ++matches;
      }
    }
    if (matches == 1) named.emplace_back(trace.strings.Text(name), *match);
  }
  std::sort(named.begin(), named.end());
  return named;
}

}  // namespace gpuattr::collector
