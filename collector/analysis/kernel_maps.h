// KernelMaps: the kernel maps of a process's torch.compile'd graphs (docs/pytorch.md §Compiled
// models), read from the JSON lines the Python annotator writes (format gpuattr.kernel_map/1,
// python/gpuattr_site/gpuattr_pytorch/compiled_graphs.py), one line per graph:
//
//   {"format": "gpuattr.kernel_map/1", "graph": KEY, "range": "torch.compile: KEY forward",
//    "root_class": CLASS, "root": RANGE NAME,
//    "calls": [{"kernel": NAME, "generated": BOOL, "phase": "forward"|"backward"|"recompute"|null,
//               "modules": [QUALIFIED NAME, ...], "fused": [QUALIFIED NAME, ...]}, ...]}
//
// `calls` is the graph wrapper's calls in the order it makes them: a kernel Inductor generated
// (its launch carries its name) or an extern op (a cuBLAS GEMM, an aten fallback: its launches
// carry other names); `modules` the module calls that enclose the call's FX nodes, outermost
// first, by qualified name from the compiled frame's root module (''), of class `root_class`,
// which is named `root` when no module range encloses the graph's call (compiled_graph_join.h);
// `fused`, when a kernel computes nodes of several modules, those modules. A second kind of line
// names a graph as torch.profiler does, for `gpuattr import --kernel-maps`:
//
//   {"format": "gpuattr.kernel_map/1", "graph": KEY, "range": "torch.compile: KEY forward",
//    "profiler_range": "## Call CompiledFxGraph FX_GRAPH_CACHE_KEY ##"}
//
// (Inductor's record_function around each call of a graph; its key is the FX graph cache's,
// the same in every process that compiles the same graph alike), so a range of either name
// finds the map.
//
// The file is the traced program's writing: nothing in it is trusted. A line that is not a map
// (bad JSON, wrong types, over the bounds below) is skipped and counted; a file is read in
// complete lines from where the last read stopped, so a live run's file, which grows as the
// program compiles, is read again when a graph's range has no map yet.
//
// Single-threaded, on the thread that folds. Memory: the maps, at most kMaxBytes of lines read.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_KERNEL_MAPS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_KERNEL_MAPS_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/phase.h"
#include "base/status.h"

namespace gpuattr::collector {

inline constexpr std::string_view kKernelMapFormat = "gpuattr.kernel_map/1";
inline constexpr std::string_view kCompiledGraphRangePrefix = "torch.compile: ";
inline constexpr std::string_view kProfilerGraphRangePrefix = "## Call CompiledFxGraph ";

// Whether a range is a compiled graph's call: gpuattr's range, or Inductor's in a profiled run.
inline bool IsCompiledGraphRange(std::string_view name) {
  return name.starts_with(kCompiledGraphRangePrefix) || name.starts_with(kProfilerGraphRangePrefix);
}

struct CompiledCall {
  std::string kernel;
  bool generated = false;
  std::optional<Phase> phase;        // forward, backward or recompute; none: not mapped
  std::vector<std::string> modules;  // qualified names from the root (''), outermost first
  std::vector<std::string> fused;    // the modules a kernel fusing several computes
};

struct GraphMap {
  std::string root_class;  // empty: no call has a module
  std::string root;        // the root's range name when no module range encloses a call
  std::vector<CompiledCall> calls;
  // Generated kernels' call indexes by kernel name, in call order.
  std::unordered_map<std::string, std::vector<uint32_t>> generated_calls;
};

class KernelMaps {
 public:
  static constexpr uint64_t kMaxBytes = 256ull << 20;
  static constexpr size_t kMaxCalls = 1u << 20;
  static constexpr size_t kMaxModules = 256;
  static constexpr size_t kMaxNameBytes = 4096;

  // Reads the complete lines `path` holds past what was read of it before. A file that is not
  // there yet is no error (a live run's program may not have compiled anything); one that cannot
  // be read is kNotFound.
  Status ReadNewLines(const std::string& path);
  // One line; false when it is not a map (counted in rejected_lines).
  bool AddLine(std::string_view line);

  // Names the graph of range `range` as torch.profiler names its calls (the first name stands).
  void NameProfilerRange(std::string profiler_range, std::string range);

  // The map of the graph whose calls run in range `range_name` (either name), or null.
  const GraphMap* Find(std::string_view range_name) const;
  // The maps by gpuattr's range name.
  const std::unordered_map<std::string, GraphMap>& graphs() const { return graphs_; }
  size_t graph_count() const { return graphs_.size(); }
  uint64_t rejected_lines() const { return rejected_lines_; }

 private:
  // A line naming a graph's range as torch.profiler does; false when it is not one.
  bool AddProfilerRange(const nlohmann::json& line);

  std::unordered_map<std::string, GraphMap> graphs_;  // by range name
  // torch.profiler's range name -> gpuattr's, for the graphs whose name a line gave.
  std::unordered_map<std::string, std::string> profiler_ranges_;
  uint64_t read_bytes_ = 0;  // of the file, complete lines only
  uint64_t rejected_lines_ = 0;
};

// The range names a call's launches belong under, below its graph's range, given its modules'
// range names: forward, the modules; backward, those and the `backward` leaf, as the eager
// annotator names them; recompute, `backward`, `recompute` and the modules re-run inside it.
std::vector<std::string> CompiledCallPath(std::optional<Phase> phase,
                                          const std::vector<std::string>& modules);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_KERNEL_MAPS_H_
