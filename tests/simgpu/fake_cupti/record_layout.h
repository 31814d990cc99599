// Activity record sizes per kind and the stateless record walk of cuptiActivityGetNextRecord.
//
// The sizes are those the real CUDA 13.0 libcupti uses, measured by probing it with hand-made
// buffers (cupti-notes §8.1); the ones this fake writes are pinned to the header structs by
// static_asserts in record_layout.cpp. Pure functions: no state, no locks, callable from any thread
// (the shim calls the walk from its bufferCompleted, on the fake's worker thread).
#ifndef GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_RECORD_LAYOUT_H_
#define GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_RECORD_LAYOUT_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace gpuattr::simgpu {

// Bytes of one record of `kind`; 0 for kind 0, legacy kinds and unknown kinds.
size_t RecordSize(uint32_t kind);

// cuptiActivityGetNextRecord: *record == NULL yields the first record, otherwise the one after
// *record. CUPTI_ERROR_MAX_LIMIT_REACHED at the end or when the bytes left are fewer than the next
// record's size; CUPTI_ERROR_INVALID_KIND for a bad kind. *record changes only on success.
CUptiResult NextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record);

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_RECORD_LAYOUT_H_
