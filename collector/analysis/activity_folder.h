// ActivityFolder: the streaming analysis of one process (docs/architecture.md §Streaming
// analysis). Device activities leave ProcessTrace's reorder window one by one, in start order,
// joined with their launch; the folder attributes each once and hands the outcome to every fold
// unit and to the observer; nothing per activity is kept.
//
//   release ──▶ attribution_rules ──▶ phase of the path ──┬─▶ pass_tree      (passes)
//   (activity,   (rules 1-4, then     (phase_fold)        ├─▶ device_sweep   (devices, gaps)
//                compiled_graph_join)                     ├─▶ copy_fold      (memory copies)
//    launch,                                              ├─▶ family_fold    (families)
//    late)                                                ├─▶ module_fold    (modules)
//                                                         ├─▶ phase_fold     (phases, coverage)
//                                                         ├─▶ step_fold      (steps)
//                                                         └─▶ observer       (exports)
//   closed ranges ──▶ host_range_fold (host durations, spans, marks) ──▶ pass tree, steps
//   value marks   ──▶ work_fold (the FLOP counter's ledger) ──▶ pass tree, steps
//
// An attributed collective kernel (family_fold's category) takes the communication phase
// whatever the phase of its path, and a launch from a thread running the step's backward, with
// no range of its own (inherited) or none naming a phase, the backward phase (backward_threads.h),
// so the phase terms still partition attributed time.
//
// Host-side data (ranges, graph nodes, strings) is read from `data` as it stands at each
// release; names may be defined late, so every name cache restarts when a name it read was
// unknown then, or was redefined (path_names.h). Finish() assembles ProcessAnalysis from the folds
// once the stream ended.
//
// Runs on whichever thread owns the ProcessTrace (the ingest thread while streaming);
// single-threaded.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_ACTIVITY_FOLDER_H_
#define GPUATTR_COLLECTOR_ANALYSIS_ACTIVITY_FOLDER_H_

#include <cstdint>

#include "analysis/attribution_rules.h"
#include "analysis/backward_threads.h"
#include "analysis/compiled_graph_join.h"
#include "analysis/copy_fold.h"
#include "analysis/device_sweep.h"
#include "analysis/family_fold.h"
#include "analysis/host_range_fold.h"
#include "analysis/launch_join.h"
#include "analysis/module_fold.h"
#include "analysis/pass_tree.h"
#include "analysis/path_names.h"
#include "analysis/phase_fold.h"
#include "analysis/process_analysis.h"
#include "analysis/process_trace.h"
#include "analysis/step_fold.h"
#include "analysis/thread_history.h"
#include "analysis/trace_data.h"
#include "analysis/work_fold.h"

namespace gpuattr::collector {

class ActivityFolder {
 public:
  // `data` and `options` must outlive this.
  ActivityFolder(const TraceData& data, const AnalysisOptions& options);
  ActivityFolder(const ActivityFolder&) = delete;
  ActivityFolder& operator=(const ActivityFolder&) = delete;

  // One activity leaving the window; `launch` null when its launch was not seen. `late`: it
  // starts before an activity already released, so it counts in every sum but in no union.
  void Release(const ActivityRecord& activity, const LaunchRecord* launch, bool late);
  // An activity leaving the reorder window that lies outside the capture window (window
  // streams, docs/attach.md): counted as excluded, and in nothing else.
  void ExcludeOutsideWindow() { ++excluded_activities_; }
  // A ValueMark the watermark passed (or, at the end, any left): its counts go to its pass and
  // to the steps open when it was sent.
  void FoldValueMark(const wire::ValueMark& mark);
  // The launch left the join (graph launches keep a per-family dedupe until then).
  void ForgetLaunch(uint32_t correlation_id, const LaunchRecord& launch);
  // Once, after the last Release, with `data` finished; `launches` are the join's counts.
  ProcessAnalysis Finish(const LaunchCounts& launches);

  // How many of data.host_ranges and data.pushes, counted from the first ever, are folded: the
  // owner may drop them from the front (TraceData::host_ranges_dropped, pushes_dropped).
  uint64_t folded_host_ranges() const { return host_ranges_.folded(); }
  uint64_t folded_pushes() const { return steps_.registered(); }

 private:
  void RefreshNames();
  void FoldClosedRanges();
  void Observe(const AttributedActivity& attributed);
  // A collective kernel (its family rule's category), another kernel, or a copy or set.
  WorkCategory CategoryOf(const ActivityRecord& activity);
  uint32_t pid() const { return data_.hello ? data_.hello->pid : 0; }

  const TraceData& data_;
  const AnalysisOptions& options_;
  PathNames paths_;
  PhaseRules::NameMasks phase_masks_;  // the phase rules' answers by name (pass tree and phases)
  ThreadHistory history_;
  AttributionRules rules_;
  PassTree passes_;
  DeviceSweep devices_;
  CopyFold copies_;
  FamilyFold families_;
  PhaseFold phases_;
  BackwardThreads backward_threads_;
  ModuleFold modules_;
  CompiledGraphJoin compiled_graphs_;
  HostRangeFold host_ranges_;
  StepFold steps_;
  WorkFold work_;
  Totals totals_;
  Loss loss_;
  uint64_t excluded_activities_ = 0;
  uint64_t last_end_ns_ = 0;  // latest end of a released activity with timestamps
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_ACTIVITY_FOLDER_H_
