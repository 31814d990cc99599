#include "analysis/copy_fold.h"

#include <algorithm>
#include <array>

namespace gpuattr::collector {

const char* CopyDirectionName(uint8_t copy_kind) {
  // CUpti_ActivityMemcpyKind, 1 to 10.
  static constexpr std::array<const char*, 11> kNames = {
      "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < kNames.size() ? kNames[copy_kind] : "unknown";
}

const char* MemoryKindName(uint8_t memory_kind) {
  // CUpti_ActivityMemoryKind, 1 to 7.
  static constexpr std::array<const char*, 8> kNames = {"unknown",       "pageable",      "pinned",
                                                        "device",        "array",         "managed",
                                                        "device_static", "managed_static"};
  return memory_kind < kNames.size() ? kNames[memory_kind] : "unknown";
}

void CopyFold::Fold(const ActivityRecord& activity, const CopyDetail* detail) {
  const CopyDetail known = detail ? *detail : CopyDetail{};
  CopyStats& row = rows_[{activity.device, known.copy_kind, known.src_kind, known.dst_kind}];
  row.copy_kind = known.copy_kind;
  row.src_kind = known.src_kind;
  row.dst_kind = known.dst_kind;
  ++row.copies;
  row.bytes += known.bytes;
  if (known.bytes == 0) ++row.copies_without_bytes;
  row.ns += activity.duration_ns();
}

void CopyFold::Finish(std::vector<DeviceStats>& devices) {
  for (DeviceStats& device : devices) {
    for (auto it = rows_.lower_bound({device.id, 0, 0, 0});
         it != rows_.end() && std::get<0>(it->first) == device.id; ++it) {
      device.copies.push_back(it->second);
    }
    std::stable_sort(device.copies.begin(), device.copies.end(),
                     [](const CopyStats& a, const CopyStats& b) { return a.ns > b.ns; });
  }
}

}  // namespace gpuattr::collector
