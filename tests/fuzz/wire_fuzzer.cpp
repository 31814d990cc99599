// libFuzzer driver for the wire decoder and ProcessTrace (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "wire_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::ConsumeWireBytes(data, size);
  return 0;
}
