#include "truth_compare.h"

#include <algorithm>

namespace gpuattr::e2e {

uint64_t UnionLength(std::vector<std::pair<uint64_t, uint64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0;
  uint64_t open_start = 0;
  uint64_t open_end = 0;
  bool open = false;
  for (const auto& [start, end] : intervals) {
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) total += open_end - open_start;
    open_start = start;
    open_end = end;
    open = true;
  }
  if (open) total += open_end - open_start;
  return total;
}

std::vector<ExpectedProcess> ExpectFromTruth(const nlohmann::json& truth) {
  std::vector<ExpectedProcess> out;
  for (const auto& process : truth["processes"]) {
    ExpectedProcess expected;
    expected.pid = process["pid"].get<int64_t>();
    std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>> intervals_by_device;
    std::map<int64_t, std::pair<uint64_t, uint64_t>> extent_by_device;
    for (const auto& activity : process["activities"]) {
      const auto start = activity["start_ns"].get<uint64_t>();
      const auto end = activity["end_ns"].get<uint64_t>();
      const uint64_t duration = end - start;
      const auto kind = activity["kind"].get<std::string>();
      if (kind == "kernel") {
        ++expected.kernels;
        expected.kernel_ns += duration;
      } else if (kind == "memcpy") {
        ++expected.memcpys;
        expected.memcpy_ns += duration;
      } else {
        ++expected.memsets;
        expected.memset_ns += duration;
      }
      const auto device = activity["device"].get<int64_t>();
      intervals_by_device[device].emplace_back(start, end);
      auto [it, inserted] = extent_by_device.try_emplace(device, start, end);
      if (!inserted) {
        it->second.first = std::min(it->second.first, start);
        it->second.second = std::max(it->second.second, end);
      }

      const auto attribution = activity["attribution"].get<std::string>();
      const auto path = activity["range_path"].get<std::vector<std::string>>();
      if (attribution == "none" || path.empty()) {
        expected.unattributed_ns += duration;
        continue;
      }
      ExpectedPass& own = expected.passes[path];
      own.self_ns += duration;
      own.ns_by_attribution[attribution] += duration;
      for (size_t depth = 1; depth <= path.size(); ++depth) {
        std::vector<std::string> prefix(path.begin(), path.begin() + static_cast<long>(depth));
        expected.passes[prefix].total_ns += duration;
      }
    }
    for (auto& [device, intervals] : intervals_by_device) {
      ExpectedDevice& d = expected.devices[device];
      d.span_ns = extent_by_device[device].second - extent_by_device[device].first;
      d.busy_ns = UnionLength(intervals);
      d.idle_ns = d.span_ns - d.busy_ns;
    }
    out.push_back(std::move(expected));
  }
  return out;
}

namespace {

void FlattenInto(const nlohmann::json& nodes,
                 std::map<std::vector<std::string>, nlohmann::json>* out) {
  for (const auto& node : nodes) {
    (*out)[node["path"].get<std::vector<std::string>>()] = node;
    if (node.contains("children")) FlattenInto(node["children"], out);
  }
}

}  // namespace

std::map<std::vector<std::string>, nlohmann::json> FlattenPasses(const nlohmann::json& process) {
  std::map<std::vector<std::string>, nlohmann::json> out;
  FlattenInto(process["passes"], &out);
  return out;
}

}  // namespace gpuattr::e2e
