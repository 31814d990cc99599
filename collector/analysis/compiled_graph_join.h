// CompiledGraphJoin: places each launch a torch.compile'd graph's call made where the graph's
// kernel map says (kernel_maps.h, docs/pytorch.md §Compiled models). The annotator runs each call
// of a compiled graph inside a range naming the graph and emits nothing inside it; this turns
// the range's launches into the module paths the eager annotator would have given them, as
// derived path nodes below the graph's range (path_names.h), so every fold reads them as it reads
// eager ranges: module rows, phases, recompute.
//
// A map names modules from the compiled frame's root, and one compiled graph may serve many
// module instances (every block of a model that compiles its blocks), so they are named where a
// call runs: below the innermost `nn.Module: ` range around the graph's range (the call of the
// module whose forward compiled, or the autograd node that call made, around its backward), which
// is the root itself: `nn.Module: blocks.3` roots `nn.Module: blocks.3.attn`, a root call
// `nn.Module: Gpt_0` (its class and a number) roots `nn.Module: attn`. With no module range
// around the call (a compiled function given the model), the root is the map's `root`.
//
// Within one instance of a graph's range on one thread, the wrapper's calls run in map order:
//   - a launch of a kernel Inductor generated is matched by name: the k-th launch named N is the
//     k-th call of N (a kernel name recurs where Inductor shares identical code);
//   - any other launch (an extern op's cuBLAS kernel, a fallback's aten kernels) belongs to the
//     extern calls between the last generated kernel matched and the next generated call; a
//     kernel whose name says it is a GEMM (attention) is the j-th such call's when it is the
//     j-th such launch there and there are that many; else the launch goes to the deepest
//     module the candidate calls share, when they share a phase;
//   - a launch the map cannot place (more launches of a name than its calls, extern calls of
//     different phases) stays on the graph's range: named, never guessed.
// This holds because a wrapper's call() is straight-line code launching on one stream, so
// activities leave the reorder window in launch order. A CUDA graph captured inside a graph's
// range (mode="reduce-overhead": cudagraph trees capture one wrapper call) replays those calls:
// its kernels, attributed to their capture-time node (the graph's range), are placed alike, each
// replay (graph launch) an instance.
//
// Single-threaded, on the thread that folds. Memory: the maps, one counter set per graph and
// thread (the latest instance), and a cached answer per path node.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_COMPILED_GRAPH_JOIN_H_
#define GPUATTR_COLLECTOR_ANALYSIS_COMPILED_GRAPH_JOIN_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/kernel_maps.h"
#include "analysis/path_names.h"
#include "analysis/thread_history.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class CompiledGraphJoin {
 public:
  // `kernel_maps`: the process's kernel map file, or a directory of them named <pid>.jsonl
  // (gpuattr run's); empty: none, and no launch is moved. `data` and `paths` must outlive this.
  // `profiler_range_names`: graph calls named as torch.profiler names them, each with the range
  // name of its map, beside those the maps file names.
  CompiledGraphJoin(
      const TraceData& data, PathNames& paths, std::string kernel_maps,
      const std::vector<std::pair<std::string, std::string>>& profiler_range_names = {});

  // Names were (re)defined (PathNames::Refresh): the cached places of nodes restart.
  void Refresh();

  // The node where the map places `activity`, launched by `launch` on node `node`; `node` when
  // it was not launched inside a mapped graph's range.
  uint32_t Place(uint32_t node, const ActivityRecord& activity, const LaunchRecord* launch);

  // The range names of the modules whose nodes the kernel Place placed last fuses, when it
  // fuses several; else empty.
  const std::vector<std::string>& fused_modules() const { return fused_modules_; }

  // Launches placed by a map, and those left on their graph's range.
  uint64_t placed() const { return placed_; }
  uint64_t unplaced() const { return unplaced_; }
  uint64_t rejected_map_lines() const { return maps_.rejected_lines(); }

 private:
  // Where a path node sits relative to a compiled graph's range.
  struct GraphOfNode {
    uint32_t graph_node = 0;         // 0: not inside a compiled graph's range
    std::string range_name;          // the graph's range
    std::vector<std::string> inner;  // names between the graph's range and the node
    std::string enclosing_module;    // the innermost module range around the graph's; or empty
  };
  struct Instance {
    uint64_t start_ns = 0;
    std::unordered_map<std::string, uint32_t> launches_by_kernel;
    int64_t last_generated_call = -1;  // map index of the generated call matched last
    // Launches of GEMM and of attention kernels since then.
    std::array<uint32_t, 2> extern_launches{};
  };

  const GraphOfNode& GraphOf(uint32_t node);
  const GraphMap* MapOf(const std::string& range_name);
  // The call index of a generated kernel's launch, or -1; advances the instance.
  int64_t GeneratedCall(const GraphMap& map, Instance& instance, const std::string& kernel);
  // The path of a launch of `kernel` (empty: a copy or a set) among the extern calls after the
  // last generated one; none: they differ in phase, or there is none.
  static std::optional<std::vector<std::string>> ExternPath(const GraphMap& map,
                                                            const GraphOfNode& graph,
                                                            Instance& instance,
                                                            std::string_view kernel);
  // The map file: kernel_maps_, or its <pid>.jsonl once the process's Hello named it.
  const std::string& MapsPath();
  // The range names of a call's modules (qualified from the root), where its graph ran.
  static std::vector<std::string> ModuleRanges(const GraphMap& map, const GraphOfNode& graph,
                                               const std::vector<std::string>& modules);
  uint32_t Derive(const GraphOfNode& graph, const std::vector<std::string>& path);

  const TraceData& data_;
  PathNames& paths_;
  ThreadHistory history_;
  std::string kernel_maps_;
  std::optional<std::string> maps_path_;
  KernelMaps maps_;
  std::unordered_set<std::string> read_for_;  // graph ranges the maps file was read again for
  std::unordered_map<uint32_t, GraphOfNode> graph_of_node_;
  std::map<std::pair<uint32_t, uint32_t>, Instance> instances_;  // (tid, graph node)
  std::vector<std::string> fused_modules_;
  uint64_t placed_ = 0;
  uint64_t unplaced_ = 0;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_COMPILED_GRAPH_JOIN_H_
