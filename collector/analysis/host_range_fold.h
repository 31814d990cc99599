// HostRangeFold: the host side of a process's ranges (docs/attribution.md §Passes, §Ranges):
// closed push/pop ranges' durations per path node, start/end ranges' durations per (name,
// domain), and mark counts.
//
// Closed push/pop ranges are folded as they close (at the next release, when their names are
// more likely known), then may be dropped from TraceData (folded() says how many); their
// durations are kept in bounded samples per path node, read at the end by the pass tree (host_ns
// and instances, merged by path) and by the step fold (auto-detection). Start/end ranges and
// marks are few and kept whole by TraceData; they are summarised once, at the end.
//
// Single-threaded, on the thread that folds.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_HOST_RANGE_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_HOST_RANGE_FOLD_H_

#include <cstdint>
#include <functional>
#include <map>

#include "analysis/process_analysis.h"
#include "analysis/samples.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class HostRangeFold {
 public:
  // `data` must outlive this.
  explicit HostRangeFold(const TraceData& data) : data_(data) {}

  // Folds the closed ranges not folded yet, calling `closed` for each with a path node.
  void FoldClosed(const std::function<void(const HostRange&)>& closed);
  // How many of data.host_ranges, counted from the first ever, are folded.
  uint64_t folded() const { return folded_; }

  // Closed instances' durations by path node.
  const std::map<uint32_t, Samples<uint64_t>>& durations_by_node() const { return durations_; }

  // ranges (start/end, by name and domain) and marks. Once, with `data` finished.
  void FinishSpansAndMarks(ProcessAnalysis& analysis) const;

 private:
  const TraceData& data_;
  uint64_t folded_ = 0;
  std::map<uint32_t, Samples<uint64_t>> durations_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_HOST_RANGE_FOLD_H_
