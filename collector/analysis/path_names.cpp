#include "analysis/path_names.h"

#include <algorithm>
#include <utility>

namespace gpuattr::collector {

std::string_view StepRangeKey(std::string_view name) {
  constexpr std::string_view kProfilerStep = "ProfilerStep#";
  if (name.size() <= kProfilerStep.size() || !name.starts_with(kProfilerStep)) return name;
  const bool numbered = std::all_of(name.begin() + kProfilerStep.size(), name.end(),
                                    [](char c) { return c >= '0' && c <= '9'; });
  return numbered ? std::string_view("ProfilerStep#*") : name;
}

PathNames::PathNames(const TraceData& data) : data_(data), passes_(1) {}

bool PathNames::Refresh() {
  if (generation_ == data_.definitions) return false;
  generation_ = data_.definitions;
  if (!read_unknown_ && redefinitions_ == data_.redefinitions) return false;
  redefinitions_ = data_.redefinitions;
  read_unknown_ = false;
  names_by_node_.clear();
  pass_ids_.clear();
  pass_by_node_.clear();
  passes_.resize(1);
  return true;
}

std::string PathNames::Name(uint32_t id) {
  auto it = data_.strings.find(id);
  if (it != data_.strings.end()) return it->second;
  read_unknown_ = true;
  return "<unknown:" + std::to_string(id) + ">";
}

const std::vector<std::string>& PathNames::Of(uint32_t node) {
  auto cached = names_by_node_.find(node);
  if (cached != names_by_node_.end()) return cached->second;
  std::vector<std::string> names;
  std::vector<uint32_t> seen;
  for (uint32_t id = node; id != 0 && names.size() < kMaxDepth;) {
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) break;
    seen.push_back(id);
    if (IsDerived(id)) {
      names.push_back(Derived(id).name);
      id = Derived(id).parent;
      continue;
    }
    auto def = data_.path_nodes.find(id);
    if (def == data_.path_nodes.end()) {
      read_unknown_ = true;
      names.push_back("<unknown:" + std::to_string(id) + ">");
      break;
    }
    names.push_back(Name(def->second.name_string));
    id = def->second.parent;
  }
  std::reverse(names.begin(), names.end());
  return names_by_node_.emplace(node, std::move(names)).first->second;
}

uint32_t PathNames::InternPass(uint32_t parent, std::string_view name) {
  if (passes_[parent].path.size() >= kMaxDepth) return parent;
  auto known = pass_ids_.find(PassKey{parent, name});
  if (known != pass_ids_.end()) return known->second;
  const auto id = static_cast<uint32_t>(passes_.size());
  Pass& pass = passes_.emplace_back();
  pass.path.reserve(passes_[parent].path.size() + 1);
  pass.path = passes_[parent].path;
  pass.path.emplace_back(name);
  pass_ids_.emplace(PassKey{parent, pass.path.back()}, id);
  return id;
}

uint32_t PathNames::DerivedChild(uint32_t parent, std::string_view name) {
  auto& children = derived_ids_[parent];
  auto known = children.find(name);
  if (known != children.end()) return known->second;
  if (derived_.size() >= kMaxDerivedNodes) return parent;
  const uint32_t id = kLastDerivedNode - static_cast<uint32_t>(derived_.size());
  derived_.push_back(DerivedNode{parent, std::string(name)});
  children.emplace(std::string(name), id);
  return id;
}

uint32_t PathNames::PassIdOf(uint32_t node) {
  if (node == 0) return 0;
  auto cached = pass_by_node_.find(node);
  if (cached != pass_by_node_.end()) return cached->second;
  if (IsDerived(node)) {
    // A derived node's parents are made before it, so this recursion ends (at a trace's node).
    const DerivedNode& derived = Derived(node);
    const uint32_t pass = InternPass(PassIdOf(derived.parent), derived.name);
    pass_by_node_.emplace(node, pass);
    return pass;
  }
  // The nodes from `node` up to the first whose pass is known (or the root), innermost first,
  // with their definitions (null: undefined): only they are new. A cycle or an undefined node
  // ends the chain as it ends Of's walk.
  chain_.clear();
  uint32_t pass = 0;
  for (uint32_t id = node; id != 0 && chain_.size() < kMaxDepth;) {
    auto known = pass_by_node_.find(id);
    if (known != pass_by_node_.end()) {
      pass = known->second;
      break;
    }
    const auto seen = [id](const auto& link) { return link.first == id; };
    if (std::any_of(chain_.begin(), chain_.end(), seen)) break;
    auto def = data_.path_nodes.find(id);
    chain_.emplace_back(id, def == data_.path_nodes.end() ? nullptr : &def->second);
    if (chain_.back().second == nullptr) break;
    id = def->second.parent;
  }
  for (size_t i = chain_.size(); i-- > 0;) {
    const auto [id, def] = chain_[i];
    if (def == nullptr) {
      read_unknown_ = true;
      pass = InternPass(pass, "<unknown:" + std::to_string(id) + ">");
    } else {
      auto name = data_.strings.find(def->name_string);
      if (name != data_.strings.end()) {
        pass = InternPass(pass, StepRangeKey(name->second));
      } else {
        pass = InternPass(pass, Name(def->name_string));
      }
    }
    pass_by_node_.emplace(id, pass);
  }
  return pass;
}

}  // namespace gpuattr::collector
