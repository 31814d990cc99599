#include "analysis/process_analysis.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

namespace gpuattr::collector {

namespace {

// The order of FamilyStats::shapes: most kernels first, then most time.
bool RanksBefore(const ShapeStats& a, const ShapeStats& b) {
  return a.kernels != b.kernels ? a.kernels > b.kernels : a.total_ns > b.total_ns;
}

// Adds `count` kernels that ran `total_ns` in all, the shortest `min_ns` and the longest `max_ns`.
void AddKernelCounts(FamilyStats& stats, uint64_t count, uint64_t total_ns, uint64_t min_ns,
                     uint64_t max_ns) {
  stats.min_ns = stats.kernels == 0 ? min_ns : std::min(stats.min_ns, min_ns);
  stats.max_ns = std::max(stats.max_ns, max_ns);
  stats.kernels += count;
  stats.total_ns += total_ns;
}

// The entry of `shape` in `shapes`, appended with no kernels when it is new.
std::vector<ShapeStats>::iterator ShapeEntry(std::vector<ShapeStats>& shapes,
                                             const KernelShape& shape) {
  auto it = std::find_if(shapes.begin(), shapes.end(),
                         [&](const ShapeStats& mine) { return mine.shape == shape; });
  return it != shapes.end() ? it : shapes.insert(shapes.end(), ShapeStats{shape, 0, 0});
}

}  // namespace

void FamilyStats::AddKernel(const KernelShape& shape, uint64_t duration_ns) {
  AddKernelCounts(*this, 1, duration_ns, duration_ns, duration_ns);
  auto it = ShapeEntry(shapes, shape);
  ++it->kernels;
  it->total_ns += duration_ns;
  // Only this shape grew, so the stable order Merge sorts into is restored by moving it ahead
  // of the shapes it now ranks strictly before.
  for (; it != shapes.begin() && RanksBefore(*it, *std::prev(it)); --it) {
    std::iter_swap(it, std::prev(it));
  }
}

void FamilyStats::AddExample(const std::string& name) {
  if (names.size() < kFamilyExamples &&
      std::find(names.begin(), names.end(), name) == names.end()) {
    names.push_back(name);
  }
}

void FamilyStats::Merge(const FamilyStats& other) {
  AddKernelCounts(*this, other.kernels, other.total_ns, other.min_ns, other.max_ns);
  for (const std::string& name : other.names) AddExample(name);
  for (const ShapeStats& shape : other.shapes) {
    auto it = ShapeEntry(shapes, shape.shape);
    it->kernels += shape.kernels;
    it->total_ns += shape.total_ns;
  }
  std::stable_sort(shapes.begin(), shapes.end(), RanksBefore);
  launch_api.Merge(other.launch_api);
  launch_latency.Merge(other.launch_latency);
}

const char* ProcessStatusName(ProcessStatus status) {
  switch (status) {
    case ProcessStatus::kComplete:
      return "complete";
    case ProcessStatus::kTruncated:
      return "truncated";
    case ProcessStatus::kRefused:
      return "refused";
    case ProcessStatus::kHostOnly:
      return "host_only";
  }
  return "refused";
}

void AnalysisMerger::Add(const ProcessAnalysis& process) {
  if (!process.device_measured) return;
  merged_.any_measured = true;
  Totals& totals = merged_.totals;
  totals.kernel_ns += process.totals.kernel_ns;
  totals.memcpy_ns += process.totals.memcpy_ns;
  totals.memset_ns += process.totals.memset_ns;
  totals.kernels += process.totals.kernels;
  totals.memcpys += process.totals.memcpys;
  totals.memsets += process.totals.memsets;
  totals.launches += process.totals.launches;
  merged_.attributed_kernel_ns += process.attributed_kernel_ns;
  for (size_t i = 0; i < kPhaseCount; ++i) {
    merged_.phase_coverage.attributed_kernel_ns[i] +=
        process.phase_coverage.attributed_kernel_ns[i];
    merged_.phase_coverage.unattributed_kernel_ns[i] +=
        process.phase_coverage.unattributed_kernel_ns[i];
  }
  for (const Unattributed& entry : process.unattributed) {
    Unattributed& into = unattributed_[entry.reason];
    into.reason = entry.reason;
    into.ns += entry.ns;
    into.kernel_ns += entry.kernel_ns;
    into.activities += entry.activities;
  }
  for (const Fallback& entry : process.fallbacks) {
    Fallback& into = fallbacks_[entry.reason];
    into.reason = entry.reason;
    into.ns += entry.ns;
    into.activities += entry.activities;
  }
  for (const FamilyStats& family : process.families) {
    FamilyStats& into = families_[family.family];
    into.family = family.family;
    into.Merge(family);
  }
}

MergedAnalysis AnalysisMerger::Finish() && {
  MergedAnalysis merged = std::move(merged_);
  for (auto& [reason, entry] : unattributed_) merged.unattributed.push_back(entry);
  std::stable_sort(merged.unattributed.begin(), merged.unattributed.end(),
                   [](const Unattributed& a, const Unattributed& b) { return a.ns > b.ns; });
  for (auto& [reason, entry] : fallbacks_) merged.fallbacks.push_back(entry);
  for (auto& [name, family] : families_) merged.families.push_back(std::move(family));
  std::stable_sort(
      merged.families.begin(), merged.families.end(),
      [](const FamilyStats& a, const FamilyStats& b) { return a.total_ns > b.total_ns; });
  return merged;
}

}  // namespace gpuattr::collector
