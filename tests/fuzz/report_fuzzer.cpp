// libFuzzer driver for report reading and rendering (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "report_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::RenderReportBytes(data, size);
  return 0;
}
