// The fuzz entry for `gpuattr merge` inputs: one input is the bytes of a report file, merged with
// a fixed, valid report (the nested_ranges golden run) by the real MergeReports, the function
// `gpuattr merge` runs: both passes, the refusals, the summary rebuilt from each process entry
// (report/process_reader.h) and the streamed output. The bytes reach it through a memfd's
// /proc/self/fd path; the merged report goes to a file in a private temporary directory,
// overwritten for every input. Shared by the libFuzzer driver and the fuzz-smoke test.
// Single-threaded (one memfd, one output file).
#ifndef GPUATTR_TESTS_FUZZ_MERGE_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_MERGE_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace gpuattr::fuzz {

// Returns true when the merge wrote a report, false when it refused the input with kDataLoss
// (unreadable, another schema, a malformed field) or kInvalidArgument (inputs that cannot be one
// job). Any other status, a crash, a hang or an exception is the bug to find.
bool MergeReportBytes(const uint8_t* data, size_t size);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_MERGE_FUZZ_ENTRY_H_
