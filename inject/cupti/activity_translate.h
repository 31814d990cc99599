// Translation of CUPTI activity buffers into wire records (HPCToolkit's
// cupti-activity-translate.c seam): CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4 and
// Device5 become wire::Kernel, Memcpy, Memset and Device.
//
// Runs on: the gpuattr-flush thread, never on CUPTI's threads (bufferCompleted only enqueues).
// Pure apart from its outputs: records are appended, encoded, to `out`; names go through
// `intern`; nothing is sent or logged here.
//
// Records are walked only with cuptiActivityGetNextRecord, which knows each record's real size
// (a newer CUPTI may write longer records than these 13.0 structs), never with a fixed stride. A
// record with start = end = 0 had no timestamp (forced flush of an unfinished activity, device
// buffer overflow): it is still translated, with zero times, and counted as incomplete.
#ifndef GPUATTR_INJECT_CUPTI_ACTIVITY_TRANSLATE_H_
#define GPUATTR_INJECT_CUPTI_ACTIVITY_TRANSLATE_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cupti/cupti_api.h"
#include "wire/protocol.h"

namespace gpuattr::inject {

struct TranslateCounts {
  uint64_t translated = 0;
  uint64_t untranslated = 0;               // kinds the shim does not translate
  uint64_t incomplete = 0;                 // start = end = 0
  uint32_t last_complete_correlation = 0;  // the largest correlation id of a complete record
};

// Interns a name for the wire (returns a String id, 0 for none).
class NameInterner {
 public:
  virtual uint32_t Intern(std::string_view name) = 0;

 protected:
  ~NameInterner() = default;
};

// One record each; `name_string` is the interned kernel name.
wire::Kernel TranslateKernel(const CUpti_ActivityKernel10& kernel, uint32_t name_string) noexcept;
wire::Memcpy TranslateMemcpy(const CUpti_ActivityMemcpy6& memcpy) noexcept;
wire::Memcpy TranslatePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& memcpy) noexcept;
wire::Memset TranslateMemset(const CUpti_ActivityMemset4& memset) noexcept;

// Walks `buffer[0, valid_size)` with api.cuptiActivityGetNextRecord and appends one encoded wire
// record per translated activity to `out`.
TranslateCounts TranslateBuffer(const CuptiApi& api, uint8_t* buffer, size_t valid_size,
                                NameInterner& interner, std::vector<uint8_t>* out);

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_CUPTI_ACTIVITY_TRANSLATE_H_
