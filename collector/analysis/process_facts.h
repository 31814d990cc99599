// AddProcessFacts: what a process's report entry says besides its device time, read from the
// finished TraceData into ProcessAnalysis: who the process is (its Hello), how its stream ended
// (status and refusals), every loss counter, its named threads and its capture window.
//
// Status (docs/attribution.md §Loss): refused when no device time was measured; truncated when
// the stream ended without Goodbye (a window's: without WindowEnd) or CUPTI finalized itself
// mid-run (device records stop early); complete otherwise. Refusals are the shim's, resolved in
// the catalogue, plus the collector's own: cuda_not_initialized when CUDA never came up, and
// cupti_unavailable when CUPTI failed without saying why.
//
// Pure: reads `data`, const, once, on the thread that ends the analysis.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_

#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

// Sets process, status, refusals, the trace's loss counters (the join's and the folds' are set
// by their owners), threads and window; `analysis.device_measured` must be set already.
void AddProcessFacts(const TraceData& data, ProcessAnalysis& analysis);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_
