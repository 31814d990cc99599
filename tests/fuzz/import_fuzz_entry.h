// The fuzz entry for trace import: one input, as the bytes of a Kineto JSON file, through the
// importer, the replay into ProcessTrace and the report builder. Shared by the libFuzzer driver
// and the fuzz-smoke test. Single-threaded.
#ifndef GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace gpuattr::fuzz {

// Returns true when the input was accepted as a trace (and a report was built), false when it
// was refused with an error. Crashing, hanging or a failed internal check is the bug to find;
// an internal error of the replay aborts so the fuzzer reports it.
bool ImportKinetoBytes(const uint8_t* data, size_t size);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_
