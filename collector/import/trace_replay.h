// ReplayTrace: turns an ImportedTrace into the wire records the shim would have sent for each of
// its processes, and feeds them to one ProcessTrace per process, so that an import runs through
// exactly the join, attribution and report stages of a live capture.
//
// What the shim would have known and a trace file does not say is reconstructed here:
//  - the per-thread NVTX stack: a thread's ranges, sorted by (start, longer first), become a
//    properly nested push/pop sequence; a range that starts inside another but ends after it is
//    clipped to the enclosing range's end (counted in ReplayStats::clipped_ranges);
//  - the path node of each launch (ApiEnter.node): the ranges enclosing its start, [start, end);
//  - the launch's kind: kGraph when several activities share its correlation id (a graph
//    launch, 1:N) or its name says Graph, else the kind of its one activity, else from its name;
//  - the process of a device activity the file leaves unassigned: its launch's, else the process
//    with the most API calls.
// Only API calls that launched device work in the file, or are named like a launch (Launch,
// Memcpy, Memset), become launches; the first call of a (process, correlation id) wins. Device
// activities are never dropped: without a launch they are unattributed (launch_not_seen).
// Records are sent in timestamp order, so no reorder window is needed downstream. Graph node ids
// are not sent: a file does not say where a graph was captured, so graph kernels are attributed
// at their graph launch (docs/attribution.md rule 2).
//
// Runs on the main thread; owns nothing after it returns.
#ifndef GPUATTR_COLLECTOR_IMPORT_TRACE_REPLAY_H_
#define GPUATTR_COLLECTOR_IMPORT_TRACE_REPLAY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "import/imported_trace.h"

namespace gpuattr::collector {

struct ReplayStats {
  uint64_t processes = 0;
  uint64_t launches = 0;
  uint64_t activities = 0;
  uint64_t clipped_ranges = 0;
};

// One finished ProcessTrace per process of `trace`, analysed with `options`, in ascending pid
// order. A file is finite and already in memory, so its whole trace is the reorder window
// (AnalysisOptions::kWholeTraceWindow): every activity is joined and folded with all of the
// file's host side known. An error is a defect of the replay itself (the trace refused a record
// we built): kInternal.
StatusOr<std::vector<std::unique_ptr<ProcessTrace>>> ReplayTrace(const ImportedTrace& trace,
                                                                 const AnalysisOptions& options,
                                                                 ReplayStats* stats);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_TRACE_REPLAY_H_
