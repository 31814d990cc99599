// libFuzzer driver for `gpuattr merge` inputs (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "merge_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::MergeReportBytes(data, size);
  return 0;
}
