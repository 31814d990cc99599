// The fuzz entry for reading and rendering reports: one input is the bytes of a report file, read
// by the real LoadReport (report/report_reader.h: size and depth limits, schema_version check) and,
// when accepted, rendered by RenderReportView with default options, with a small --top, and for
// the first process's pid. The bytes reach LoadReport through a memfd's /proc/self/fd path, so
// the exact code `gpuattr report` runs reads them, without touching the disk. Shared by the
// libFuzzer driver and the fuzz-smoke test. Single-threaded (one memfd, reused).
#ifndef GPUATTR_TESTS_FUZZ_REPORT_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_REPORT_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace gpuattr::fuzz {

// Returns true when LoadReport accepted the document (and it rendered), false when it refused
// it with kDataLoss. Any other status, a crash, a hang or an exception is the bug to find.
bool RenderReportBytes(const uint8_t* data, size_t size);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_REPORT_FUZZ_ENTRY_H_
