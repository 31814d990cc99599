#include "analysis/family_fold.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace gpuattr::collector {
namespace {

// `later - earlier` of two wire timestamps as a signed count, clamped to int64: a broken or
// hostile stream can put them anywhere in uint64, where casting first would overflow.
int64_t SignedDifferenceNs(uint64_t later, uint64_t earlier) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (later >= earlier) return static_cast<int64_t>(std::min(later - earlier, kMax));
  const uint64_t behind = earlier - later;
  return behind > kMax ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(behind);
}

}  // namespace

FamilyFold::FamilyFold(const TraceData& data, PathNames& paths, const FamilyRules& rules)
    : data_(data), paths_(paths), rules_(rules) {}

FamilyFold::KernelNames& FamilyFold::Known(uint32_t name_string) {
  auto known = names_.find(name_string);
  if (known == names_.end()) {
    // A cut name (kCutStringMark) is classified by what arrived, and keeps the mark.
    std::string name = paths_.Name(name_string);
    const bool cut = name.ends_with(kCutStringMark);
    if (cut) name.resize(name.size() - std::string_view(kCutStringMark).size());
    std::string demangled = DemangleKernelName(name);
    FamilyRules::KernelClass kernel_class = rules_.ClassOf(demangled);
    if (cut) {
      demangled += kCutStringMark;
      kernel_class.family += kCutStringMark;
    }
    known =
        names_
            .emplace(name_string, KernelNames{std::move(demangled), std::move(kernel_class.family),
                                              kernel_class.communication})
            .first;
  }
  return known->second;
}

const std::string& FamilyFold::LeafFamily(const ActivityRecord& activity) {
  static const std::string kMemcpyLeaf = "[memcpy]";
  static const std::string kMemsetLeaf = "[memset]";
  switch (activity.kind) {
    case ActivityKind::kKernel:
      break;
    case ActivityKind::kMemcpy:
      return kMemcpyLeaf;
    case ActivityKind::kMemset:
      return kMemsetLeaf;
  }
  return Known(activity.name_string).family;
}

void FamilyFold::Fold(const ActivityRecord& kernel, const LaunchRecord* launch) {
  KernelNames& known = Known(kernel.name_string);
  if (known.entry == nullptr) {
    // First kernel of this name (since names last changed): find its family and offer the
    // name as an example once, instead of comparing strings for every kernel.
    FamilyEntry& entry = families_[known.family];
    entry.stats.family = known.family;
    entry.stats.AddExample(known.demangled);
    known.entry = &entry;
  }
  FamilyEntry& family = *known.entry;
  family.stats.AddKernel(data_.shapes[kernel.shape], kernel.duration_ns());
  if (launch == nullptr) return;
  family.latency_samples.Add(SignedDifferenceNs(kernel.start_ns, launch->enter_ns));
  if (launch->exit_ns < launch->enter_ns || launch->exit_ns == 0) return;
  // One api sample per distinct launch: only graph launches run several kernels, so only
  // they remember which families they already sampled (until the launch leaves the join).
  if (kernel.graph_node_id != 0) {
    std::vector<std::string>& sampled = graph_families_[kernel.correlation_id];
    if (std::find(sampled.begin(), sampled.end(), family.stats.family) != sampled.end()) return;
    sampled.push_back(family.stats.family);
  }
  family.api_samples.Add(launch->exit_ns - launch->enter_ns);
}

void FamilyFold::ForgetLaunch(uint32_t correlation_id) {
  if (!graph_families_.empty()) graph_families_.erase(correlation_id);  // graphs are rare
}

std::vector<FamilyStats> FamilyFold::Finish() {
  std::vector<FamilyStats> families;
  for (auto& [name, entry] : families_) {
    entry.stats.launch_api = SampleSummary<uint64_t>::Of(entry.api_samples);
    entry.stats.launch_latency = SampleSummary<int64_t>::Of(entry.latency_samples);
    families.push_back(std::move(entry.stats));
  }
  std::stable_sort(
      families.begin(), families.end(),
      [](const FamilyStats& a, const FamilyStats& b) { return a.total_ns > b.total_ns; });
  return families;
}

}  // namespace gpuattr::collector
