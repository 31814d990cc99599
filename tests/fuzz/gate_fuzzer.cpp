// libFuzzer driver for gate rules (clang only; see CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "gate_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuattr::fuzz::EvaluateGateRulesBytes(data, size);
  return 0;
}
