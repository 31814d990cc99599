// PathNames: path node id -> the names of its path from the root, cached, as the trace defines
// them so far.
//
// Strings and path nodes arrive interleaved with the events that use them, so a name resolved
// early may be "<unknown:ID>" and be defined later: Refresh() drops the cache whenever a String or
// PathNode record arrived since (TraceData::definitions), and the caches of the fold units built
// on names (phases, step keys, kernel names) restart with it. Undefined ids become
// "<unknown:ID>" components; a parent cycle (malformed input) ends the walk.
//
// Reads TraceData, const; single-threaded, on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/trace_data.h"

namespace gpuattr::collector {

// The name a range's instances share: torch.profiler numbers its steps (`ProfilerStep#15`), and
// all of them are `ProfilerStep#*`; any other name is itself.
inline std::string StepRangeKey(const std::string& name) {
  constexpr std::string_view kProfilerStep = "ProfilerStep#";
  if (name.size() <= kProfilerStep.size() || name.compare(0, kProfilerStep.size(), kProfilerStep))
    return name;
  const bool numbered = std::all_of(name.begin() + kProfilerStep.size(), name.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
  return numbered ? std::string(kProfilerStep) + "*" : name;
}

class PathNames {
 public:
  explicit PathNames(const TraceData& data) : data_(data) {}

  // Drops cached names when strings or path nodes were defined since they were resolved; true
  // when it did. References returned by Of stay valid until then.
  bool Refresh() {
    if (generation_ == data_.definitions) return false;
    generation_ = data_.definitions;
    cache_.clear();
    pass_cache_.clear();
    return true;
  }

  // The pass tree's path of `node` (docs/attribution.md §Passes): Of(node) with every name by
  // its StepRangeKey, so that the N instances of ProfilerStep#N are one pass node.
  const std::vector<std::string>& PassOf(uint32_t node) {
    auto cached = pass_cache_.find(node);
    if (cached != pass_cache_.end()) return cached->second;
    std::vector<std::string> names = Of(node);
    for (std::string& name : names) name = StepRangeKey(name);
    return pass_cache_.emplace(node, std::move(names)).first->second;
  }

  // The names from the root to `node` (node 0: none).
  const std::vector<std::string>& Of(uint32_t node) {
    auto cached = cache_.find(node);
    if (cached != cache_.end()) return cached->second;
    std::vector<std::string> names;
    std::vector<uint32_t> seen;
    for (uint32_t id = node; id != 0 && names.size() < kMaxDepth;) {
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) break;
      seen.push_back(id);
      auto def = data_.path_nodes.find(id);
      if (def == data_.path_nodes.end()) {
        names.push_back("<unknown:" + std::to_string(id) + ">");
        break;
      }
      names.push_back(StringOr(data_, def->second.name_string));
      id = def->second.parent;
    }
    std::reverse(names.begin(), names.end());
    return cache_.emplace(node, std::move(names)).first->second;
  }

 private:
  static constexpr size_t kMaxDepth = 1024;
  const TraceData& data_;
  uint64_t generation_ = 0;
  std::unordered_map<uint32_t, std::vector<std::string>> cache_;
  std::unordered_map<uint32_t, std::vector<std::string>> pass_cache_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_
