#include "record_layout.h"

#include <cstring>

namespace gpuattr::simgpu {
namespace {

// The structs the fake writes must have the sizes the real library walks with.
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96);
static_assert(sizeof(CUpti_ActivityMemcpyPtoP4) == 96);
static_assert(sizeof(CUpti_ActivityMemset4) == 88);
static_assert(sizeof(CUpti_ActivityDevice5) == 184);
static_assert(sizeof(CUpti_ActivityAPI) == 40);
static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24);

// Index = CUpti_ActivityKind; 0 = invalid (kind 0, legacy kinds 6, 7, 14-16, 21, 23, 24, 29-32,
// 41-44). Measured on the real 13.0 library (cupti-notes §8.1).
constexpr size_t kSizes[] = {
    0,    // 0 INVALID
    96,   // 1 MEMCPY (Memcpy6)
    88,   // 2 MEMSET (Memset4)
    216,  // 3 KERNEL (Kernel10)
    40,   // 4 DRIVER (API)
    40,   // 5 RUNTIME (API)
    0,    // 6 legacy EVENT
    0,    // 7 legacy METRIC
    184,  // 8 DEVICE (Device5)
    32,   // 9 CONTEXT (Context3)
    216,  // 10 CONCURRENT_KERNEL (Kernel10)
    32,   // 11 NAME
    56,   // 12 MARKER (Marker2)
    40,   // 13 MARKER_DATA (MarkerData2)
    0,    // 14 legacy SOURCE_LOCATOR
    0,    // 15 legacy GLOBAL_ACCESS
    0,    // 16 legacy BRANCH
    56,   // 17 OVERHEAD (Overhead3)
    144,  // 18 CDP_KERNEL
    40,   // 19 PREEMPTION
    40,   // 20 ENVIRONMENT
    0,    // 21 legacy EVENT_INSTANCE
    96,   // 22 MEMCPY2 (MemcpyPtoP4)
    0,    // 23 legacy METRIC_INSTANCE
    0,    // 24 legacy INSTRUCTION_EXECUTION
    104,  // 25 UNIFIED_MEMORY_COUNTER (UnifiedMemoryCounter3)
    32,   // 26 FUNCTION
    24,   // 27 MODULE
    24,   // 28 DEVICE_ATTRIBUTE
    0,    // 29 legacy SHARED_ACCESS
    0,    // 30 legacy PC_SAMPLING
    0,    // 31 legacy PC_SAMPLING_RECORD_INFO
    0,    // 32 legacy INSTRUCTION_CORRELATION
    152,  // 33 OPENACC_DATA
    152,  // 34 OPENACC_LAUNCH
    120,  // 35 OPENACC_OTHER
    56,   // 36 CUDA_EVENT (CudaEvent2)
    24,   // 37 STREAM
    56,   // 38 SYNCHRONIZATION (Synchronization2)
    24,   // 39 EXTERNAL_CORRELATION
    136,  // 40 NVLINK (NvLink4)
    0,    // 41 legacy
    0,    // 42 legacy
    0,    // 43 legacy
    0,    // 44 legacy
    80,   // 45 MEMORY
    168,  // 46 PCIE
    40,   // 47 OPENMP
    40,   // 48 INTERNAL_LAUNCH_API (API)
    128,  // 49 MEMORY2 (Memory4)
    80,   // 50 MEMORY_POOL (MemoryPool3)
    56,   // 51 GRAPH_TRACE (GraphTrace2)
    72,   // 52 JIT (Jit2)
    56,   // 53 DEVICE_GRAPH_TRACE
    64,   // 54 MEM_DECOMPRESS
    32,   // 55 CONFIDENTIAL_COMPUTE_ROTATION
};
static_assert(sizeof(kSizes) / sizeof(kSizes[0]) == CUPTI_ACTIVITY_KIND_COUNT);

uint32_t KindAt(const uint8_t* p) {
  uint32_t kind = 0;
  std::memcpy(&kind, p, sizeof(kind));
  return kind;
}

}  // namespace

size_t RecordSize(uint32_t kind) {
  return kind < sizeof(kSizes) / sizeof(kSizes[0]) ? kSizes[kind] : 0;
}

CUptiResult NextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const auto* current = reinterpret_cast<const uint8_t*>(*record);
    if (current < buffer || current >= buffer + valid_size) return CUPTI_ERROR_INVALID_PARAMETER;
    const size_t size = RecordSize(KindAt(current));
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(current - buffer) + size;
  }
  if (offset >= valid_size || valid_size - offset < sizeof(uint32_t)) {
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  const size_t size = RecordSize(KindAt(buffer + offset));
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (valid_size - offset < size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

}  // namespace gpuattr::simgpu
