#include "analysis/module_fold.h"

#include <algorithm>
#include <utility>

namespace gpuattr::collector {
namespace {

bool IsModule(const std::string& name) { return name.starts_with(kModuleRangePrefix); }

bool IsBackwardLeaf(const std::string& name) {
  return name == kBackwardLeaf || name == kBackwardUnlinkedLeaf;
}

}  // namespace

int64_t ModuleFold::RowOf(uint32_t node) {
  if (node == last_node_) return last_row_;
  last_node_ = node;
  const uint32_t pass = paths_.PassIdOf(node);
  if (pass >= rows_by_pass_.size()) rows_by_pass_.resize(paths_.pass_count());
  if (rows_by_pass_[pass]) return last_row_ = *rows_by_pass_[pass];
  const std::vector<std::string>& path = paths_.PassPath(pass);
  const auto leaf = std::find_if(path.rbegin(), path.rend(), IsBackwardLeaf);
  const auto split = leaf == path.rend() ? path.begin() : leaf.base();
  std::vector<std::string> modules;  // above the split: the backward's forward module
  std::copy_if(path.begin(), split, std::back_inserter(modules), IsModule);
  std::vector<std::string> recomputed;  // below it: modules that ran inside backward
  std::copy_if(split, path.end(), std::back_inserter(recomputed), IsModule);
  if (!recomputed.empty()) {
    // A recomputed module is known by its own name: it sits where that name sits above.
    auto same = std::find(modules.begin(), modules.end(), recomputed.front());
    modules.erase(same == modules.end() ? modules.begin() : same, modules.end());
    modules.insert(modules.end(), recomputed.begin(), recomputed.end());
  }
  int64_t row = -1;
  if (!modules.empty()) {
    auto [found, added] = row_index_.try_emplace(modules, rows_.size());
    if (added) rows_.push_back({std::move(modules), {}});
    row = static_cast<int64_t>(found->second);
  }
  rows_by_pass_[pass] = row;
  return last_row_ = row;
}

void ModuleFold::Fold(const AttributedActivity& attributed) {
  const int64_t row = RowOf(attributed.outcome.node);
  if (row < 0) return;
  rows_[static_cast<size_t>(row)].phases.Add(attributed.outcome.phase, attributed.ns());
}

std::vector<ModuleRow> ModuleFold::Finish() {
  std::vector<ModuleRow> rows = std::move(rows_);
  std::sort(rows.begin(), rows.end(), [](const ModuleRow& a, const ModuleRow& b) {
    const uint64_t a_ns = a.phases.total_ns();
    const uint64_t b_ns = b.phases.total_ns();
    return a_ns != b_ns ? a_ns > b_ns : a.path < b.path;
  });
  return rows;
}

}  // namespace gpuattr::collector
