// What the CUPTI multiplexer (cupti_mux.h) needs to know about an activity record it copies for a
// side: the CUDA API call it belongs to (its correlation id), and which of its fields are times,
// so the copy can be moved onto that side's clock.
//
// Known kinds (CUDA 13.0 record layouts): KERNEL and CONCURRENT_KERNEL (Kernel10), MEMCPY
// (Memcpy6), MEMCPY2 (MemcpyPtoP4), MEMSET (Memset4), RUNTIME and DRIVER (API), SYNCHRONIZATION
// (Synchronization2), EXTERNAL_CORRELATION, CUDA_EVENT (CudaEvent2, correlation only), GRAPH_TRACE
// (GraphTrace2), MARKER (Marker2, time only), OVERHEAD (Overhead3, times only). Other kinds have no
// correlation id here and keep their times as recorded.
//
// Pure functions; any thread.
#ifndef GPUATTR_INJECT_CUPTI_MUX_RECORDS_H_
#define GPUATTR_INJECT_CUPTI_MUX_RECORDS_H_

#include <cupti.h>

#include <cstdint>

namespace gpuattr::inject {

// A map from the multiplexer's clock to a side's: theirs = anchor_theirs + (ours - anchor_ours) *
// rate, computed in integers when rate is 1.
struct ClockMap {
  bool identity = true;
  uint64_t anchor_ours = 0;
  uint64_t anchor_theirs = 0;
  double rate = 1.0;

  uint64_t Map(uint64_t ours) const noexcept;
};

// False when the record's kind carries no correlation id known here.
bool CorrelationOf(const CUpti_Activity* record, uint32_t* correlation) noexcept;

// Moves every time field of a known kind through `clock`; 0 (CUPTI's "unknown") stays 0.
void MapRecordTimes(CUpti_Activity* record, const ClockMap& clock) noexcept;

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_MUX_RECORDS_H_
