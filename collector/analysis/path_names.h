// PathNames: path node id -> the names of its path from the root, as the trace defines them so
// far; its pass (the pass tree's path, where the N instances of ProfilerStep#N are one); and
// string id -> its name, for the fold units that cache by name.
//
// A pass is interned from its parent's pass and its own name, so a node costs one lookup however
// deep it sits, and the nodes of every step share the passes of the first (a PyTorch trace
// defines a node per module per step: ProfilerStep#7/nn.Module: Net_0/...). Pass ids are dense
// (0: the empty path of node 0), so the fold units keep their per-pass answers in vectors.
//
// Strings and path nodes arrive interleaved with the events that use them, so a name resolved
// early may be "<unknown:ID>" and be defined later, or (a malformed stream) be redefined: Refresh()
// drops every cache when a String or PathNode record arrived since (TraceData::definitions) and
// either a name read so far was unknown or a definition changed one (TraceData::redefinitions);
// pass ids restart, and so do the caches of the fold units built on them (phases, module rows,
// the pass tree's node of each pass). A well-formed stream defines every name before its first
// use, so its caches never restart. Undefined ids become "<unknown:ID>" components; a parent
// cycle (malformed input) ends the walk, and no path is longer than kMaxDepth names.
//
// Derived nodes are paths no range of the trace defines: the place a compiled graph's kernel map
// gives a launch below the graph's range (compiled_graph_join.h). Their ids count down from
// kLastDerivedNode, above any id a well-formed trace defines (the shim interns at most 65536), and
// they outlive Refresh (their parents are ids, whose names Refresh reads again).
//
// Reads TraceData, const; single-threaded, on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/trace_data.h"

namespace gpuattr::collector {

// The name a range's instances share: torch.profiler numbers its steps (`ProfilerStep#15`), and
// all of them are `ProfilerStep#*`; any other name is itself.
std::string_view StepRangeKey(std::string_view name);

class PathNames {
 public:
  static constexpr size_t kMaxDepth = 1024;
  static constexpr uint32_t kLastDerivedNode = 0xFFFFFFFFu;
  static constexpr uint32_t kMaxDerivedNodes = 1u << 20;

  explicit PathNames(const TraceData& data);

  // Drops cached names and passes when a name they hold may have changed since they were
  // resolved; true when it did. References returned by Of and PassPath, and pass ids, stay valid
  // until then.
  bool Refresh();

  // The name of string `id`, or "<unknown:ID>" (noted: Refresh restarts the caches once
  // definitions arrive).
  std::string Name(uint32_t id);

  // The names from the root to `node` (node 0: none).
  const std::vector<std::string>& Of(uint32_t node);

  // The pass of `node` (node 0: pass 0, the empty path), and a pass's path: Of(node) with every
  // name by its StepRangeKey.
  uint32_t PassIdOf(uint32_t node);
  const std::vector<std::string>& PassPath(uint32_t pass) const { return passes_[pass].path; }
  const std::vector<std::string>& PassOf(uint32_t node) { return PassPath(PassIdOf(node)); }
  // Pass ids are below this.
  size_t pass_count() const { return passes_.size(); }

  // The derived node named `name` below `parent` (a trace's node or a derived one), made at its
  // first request; `parent` itself once kMaxDerivedNodes exist.
  uint32_t DerivedChild(uint32_t parent, std::string_view name);
  // Whether `node` is a derived node this made (a malformed trace may use ids up here too:
  // those this never made are the trace's).
  bool IsDerived(uint32_t node) const { return kLastDerivedNode - node < derived_.size(); }

 private:
  struct Pass {
    std::vector<std::string> path;  // its parent's, then its own name
  };
  struct PassKey {
    uint32_t parent = 0;
    std::string_view name;  // the child's path().back(), or a lookup's own
    bool operator==(const PassKey&) const = default;
  };
  struct PassKeyHash {
    size_t operator()(const PassKey& key) const {
      return std::hash<std::string_view>()(key.name) * 31 + key.parent;
    }
  };

  struct DerivedNode {
    uint32_t parent = 0;
    std::string name;
  };
  uint32_t InternPass(uint32_t parent, std::string_view name);
  const DerivedNode& Derived(uint32_t node) const { return derived_[kLastDerivedNode - node]; }

  const TraceData& data_;
  uint64_t generation_ = 0;
  uint64_t redefinitions_ = 0;
  bool read_unknown_ = false;  // a cached name holds an undefined id
  std::unordered_map<uint32_t, std::vector<std::string>> names_by_node_;
  std::deque<Pass> passes_;  // by pass id; a deque, so PassKey's views stay put
  std::unordered_map<PassKey, uint32_t, PassKeyHash> pass_ids_;
  std::unordered_map<uint32_t, uint32_t> pass_by_node_;
  std::vector<std::pair<uint32_t, const PathNodeDef*>> chain_;  // PassIdOf's scratch
  std::deque<DerivedNode> derived_;                             // by kLastDerivedNode - id
  // parent -> name -> derived id
  std::unordered_map<uint32_t, std::map<std::string, uint32_t, std::less<>>> derived_ids_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PATH_NAMES_H_
