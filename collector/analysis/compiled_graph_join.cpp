#include "analysis/compiled_graph_join.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <system_error>

#include "analysis/module_fold.h"

namespace gpuattr::collector {

CompiledGraphJoin::CompiledGraphJoin(
    const TraceData& data, PathNames& paths, std::string kernel_maps,
    const std::vector<std::pair<std::string, std::string>>& profiler_range_names)
    : data_(data), paths_(paths), history_(data), kernel_maps_(std::move(kernel_maps)) {
  for (const auto& [profiler_range, range] : profiler_range_names) {
    maps_.NameProfilerRange(profiler_range, range);
  }
}

const std::string& CompiledGraphJoin::MapsPath() {
  if (maps_path_ || !data_.hello) return maps_path_ ? *maps_path_ : kernel_maps_;
  std::error_code error;
  maps_path_ = std::filesystem::is_directory(kernel_maps_, error)
                   ? kernel_maps_ + "/" + std::to_string(data_.hello->pid) + ".jsonl"
                   : kernel_maps_;
  return *maps_path_;
}

void CompiledGraphJoin::Refresh() { graph_of_node_.clear(); }

const CompiledGraphJoin::GraphOfNode& CompiledGraphJoin::GraphOf(uint32_t node) {
  auto cached = graph_of_node_.find(node);
  if (cached != graph_of_node_.end()) return cached->second;
  GraphOfNode out;
  std::vector<std::string> inner;
  for (uint32_t id = node, depth = 0; id != 0 && depth < PathNames::kMaxDepth; ++depth) {
    auto def = data_.path_nodes.find(id);
    if (def == data_.path_nodes.end()) break;
    auto name = data_.strings.find(def->second.name_string);
    if (name == data_.strings.end()) break;
    if (out.graph_node == 0) {
      if (IsCompiledGraphRange(name->second)) {
        out.graph_node = id;
        out.range_name = name->second;
        out.inner.assign(inner.rbegin(), inner.rend());
      } else {
        inner.push_back(name->second);
      }
    } else if (name->second.starts_with(kModuleRangePrefix)) {
      out.enclosing_module = name->second;
      break;
    }
    id = def->second.parent;
  }
  return graph_of_node_.emplace(node, std::move(out)).first->second;
}

std::vector<std::string> CompiledGraphJoin::ModuleRanges(const GraphMap& map,
                                                         const GraphOfNode& graph,
                                                         const std::vector<std::string>& modules) {
  // A root call's range is `nn.Module: <Class>_<k>`; a submodule's, its qualified name.
  const std::string& around = graph.enclosing_module;
  const std::string root_prefix = std::string(kModuleRangePrefix) + map.root_class + "_";
  const bool around_is_root_call =
      !map.root_class.empty() && around.size() > root_prefix.size() &&
      around.starts_with(root_prefix) &&
      std::all_of(around.begin() + static_cast<std::ptrdiff_t>(root_prefix.size()), around.end(),
                  [](char c) { return c >= '0' && c <= '9'; });
  const std::string prefix =
      around.empty() || around_is_root_call ? std::string(kModuleRangePrefix) : around + ".";
  std::vector<std::string> names;
  for (const std::string& module : modules) {
    if (!module.empty()) {
      names.push_back(prefix + module);
    } else if (around.empty() && !map.root.empty()) {
      names.push_back(map.root);  // else the root's range is the one around the graph's
    }
  }
  return names;
}

const GraphMap* CompiledGraphJoin::MapOf(const std::string& range_name) {
  const GraphMap* map = maps_.Find(range_name);
  // A live run's program writes a graph's map before the graph's first call: a range without
  // one has the file read again, once.
  if (map == nullptr && read_for_.insert(range_name).second) {
    if (maps_.ReadNewLines(MapsPath()).ok()) map = maps_.Find(range_name);
  }
  return map;
}

int64_t CompiledGraphJoin::GeneratedCall(const GraphMap& map, Instance& instance,
                                         const std::string& kernel) {
  auto calls = map.generated_calls.find(kernel);
  if (calls == map.generated_calls.end()) return -1;
  const uint32_t launched = instance.launches_by_kernel[kernel]++;
  if (launched >= calls->second.size()) return -1;
  instance.last_generated_call = calls->second[launched];
  instance.extern_launches = {};
  return instance.last_generated_call;
}

namespace {

// What an extern call or a kernel computes, as far as names tell; the first two index
// Instance::extern_launches.
enum class WorkKind { kGemm, kAttention, kOther };

std::string Lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// What a launched kernel computes, by its name: cuBLAS, CUTLASS and Tensile name their GEMMs so,
// and attention kernels say so (flash, fmha).
WorkKind KernelWork(std::string_view kernel) {
  const std::string name = Lowered(kernel);
  if (name.find("gemm") != std::string::npos) return WorkKind::kGemm;
  if (name.find("attention") != std::string::npos || name.find("fmha") != std::string::npos ||
      name.find("flash") != std::string::npos) {
    return WorkKind::kAttention;
  }
  return WorkKind::kOther;
}

// What an extern call computes, by its op: `extern_kernels.addmm`,
// `torch.ops.aten._scaled_dot_product_flash_attention.default`.
WorkKind CallWork(std::string_view call) {
  static constexpr std::string_view kGemmOps[] = {"mm",      "addmm",      "bmm",
                                                  "baddbmm", "_scaled_mm", "_int_mm"};
  const std::string name = Lowered(call);
  for (std::string_view op : kGemmOps) {
    if (name.ends_with("." + std::string(op)) ||
        name.find("." + std::string(op) + ".") != std::string::npos) {
      return WorkKind::kGemm;
    }
  }
  return name.find("attention") != std::string::npos ? WorkKind::kAttention : WorkKind::kOther;
}

}  // namespace

std::optional<std::vector<std::string>> CompiledGraphJoin::ExternPath(const GraphMap& map,
                                                                      const GraphOfNode& graph,
                                                                      Instance& instance,
                                                                      std::string_view kernel) {
  // The extern calls between the last generated kernel and the next generated call; those that
  // compute what the launch's name says it computes, when any do.
  std::vector<const CompiledCall*> run;
  for (size_t i = static_cast<size_t>(instance.last_generated_call + 1);
       i < map.calls.size() && !map.calls[i].generated; ++i) {
    run.push_back(&map.calls[i]);
  }
  const WorkKind work = KernelWork(kernel);
  if (work != WorkKind::kOther) {
    std::vector<const CompiledCall*> same;
    for (const CompiledCall* call : run) {
      if (CallWork(call->kernel) == work) same.push_back(call);
    }
    // The j-th GEMM (or attention) kernel of the run is its j-th GEMM (attention) call's, while
    // there are as many calls as launches.
    const uint32_t launched = instance.extern_launches[static_cast<size_t>(work)]++;
    if (launched < same.size()) {
      run = {same[launched]};
    } else if (!same.empty()) {
      run = std::move(same);
    }
  }
  if (run.empty() || !run.front()->phase) return std::nullopt;
  std::vector<std::string> common = run.front()->modules;
  for (const CompiledCall* call : run) {
    if (call->phase != run.front()->phase) return std::nullopt;
    auto mismatch =
        std::mismatch(common.begin(), common.end(), call->modules.begin(), call->modules.end());
    common.erase(mismatch.first, common.end());
  }
  return CompiledCallPath(run.front()->phase, ModuleRanges(map, graph, common));
}

uint32_t CompiledGraphJoin::Derive(const GraphOfNode& graph, const std::vector<std::string>& path) {
  uint32_t node = graph.graph_node;
  for (const std::string& name : path) node = paths_.DerivedChild(node, name);
  for (const std::string& name : graph.inner) node = paths_.DerivedChild(node, name);
  return node;
}

uint32_t CompiledGraphJoin::Place(uint32_t node, const ActivityRecord& activity,
                                  const LaunchRecord* launch) {
  fused_modules_.clear();
  if (kernel_maps_.empty() || node == 0 || launch == nullptr) return node;
  const GraphOfNode& graph = GraphOf(node);
  if (graph.graph_node == 0) return node;
  const GraphMap* map = MapOf(graph.range_name);
  // A replayed CUDA graph's kernel has its capture's node: each replay (its graph launch) runs
  // the calls captured inside the graph's range once more.
  const std::optional<uint64_t> start =
      activity.graph_node_id != 0
          ? std::optional<uint64_t>(launch->enter_ns)
          : history_.StartOfOpen(launch->tid, launch->enter_ns, graph.graph_node);
  if (map == nullptr || !start) {
    ++unplaced_;
    return node;
  }
  Instance& instance = instances_[{launch->tid, graph.graph_node}];
  if (instance.start_ns != *start) {
    instance = Instance();
    instance.start_ns = *start;
  }

  std::optional<std::vector<std::string>> path;
  const std::string kernel =
      activity.kind == ActivityKind::kKernel ? paths_.Name(activity.name_string) : std::string();
  if (!kernel.empty() && map->generated_calls.contains(kernel)) {
    const int64_t call = GeneratedCall(*map, instance, kernel);
    if (call >= 0) {
      const CompiledCall& mapped = map->calls[static_cast<size_t>(call)];
      if (mapped.phase) {
        path = CompiledCallPath(mapped.phase, ModuleRanges(*map, graph, mapped.modules));
        fused_modules_ = ModuleRanges(*map, graph, mapped.fused);
      }
    }
  } else {
    path = ExternPath(*map, graph, instance, kernel);
  }
  if (!path) {
    ++unplaced_;
    return node;
  }
  ++placed_;
  return Derive(graph, *path);
}

}  // namespace gpuattr::collector
