// ModuleFold: device time by PyTorch module and phase (docs/attribution.md §Modules), the table
// that answers "how much backward did layer3.conv2 cost, and how much recompute".
//
// A module is a range named `nn.Module: <Class>_<k>` (Kineto's with_modules events; the live
// annotator's, issue 19, by the same name). An attributed activity's module path is the module
// names on its pass path (path_names.h), outermost first, split at the last `backward` or
// `backward_unlinked` range (the PyTorch model's leaf, import/pytorch_model.h). Above the leaf are
// the modules whose forward created that backward; modules below it ran inside backward (a
// checkpoint's recompute): the first of them replaces its own name above and what follows it (a
// module name `Class_k` is one module instance), or, absent there, the modules above altogether.
// A path without a leaf keeps all its modules. The activity's phase (activity_folder.h) picks the
// term, so each row's terms add up to the device time attributed under that module path, and a
// path with no module is in no row.
//
// Single-threaded, on the thread that folds. Memory: one row per distinct module path, and a
// cached row index per pass (path_names.h) until names change (Refresh).
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

  // The rows, most device time first (ties by path). Once.
  std::vector<ModuleRow> Finish();

 private:
  // The row of a pass node's module path; -1: the path has no module.
  int64_t RowOf(uint32_t node);

  PathNames& paths_;
  std::vector<std::optional<int64_t>> rows_by_pass_;  // by pass id, once asked
  uint32_t last_node_ = 0;  // consecutive activities mostly share a node: RowOf's last answer
  int64_t last_row_ = -1;
  std::map<std::vector<std::string>, size_t> row_index_;  // module path -> rows_ index
  std::vector<ModuleRow> rows_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_MODULE_FOLD_H_
