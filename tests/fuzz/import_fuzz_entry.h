// The fuzz entry for trace import: one input, as the bytes of a Kineto JSON file, through the
// importer, the replay into ProcessTrace and the report builder (ReportIfImported, which the
// Nsight Systems entry shares). Shared by the libFuzzer driver
// and the fuzz-smoke test. Single-threaded.
#ifndef GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "import/imported_trace.h"

namespace gpuattr::fuzz {

// Returns true when the input was accepted as a trace (and a report was built), false when it
// was refused with an error. Crashing, hanging or a failed internal check is the bug to find;
// an internal error of the replay aborts so the fuzzer reports it.
bool ImportKinetoBytes(const uint8_t* data, size_t size);

// What `gpuattr import` does with an importer's result, of any format: a refusal as data loss is
// a refused input (false); an imported trace goes through the replay into ProcessTrace, the report
// builder and the writer (true). Any other error, of the importer or after it, aborts (the bug to
// find).
bool ReportIfImported(const StatusOr<collector::ImportedTrace>& trace);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_IMPORT_FUZZ_ENTRY_H_
