// libFuzzer driver for trace import (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "import_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::ImportKinetoBytes(data, size);
  return 0;
}
