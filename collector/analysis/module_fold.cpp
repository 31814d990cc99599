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

int64_t ModuleFold::RowOfPath(const std::vector<std::string>& path) {
  const auto module = std::find_if(path.rbegin(), path.rend(), IsModule);
  if (module == path.rend()) return -1;
  const bool forward = std::none_of(path.begin(), path.end(), IsBackwardLeaf);
  auto [found, added] = row_index_.try_emplace(*module, rows_.size());
  if (added) {
    rows_.emplace_back().module = *module;
    path_is_forward_.push_back(false);
  }
  const size_t row = found->second;
  if (added || (forward && !path_is_forward_[row])) {
    rows_[row].path.clear();
    std::copy_if(path.begin(), module.base(), std::back_inserter(rows_[row].path), IsModule);
    path_is_forward_[row] = forward;
  }
  return static_cast<int64_t>(row);
}

int64_t ModuleFold::RowOf(uint32_t node) {
  if (node == last_node_) return last_row_;
  last_node_ = node;
  const uint32_t pass = paths_.PassIdOf(node);
  if (pass >= rows_by_pass_.size()) rows_by_pass_.resize(paths_.pass_count());
  if (!rows_by_pass_[pass]) rows_by_pass_[pass] = RowOfPath(paths_.PassPath(pass));
  return last_row_ = *rows_by_pass_[pass];
}

void ModuleFold::Fold(const AttributedActivity& attributed) {
  const int64_t row = RowOf(attributed.outcome.node);
  if (row < 0) return;
  rows_[static_cast<size_t>(row)].phases.Add(attributed.outcome.phase, attributed.ns());
}

void ModuleFold::FoldFused(const std::vector<std::string>& fused,
                           const std::vector<std::string>& path, std::optional<Phase> phase,
                           uint64_t ns) {
  const auto own = std::find_if(path.rbegin(), path.rend(), IsModule);
  for (const std::string& module : fused) {
    if (own != path.rend() && *own == module) continue;  // the kernel's own module
    auto [found, added] = row_index_.try_emplace(module, rows_.size());
    if (added) {
      ModuleRow& row = rows_.emplace_back();
      row.module = module;
      std::copy_if(path.begin(), path.end(), std::back_inserter(row.path), IsModule);
      row.path.push_back(module);
      path_is_forward_.push_back(false);
    }
    rows_[found->second].fused.Add(phase, ns);
  }
}

void ModuleFold::CountCalls(const std::vector<PassNode>& passes) {
  for (const PassNode& pass : passes) {
    if (IsModule(pass.name)) {
      ModuleRow& row = rows_[static_cast<size_t>(RowOfPath(pass.path))];
      const bool recompute = std::any_of(pass.path.begin(), pass.path.end(), IsBackwardLeaf);
      (recompute ? row.recompute_calls : row.calls) += pass.instances;
    }
    CountCalls(pass.children);
  }
}

std::vector<ModuleRow> ModuleFold::Finish(const std::vector<PassNode>& passes) {
  CountCalls(passes);
  std::vector<ModuleRow> rows = std::move(rows_);
  std::sort(rows.begin(), rows.end(), [](const ModuleRow& a, const ModuleRow& b) {
    const uint64_t a_ns = a.phases.total_ns();
    const uint64_t b_ns = b.phases.total_ns();
    return a_ns != b_ns ? a_ns > b_ns : a.path < b.path;
  });
  return rows;
}

}  // namespace gpuattr::collector
