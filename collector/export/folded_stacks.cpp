#include "export/folded_stacks.h"

#include <map>
#include <nlohmann/json.hpp>

namespace gpuattr::collector {
namespace {

void FoldNode(const PassNode& node, std::vector<std::string>& frames,
              std::vector<FoldedStack>& out) {
  frames.push_back(node.name);
  for (const auto& [family, ns] : node.self_by_family) {
    if (ns == 0) continue;
    FoldedStack stack{frames, ns};
    stack.frames.push_back(family);
    out.push_back(std::move(stack));
  }
  for (const PassNode& child : node.children) FoldNode(child, frames, out);
  frames.pop_back();
}

// A frame name the folded format can carry: no ';' (the separator) and no line break.
std::string FoldedFrame(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

std::string UnattributedFrame(const std::string& reason) {
  return "[unattributed: " + reason + "]";
}

FoldedProcess FoldPasses(uint32_t pid, int32_t rank, const std::vector<PassNode>& roots,
                         const std::vector<Unattributed>& unattributed) {
  FoldedProcess process;
  process.pid = pid;
  process.rank = rank;
  process.label = (rank >= 0 ? "rank " + std::to_string(rank) + " (pid " : "pid ") +
                  std::to_string(pid) + (rank >= 0 ? ")" : "");
  std::vector<std::string> frames;
  for (const PassNode& root : roots) FoldNode(root, frames, process.stacks);
  for (const Unattributed& entry : unattributed) {
    if (entry.ns > 0) process.stacks.push_back({{UnattributedFrame(entry.reason)}, entry.ns});
  }
  return process;
}

std::string RenderFolded(const std::vector<FoldedProcess>& processes) {
  std::string out;
  const bool prefix = processes.size() > 1;
  for (const FoldedProcess& process : processes) {
    for (const FoldedStack& stack : process.stacks) {
      if (prefix) out += FoldedFrame(process.label) + ";";
      for (size_t i = 0; i < stack.frames.size(); ++i) {
        if (i > 0) out.push_back(';');
        out += FoldedFrame(stack.frames[i]);
      }
      out += " " + std::to_string(stack.ns) + "\n";
    }
  }
  return out;
}

std::string RenderSpeedscope(const std::vector<FoldedProcess>& processes,
                             const std::string& generator) {
  using Json = nlohmann::json;
  Json frames = Json::array();
  std::map<std::string, size_t> frame_index;
  auto index_of = [&](const std::string& name) {
    auto [it, inserted] = frame_index.try_emplace(name, frame_index.size());
    if (inserted) frames.push_back({{"name", name}});
    return it->second;
  };
  Json profiles = Json::array();
  for (const FoldedProcess& process : processes) {
    Json samples = Json::array();
    Json weights = Json::array();
    uint64_t total = 0;
    for (const FoldedStack& stack : process.stacks) {
      Json sample = Json::array();
      for (const std::string& frame : stack.frames) sample.push_back(index_of(frame));
      samples.push_back(std::move(sample));
      weights.push_back(stack.ns);
      total += stack.ns;
    }
    profiles.push_back({{"type", "sampled"},
                        {"name", "device time, " + process.label},
                        {"unit", "nanoseconds"},
                        {"startValue", 0},
                        {"endValue", total},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}});
  }
  const Json document = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                         {"exporter", generator},
                         {"name", "gpuattr: device time by pass and kernel family"},
                         {"activeProfileIndex", 0},
                         {"shared", {{"frames", std::move(frames)}}},
                         {"profiles", std::move(profiles)}};
  return document.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace gpuattr::collector
