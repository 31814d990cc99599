#include "analysis/kernel_maps.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/module_fold.h"

namespace gpuattr::collector {

namespace {

constexpr std::string_view kRecomputeRange = "recompute";

bool IsName(const nlohmann::json& value) {
  return value.is_string() && !value.get_ref<const std::string&>().empty() &&
         value.get_ref<const std::string&>().size() <= KernelMaps::kMaxNameBytes;
}

// A JSON array of qualified module names ('' is the root) at `key`, or absent; false for
// anything else.
bool ReadModules(const nlohmann::json& call, const char* key, std::vector<std::string>& out) {
  auto names = call.find(key);
  if (names == call.end()) return true;
  if (!names->is_array() || names->size() > KernelMaps::kMaxModules) return false;
  for (const nlohmann::json& name : *names) {
    if (!name.is_string() ||
        name.get_ref<const std::string&>().size() > KernelMaps::kMaxNameBytes) {
      return false;
    }
    out.push_back(name.get<std::string>());
  }
  return true;
}

// An optional name of the map; false when present and not a name.
bool ReadOptionalName(const nlohmann::json& map, const char* key, std::string& out) {
  auto name = map.find(key);
  if (name == map.end()) return true;
  if (!IsName(*name)) return false;
  out = name->get<std::string>();
  return true;
}

std::optional<CompiledCall> ReadCall(const nlohmann::json& call) {
  if (!call.is_object()) return std::nullopt;
  auto kernel = call.find("kernel");
  auto generated = call.find("generated");
  auto phase = call.find("phase");
  if (kernel == call.end() || !IsName(*kernel) || generated == call.end() ||
      !generated->is_boolean()) {
    return std::nullopt;
  }
  CompiledCall out;
  out.kernel = kernel->get<std::string>();
  out.generated = generated->get<bool>();
  if (phase != call.end() && !phase->is_null()) {
    if (!phase->is_string()) return std::nullopt;
    const std::string& name = phase->get_ref<const std::string&>();
    if (name == "forward") {
      out.phase = Phase::kForward;
    } else if (name == "backward") {
      out.phase = Phase::kBackward;
    } else if (name == "recompute") {
      out.phase = Phase::kRecompute;
    } else {
      return std::nullopt;
    }
  }
  if (!ReadModules(call, "modules", out.modules) || !ReadModules(call, "fused", out.fused)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

Status KernelMaps::ReadNewLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status();
    return NotFoundError("cannot open the kernel maps '" + path + "': " + std::strerror(errno));
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
  if (size <= read_bytes_ || read_bytes_ >= kMaxBytes) return Status();
  in.seekg(static_cast<std::streamoff>(read_bytes_));
  std::string text(std::min(size, kMaxBytes) - read_bytes_, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return NotFoundError("cannot read the kernel maps '" + path + "'");
  const size_t complete = text.rfind('\n');
  if (complete == std::string::npos) return Status();
  std::string_view lines(text.data(), complete + 1);
  read_bytes_ += lines.size();
  while (!lines.empty()) {
    const size_t end = lines.find('\n');
    if (end > 0) AddLine(lines.substr(0, end));
    lines.remove_prefix(end + 1);
  }
  return Status();
}

bool KernelMaps::AddProfilerRange(const nlohmann::json& line) {
  auto range = line.find("range");
  auto profiler_range = line.find("profiler_range");
  if (line.contains("calls") || range == line.end() || !IsName(*range) ||
      !range->get_ref<const std::string&>().starts_with(kCompiledGraphRangePrefix) ||
      !IsName(*profiler_range) ||
      !profiler_range->get_ref<const std::string&>().starts_with(kProfilerGraphRangePrefix)) {
    ++rejected_lines_;
    return false;
  }
  NameProfilerRange(profiler_range->get<std::string>(), range->get<std::string>());
  return true;
}

void KernelMaps::NameProfilerRange(std::string profiler_range, std::string range) {
  profiler_ranges_.try_emplace(std::move(profiler_range), std::move(range));
}

bool KernelMaps::AddLine(std::string_view line) {
  const nlohmann::json map = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  auto format = map.is_object() ? map.find("format") : map.end();
  if (format != map.end() && *format == kKernelMapFormat && map.contains("profiler_range")) {
    return AddProfilerRange(map);
  }
  auto range = map.is_object() ? map.find("range") : map.end();
  auto calls = map.is_object() ? map.find("calls") : map.end();
  if (format == map.end() || *format != kKernelMapFormat || range == map.end() || !IsName(*range) ||
      !range->get_ref<const std::string&>().starts_with(kCompiledGraphRangePrefix) ||
      calls == map.end() || !calls->is_array() || calls->size() > kMaxCalls) {
    ++rejected_lines_;
    return false;
  }
  GraphMap graph;
  if (!ReadOptionalName(map, "root_class", graph.root_class) ||
      !ReadOptionalName(map, "root", graph.root)) {
    ++rejected_lines_;
    return false;
  }
  graph.calls.reserve(calls->size());
  for (const nlohmann::json& entry : *calls) {
    std::optional<CompiledCall> call = ReadCall(entry);
    if (!call) {
      ++rejected_lines_;
      return false;
    }
    if (call->generated) {
      graph.generated_calls[call->kernel].push_back(static_cast<uint32_t>(graph.calls.size()));
    }
    graph.calls.push_back(std::move(*call));
  }
  // A graph compiled twice (the same code) maps alike: the first map stands.
  graphs_.try_emplace(range->get<std::string>(), std::move(graph));
  return true;
}

const GraphMap* KernelMaps::Find(std::string_view range_name) const {
  std::string name(range_name);
  if (range_name.starts_with(kProfilerGraphRangePrefix)) {
    auto profiler_range = profiler_ranges_.find(name);
    if (profiler_range == profiler_ranges_.end()) return nullptr;
    name = profiler_range->second;
  }
  auto it = graphs_.find(name);
  return it == graphs_.end() ? nullptr : &it->second;
}

std::vector<std::string> CompiledCallPath(std::optional<Phase> phase,
                                          const std::vector<std::string>& modules) {
  std::vector<std::string> path;
  if (!phase) return path;
  if (*phase == Phase::kRecompute) {
    path.emplace_back(kBackwardLeaf);
    path.emplace_back(kRecomputeRange);
  }
  path.insert(path.end(), modules.begin(), modules.end());
  if (*phase == Phase::kBackward) path.emplace_back(kBackwardLeaf);
  return path;
}

}  // namespace gpuattr::collector
