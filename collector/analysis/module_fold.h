// ModuleFold: device time by PyTorch module and phase (docs/attribution.md §Modules), the table
// that answers "how much backward did layer3.conv2 cost, and how much recompute".
//
// A module is a range named `nn.Module: <name>`: Kineto's with_modules events name every module
// instance `<Class>_<k>`, the live annotator (issue 19) a root so and a submodule by its
// qualified name; either way one name is one module. An attributed activity belongs to the
// innermost module of its pass path (path_names.h), so a module has one row whatever ran it: its
// forward, its backward (the modules above the PyTorch model's last `backward` leaf made that
// backward, import/pytorch_model.h), its recompute (modules below the leaf ran inside backward),
// and each call of a module shared by several parents. The activity's phase
// (activity_folder.h) picks the term, so each row's terms add up to the device time attributed
// to that module itself (not its children), and a path with no module is in no row. A row's path
// is where the module first ran forward (a path without a leaf), else where it first ran; its
// calls are the instances of its forward and recompute pass nodes (Finish).
//
// Single-threaded, on the thread that folds. Memory: one row per module, and a cached row index
// per pass (path_names.h) until names change (Refresh).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_MODULE_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_MODULE_FOLD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attributed_activity.h"
#include "analysis/path_names.h"
#include "analysis/process_analysis.h"

namespace gpuattr::collector {

// The names the PyTorch model writes (import/pytorch_model.h) and this fold reads.
inline constexpr std::string_view kModuleRangePrefix = "nn.Module: ";
inline constexpr std::string_view kBackwardLeaf = "backward";
inline constexpr std::string_view kBackwardUnlinkedLeaf = "backward_unlinked";

class ModuleFold {
 public:
  // `paths` must outlive this.
  explicit ModuleFold(PathNames& paths) : paths_(paths) {}

  // Names were (re)defined: cached module paths restart.
  void Refresh() {
    rows_by_pass_.clear();
    last_node_ = 0;
  }

  // An attributed activity (outcome.node != 0) with timestamps.
  void Fold(const AttributedActivity& attributed);
  // A compiled kernel on pass path `path` that fused the ops of the modules `fused` (range
  // names; compiled_graph_join.h) took `ns` in `phase`: each of them but the one it went to
  // shares it as `fused` time, its row made if it has none (its path: `path`'s modules, then it).
  void FoldFused(const std::vector<std::string>& fused, const std::vector<std::string>& path,
                 std::optional<Phase> phase, uint64_t ns);

  // The rows, most device time first (ties by path), with each module's calls counted from the
  // finished pass tree `passes`; a module that ran but had no device time has a row of zeros.
  // Once.
  std::vector<ModuleRow> Finish(const std::vector<PassNode>& passes);

 private:
  // The row of the innermost module of `path` (a pass path), added at its first sight; -1: the
  // path has no module.
  int64_t RowOfPath(const std::vector<std::string>& path);
  // RowOfPath of a pass node's path, cached by pass.
  int64_t RowOf(uint32_t node);
  // Adds the forward and recompute calls of `passes` and their children to the rows.
  void CountCalls(const std::vector<PassNode>& passes);

  PathNames& paths_;
  std::vector<std::optional<int64_t>> rows_by_pass_;  // by pass id, once asked
  uint32_t last_node_ = 0;  // consecutive activities mostly share a node: RowOf's last answer
  int64_t last_row_ = -1;
  std::map<std::string, size_t, std::less<>> row_index_;  // module name -> rows_ index
  std::vector<ModuleRow> rows_;
  std::vector<bool> path_is_forward_;  // by row: its path is a forward call's
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_MODULE_FOLD_H_
