// libFuzzer driver for Nsight Systems databases (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "nsys_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::ImportNsysBytes(data, size);
  return 0;
}
