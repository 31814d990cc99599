// Compiled graph calls in an imported trace (docs/pytorch.md §Compiled models): Inductor runs
// each call of a compiled graph inside `## Call CompiledFxGraph KEY ##` (KEY: the FX graph
// cache's), and the kernel maps of a live run name the graphs it saw by that key. A trace of
// another process may hold the same graphs under other keys (a bare run's graphs take their
// inputs in another order than a traced run's), so a call the maps do not name is matched to a
// map by its kernels: the kernels launched inside its first call whose names are a generated
// kernel of some map, in launch order, against each map's generated calls in call order; exactly
// one map alike names it, none or several leave its launches on its range.
// Main thread, once per imported file, before its replay.
#ifndef GPUATTR_COLLECTOR_IMPORT_COMPILED_GRAPH_CALLS_H_
#define GPUATTR_COLLECTOR_IMPORT_COMPILED_GRAPH_CALLS_H_

#include <string>
#include <utility>
#include <vector>

#include "analysis/kernel_maps.h"
#include "import/imported_trace.h"

namespace gpuattr::collector {

// (`## Call CompiledFxGraph KEY ##`, the range name of the map whose kernels its first call
// launched) for each graph call of `trace` that `maps` do not name and exactly one map matches.
std::vector<std::pair<std::string, std::string>> MatchCompiledGraphCalls(const ImportedTrace& trace,
                                                                         const KernelMaps& maps);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_COMPILED_GRAPH_CALLS_H_
