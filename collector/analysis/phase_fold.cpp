#include "analysis/phase_fold.h"

#include <algorithm>

namespace gpuattr::collector {

PhaseFold::PhaseFold(const TraceData& data, PathNames& paths, const PhaseRules& rules,
                     PhaseRules::NameMasks& name_masks)
    : data_(data), paths_(paths), rules_(rules), history_(data), name_masks_(name_masks) {}

std::optional<Phase> PhaseFold::PhaseOf(uint32_t node) {
  if (node == 0) return std::nullopt;
  const uint32_t pass = paths_.PassIdOf(node);
  if (pass >= phases_.size()) phases_.resize(paths_.pass_count());
  std::optional<std::optional<Phase>>& cached = phases_[pass];
  if (!cached) cached = rules_.PhaseOfPath(paths_.PassPath(pass), &name_masks_);
  return *cached;
}

void PhaseFold::Fold(const AttributedActivity& attributed) {
  const ActivityOutcome& outcome = attributed.outcome;
  const uint64_t ns = attributed.ns();
  const bool kernel = attributed.kernel();
  if (outcome.fallback) {
    Fallback& entry = fallbacks_[outcome.fallback];
    entry.ns += ns;
    entry.activities += 1;
  }
  if (outcome.node == 0) {
    Unattributed& entry = unattributed_[outcome.reason];
    entry.ns += ns;
    entry.activities += 1;
    if (!kernel) return;
    entry.kernel_ns += ns;
    // §Coverage: counts against the phase the main thread was in at the launch.
    if (attributed.launch && data_.main_tid) {
      const std::optional<Phase> main_phase =
          PhaseOf(history_.InnermostAt(*data_.main_tid, attributed.launch->enter_ns));
      if (main_phase) coverage_.unattributed_kernel_ns[static_cast<size_t>(*main_phase)] += ns;
    }
    return;
  }
  totals_.Add(outcome.phase, ns);
  if (outcome.phase && kernel) {
    coverage_.attributed_kernel_ns[static_cast<size_t>(*outcome.phase)] += ns;
  }
  if (kernel) attributed_kernel_ns_ += ns;
}

void PhaseFold::Finish(ProcessAnalysis& analysis) {
  analysis.phases = totals_;
  analysis.phase_coverage = coverage_;
  analysis.attributed_kernel_ns = attributed_kernel_ns_;
  for (auto& [reason, entry] : unattributed_) {
    entry.reason = reason;
    analysis.unattributed.push_back(entry);
  }
  std::stable_sort(analysis.unattributed.begin(), analysis.unattributed.end(),
                   [](const Unattributed& a, const Unattributed& b) { return a.ns > b.ns; });
  for (auto& [reason, entry] : fallbacks_) {
    entry.reason = reason;
    analysis.fallbacks.push_back(entry);
  }
}

}  // namespace gpuattr::collector
