// PassTree: the pass tree under construction (docs/attribution.md §Passes): one node per path of
// range names (domains merged), each with its device time by attribution kind, its busy union,
// its device time by kernel family (the folded exports' leaf frames), the launch contexts of its
// captured activities, its host durations, and the FLOPs and bytes of the ops that ran on it.
//
// The activity folder hands it every attributed activity with the names of its path; host
// durations arrive once, at the end, from the host-range fold, and counted ops from the work fold.
// Finish() returns the roots with totals (self + children: device time and work), phases and
// children ordered by total device time, then host time.
//
// Single-threaded, on the thread that folds. Memory: one node per distinct path.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PASS_TREE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PASS_TREE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/attributed_activity.h"
#include "analysis/interval_union.h"
#include "analysis/phase.h"
#include "analysis/process_analysis.h"
#include "analysis/samples.h"

namespace gpuattr::collector {

class PassTree {
 public:
  // `phase_rules` must outlive this.
  explicit PassTree(const PhaseRules& phase_rules);

  // An attributed activity (outcome.node != 0) on pass `pass` (path_names.h), whose path is
  // `path`. `leaf_family` is the kernel's family, or "[memcpy]" / "[memset]". For captured
  // activities, `launch_context` is the path the graph was launched under (empty: no range;
  // nullopt: the launch was never seen); else ignored.
  void Fold(const AttributedActivity& attributed, uint32_t pass,
            const std::vector<std::string>& path, const std::string& leaf_family,
            const std::optional<std::vector<std::string>>& launch_context);
  // Pass ids restarted (PathNames::Refresh): the node of each is looked up again.
  void Refresh() { node_of_pass_.clear(); }
  // The closed host instances of a path node of pass `pass`, whose path is `path` (the nodes of
  // a pass merge).
  void AddHostDurations(uint32_t pass, const std::vector<std::string>& path,
                        const Samples<uint64_t>& durations);

  // FLOPs and bytes of ops that ran on pass `pass`, whose path is `path` (work_fold.h).
  void AddWork(uint32_t pass, const std::vector<std::string>& path, const WorkCounts& counts) {
    NodeOfPass(pass, path).out.work_self.Add(counts);
  }

  // The roots, finished, their phases by the rules' answers cached in `name_masks`. Once.
  std::vector<PassNode> Finish(PhaseRules::NameMasks& name_masks);

 private:
  struct Node {
    std::string name;
    std::map<std::string, size_t> children;
    PassNode out;
    IntervalUnion busy;  // of its own activities, in start order
    Samples<uint64_t> host_durations;
    std::map<std::optional<std::vector<std::string>>, LaunchContext> contexts;
    std::unordered_map<std::string, uint64_t> family_ns;  // self_ns by leaf family
    // The entry of family_ns the last activity added to: a node's activities mostly run one
    // kernel family after another, and comparing a name costs less than hashing it.
    std::pair<const std::string, uint64_t>* last_family = nullptr;
  };

  Node& At(const std::vector<std::string>& path);
  Node& NodeOfPass(uint32_t pass, const std::vector<std::string>& path);
  PassNode Finalize(size_t index);
  void SetPhases(PassNode& node, PhaseRules::NameMasks& masks) const;

  const PhaseRules& phase_rules_;
  std::vector<Node> nodes_;           // index 0: the root, which names no pass
  std::vector<size_t> node_of_pass_;  // nodes_ index by pass id; 0: not looked up yet
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PASS_TREE_H_
