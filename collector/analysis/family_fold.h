// FamilyFold: kernel families and their launch statistics (docs/attribution.md §Kernel families,
// §Launch statistics), and the cache of kernel names the other folds read.
//
// Every kernel name string is demangled and given its family once (FamilyRules, then the
// default normalisation) and cached until names change (a String record may redefine an id:
// Refresh). Per family: count, total, min, max, up to kFamilyExamples distinct demangled names in
// release order, launch shapes (most kernels first), and two bounded samples: the launch API's
// cost (ApiExit - ApiEnter, once per distinct launch: a graph launch remembers the families it
// sampled until it leaves the join, ForgetLaunch) and the launch-to-start latency (per kernel).
//
// Single-threaded, on the thread that folds. Memory: one entry per family and per distinct
// kernel name string, plus the bounded samples.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_FAMILY_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_FAMILY_FOLD_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/kernel_family.h"
#include "analysis/path_names.h"
#include "analysis/process_analysis.h"
#include "analysis/samples.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class FamilyFold {
 public:
  // A family as it folds: its stats and the samples that Finish summarises into them.
  struct FamilyEntry {
    FamilyStats stats;
    Samples<uint64_t> api_samples;
    Samples<int64_t> latency_samples;
  };
  struct KernelNames {
    std::string demangled;
    std::string family;
    bool communication = false;    // a collective (its family rule's category)
    FamilyEntry* entry = nullptr;  // its family's entry (a std::map: stable), once it folded
  };

  // `data`, `paths` and `rules` must outlive this.
  FamilyFold(const TraceData& data, PathNames& paths, const FamilyRules& rules);

  // Names were (re)defined: cached names restart.
  void Refresh() { names_.clear(); }

  // The demangled name, family and category of a kernel's name string.
  const KernelNames& NamesOf(uint32_t name_string) { return Known(name_string); }
  // The leaf frame of the folded exports: the kernel's family, or the kind of a copy or set.
  const std::string& LeafFamily(const ActivityRecord& activity);

  // A kernel with timestamps; `launch` null when never seen.
  void Fold(const ActivityRecord& kernel, const LaunchRecord* launch);
  // The launch left the join: a graph launch's per-family dedupe goes with it.
  void ForgetLaunch(uint32_t correlation_id);

  // The families by total time, largest first. Once.
  std::vector<FamilyStats> Finish();

 private:
  KernelNames& Known(uint32_t name_string);

  const TraceData& data_;
  PathNames& paths_;
  const FamilyRules& rules_;
  std::unordered_map<uint32_t, KernelNames> names_;
  std::map<std::string, FamilyEntry> families_;
  std::unordered_map<uint32_t, std::vector<std::string>> graph_families_;  // by correlation id
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_FAMILY_FOLD_H_
