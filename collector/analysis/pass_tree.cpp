#include "analysis/pass_tree.h"

#include <algorithm>
#include <utility>

namespace gpuattr::collector {

PassTree::PassTree(const PhaseRules& phase_rules) : phase_rules_(phase_rules), nodes_(1) {}

PassTree::Node& PassTree::At(const std::vector<std::string>& path) {
  size_t index = 0;
  for (size_t depth = 0; depth < path.size(); ++depth) {
    const std::string& name = path[depth];
    auto it = nodes_[index].children.find(name);
    if (it != nodes_[index].children.end()) {
      index = it->second;
      continue;
    }
    const size_t child = nodes_.size();
    nodes_[index].children.emplace(name, child);
    nodes_.emplace_back();
    nodes_[child].name = name;
    nodes_[child].out.path.assign(path.begin(), path.begin() + static_cast<ptrdiff_t>(depth) + 1);
    index = child;
  }
  return nodes_[index];
}

PassTree::Node& PassTree::NodeOfPass(uint32_t pass, const std::vector<std::string>& path) {
  if (pass >= node_of_pass_.size()) node_of_pass_.resize(pass + 1, 0);
  if (node_of_pass_[pass] == 0) node_of_pass_[pass] = static_cast<size_t>(&At(path) - &nodes_[0]);
  return nodes_[node_of_pass_[pass]];
}

void PassTree::Fold(const AttributedActivity& attributed, uint32_t pass,
                    const std::vector<std::string>& path, const std::string& leaf_family,
                    const std::optional<std::vector<std::string>>& launch_context) {
  const uint64_t ns = attributed.ns();
  Node& node = NodeOfPass(pass, path);
  if (node.last_family == nullptr || node.last_family->first != leaf_family) {
    node.last_family = &*node.family_ns.try_emplace(leaf_family, 0).first;
  }
  node.last_family->second += ns;
  node.out.self_ns += ns;
  node.out.activities += 1;
  if (attributed.kernel()) node.out.kernels += 1;
  if (!attributed.late) node.busy.Add(attributed.activity.start_ns, attributed.activity.end_ns);
  switch (attributed.outcome.kind) {
    case AttributionKind::kNone:
      break;
    case AttributionKind::kDirect:
      node.out.direct_ns += ns;
      break;
    case AttributionKind::kInherited:
      node.out.inherited_ns += ns;
      break;
    case AttributionKind::kCaptured: {
      LaunchContext& entry = node.contexts[launch_context];
      entry.ns += ns;
      entry.activities += 1;
      node.out.captured_ns += ns;
      break;
    }
  }
}

void PassTree::AddHostDurations(uint32_t pass, const std::vector<std::string>& path,
                                const Samples<uint64_t>& durations) {
  // Merging into a path's empty samples copies them: with one node per path (the usual case;
  // paths merge domains) they are exactly what adding each duration in closing order gives.
  NodeOfPass(pass, path).host_durations.Merge(durations);
}

std::vector<PassNode> PassTree::Finish(PhaseRules::NameMasks& name_masks) {
  std::vector<PassNode> roots = std::move(Finalize(0).children);
  for (PassNode& root : roots) SetPhases(root, name_masks);
  return roots;
}

PassNode PassTree::Finalize(size_t index) {
  Node& node = nodes_[index];
  PassNode out = std::move(node.out);
  out.name = node.name;
  out.instances = node.host_durations.count();
  if (out.instances > 0) out.host = node.host_durations.Summary();
  out.busy_ns = node.busy.Total();
  out.total_ns = out.self_ns;
  out.work_total = out.work_self;
  for (auto& [key, context] : node.contexts) {
    context.path = key;
    out.launch_contexts.push_back(std::move(context));
  }
  std::stable_sort(out.launch_contexts.begin(), out.launch_contexts.end(),
                   [](const LaunchContext& a, const LaunchContext& b) { return a.ns > b.ns; });
  out.self_by_family.assign(node.family_ns.begin(), node.family_ns.end());
  std::sort(out.self_by_family.begin(), out.self_by_family.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<size_t> child_indices;
  for (const auto& [name, child] : node.children) child_indices.push_back(child);
  for (size_t child : child_indices) {
    out.children.push_back(Finalize(child));
    out.total_ns += out.children.back().total_ns;
    out.work_total.Add(out.children.back().work_total);
  }
  std::stable_sort(out.children.begin(), out.children.end(),
                   [](const PassNode& a, const PassNode& b) {
                     if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
                     const uint64_t ha = a.host ? a.host->total : 0;
                     const uint64_t hb = b.host ? b.host->total : 0;
                     return ha > hb;
                   });
  return out;
}

void PassTree::SetPhases(PassNode& node, PhaseRules::NameMasks& masks) const {
  node.phase = phase_rules_.PhaseOfPath(node.path, &masks);
  for (PassNode& child : node.children) SetPhases(child, masks);
}

}  // namespace gpuattr::collector
