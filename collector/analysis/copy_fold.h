// CopyFold: the memory-copy table of each device (docs/attribution.md §Memory copies): how many
// copies of each direction and memory kinds (HtoD from pageable memory, DtoH to pinned, …), their
// bytes and their device time.
//
// A memcpy's ActivityRecord carries a TraceData::copies slot with its bytes and kinds, read here
// when the activity leaves the reorder window (the slot is given back right after). Copies
// without timestamps count in no time, as everywhere.
//
// Single-threaded, on the thread that folds. Memory: one entry per (device, direction, source
// kind, destination kind), at most a few dozen.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_COPY_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_COPY_FOLD_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

// "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA"; "unknown".
const char* CopyDirectionName(uint8_t copy_kind);
// "pageable", "pinned", "device", "array", "managed", "device_static", "managed_static";
// "unknown".
const char* MemoryKindName(uint8_t memory_kind);

class CopyFold {
 public:
  // A memcpy with timestamps; `detail` null when its record has no slot.
  void Fold(const ActivityRecord& activity, const CopyDetail* detail);

  // Adds each device's rows (most device time first) to `devices`, by id. Once.
  void Finish(std::vector<DeviceStats>& devices);

 private:
  using Key = std::tuple<uint32_t, uint8_t, uint8_t, uint8_t>;  // device, direction, src, dst
  std::map<Key, CopyStats> rows_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_COPY_FOLD_H_
