// PhaseFold: device time by phase and the coverage of attribution (docs/attribution.md §Phases,
// §Coverage).
//
// Each attributed activity counts in exactly one phase, that of its path (PhaseRules), or in
// other_ns, so the phase terms sum to the attributed device time. Coverage counts attributed
// kernel time, unattributed time by reason, fallbacks by reason, and per phase P the kernel time
// attributed to P against the unattributed kernel time launched while the main thread's stack
// was in P. A path's phase is that of its pass (path_names.h: the rules see ProfilerStep#* as the
// pass tree does), cached per pass (paths repeat across millions of activities) until names
// change (Refresh).
//
// Single-threaded, on the thread that folds. Memory: one entry per path node, reason, fallback.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PHASE_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PHASE_FOLD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attributed_activity.h"
#include "analysis/path_names.h"
#include "analysis/phase.h"
#include "analysis/process_analysis.h"
#include "analysis/thread_history.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class PhaseFold {
 public:
  // All must outlive this. `name_masks` caches the rules' answers by name (shared with the pass
  // tree's phases: names do not change meaning, so it is kept across Refresh).
  PhaseFold(const TraceData& data, PathNames& paths, const PhaseRules& rules,
            PhaseRules::NameMasks& name_masks);

  // Names were (re)defined: cached phases restart.
  void Refresh() { phases_.clear(); }

  // The phase of a path node's path; empty for node 0 and for paths no rule matches.
  std::optional<Phase> PhaseOf(uint32_t node);

  // An activity with timestamps whose outcome carries its phase (PhaseOf its node).
  void Fold(const AttributedActivity& attributed);

  // phases, phase_coverage, attributed_kernel_ns, unattributed (largest first) and fallbacks
  // (by reason). Once.
  void Finish(ProcessAnalysis& analysis);

 private:
  const TraceData& data_;
  PathNames& paths_;
  const PhaseRules& rules_;
  ThreadHistory history_;
  std::vector<std::optional<std::optional<Phase>>> phases_;  // by pass id, once asked
  PhaseRules::NameMasks& name_masks_;
  PhaseTotals totals_;
  PhaseCoverage coverage_;
  uint64_t attributed_kernel_ns_ = 0;
  std::map<std::string, Unattributed> unattributed_;  // by reason
  std::map<std::string, Fallback> fallbacks_;         // by reason
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PHASE_FOLD_H_
