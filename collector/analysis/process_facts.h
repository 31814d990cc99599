// AddProcessFacts: what a process's report entry says besides its device time, read from the
// finished TraceData into ProcessAnalysis: who the process is (its Hello), how its stream ended
// (status and refusals), every loss counter, its named threads and its capture window.
//
// Status and refusals come from one decision (ProcessStatus, docs/attribution.md §Status and loss):
// the shim's refusals, resolved in the catalogue (driver_missing, cupti_unavailable, ...), plus
// cupti_unavailable when CUPTI failed without saying why; no refusal when CUDA never came up
// (host_only). A stream cut before its end names the span it may have lost (Loss::lost_span).
//
// Pure: reads `data`, const, once, on the thread that ends the analysis.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_

#include "analysis/process_analysis.h"
#include "analysis/refusal_catalogue.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

// Sets process, status, refusals, the trace's loss counters (the join's and the folds' are set
// by their owners), threads and window; `analysis.device_measured` must be set already.
void AddProcessFacts(const TraceData& data, ProcessAnalysis& analysis);

// A refusal known outside the stream (an import's file without device work, an attach that
// could not be made; `seen`: what was seen, or empty) for a process whose device time was not
// measured: it becomes one of the process's refusals, and a host_only process refused, as if the
// stream had carried it.
void AddOutsideRefusal(const RefusalEntry& refusal, std::string seen, ProcessAnalysis& analysis);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_FACTS_H_
