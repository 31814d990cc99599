// BackwardThreads: whether a thread other than the main one is running a step's backward when it
// launches work outside any range of its own (docs/attribution.md §Phases, "Backward on autograd's
// threads").
//
// Autograd runs CUDA backward on device threads of its own, and DDP's reducer launches from there
// between autograd's evaluate ops (bucket copies, the gradients' division, the copies back), with
// no range open on that thread, or only an op's range that names no phase (`aten::copy_` under
// --ranges ops). Inheritance (attribution rule 2) gives a range-less launch the main thread's
// range, which during backward is often only the step. The rule: the launching thread began a
// backward-phase range within the step, at or before the launch; the step is the main thread's
// outermost range open at the launch. The launch's path stays what rules 1-2 gave it; only its
// phase becomes backward (as a collective kernel's becomes communication).
//
// Per thread it keeps the starts of its backward-phase ranges, read once from TraceData::history
// (push order, so ascending) as the history grows; a question is then two binary searches.
// Names defined late may change a range's phase: Refresh() rereads every history.
//
// Single-threaded, on the thread that folds. Memory: one timestamp per backward-phase range.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_BACKWARD_THREADS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_BACKWARD_THREADS_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/phase_fold.h"
#include "analysis/thread_history.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class BackwardThreads {
 public:
  // Both must outlive this; `phases` answers a range's phase.
  BackwardThreads(const TraceData& data, PhaseFold& phases);

  // Names were (re)defined: ranges' phases are asked again.
  void Refresh() { threads_.clear(); }

  // True when `tid` is not the main thread, the main thread has a range open at `t`, and `tid`
  // began a backward-phase range at or after the start of the main thread's outermost range open
  // at `t` and at or before `t`.
  bool InBackward(uint32_t tid, uint64_t t);

 private:
  struct ThreadScan {
    size_t entries_read = 0;                   // of TraceData::history[tid]
    std::vector<uint64_t> backward_starts_ns;  // ascending
  };
  const ThreadScan& Scan(uint32_t tid);

  const TraceData& data_;
  PhaseFold& phases_;
  ThreadHistory history_;
  std::unordered_map<uint32_t, ThreadScan> threads_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_BACKWARD_THREADS_H_
