// The report's text: what `gpuattr run`, `import`, the daemon and `attach` write.
//
// Report (report_builder.h) is a DOM without its step rows plus the rows as the analysis made
// them; the writer renders the text nlohmann's dump(2) would give of the whole, each row rendered
// as it is reached, so the whole text never exists at once, and writes it in 1 MiB pieces through
// an AtomicTextFile (or to stdout). Single-threaded; no state.
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_

#include <string>

#include "base/status.h"
#include "report/atomic_write.h"
#include "report/report_builder.h"

namespace gpuattr::collector {

// The report's text, pretty-printed (two-space indent, keys sorted) with its step rows in place:
// what WriteReportAtomically writes, as a string (tests, fuzzers, benchmarks).
std::string SerializeReport(const Report& report);

// Writes SerializeReport's text to `path` in 1 MiB pieces through a temporary file in the same
// directory and rename(2), so a reader sees the old file, the new file, or none, never half of
// one, and the collector never holds the whole text. `existing`: whether a file of that name is
// replaced or left, failing (atomic_write.h).
Status WriteReportAtomically(const Report& report, const std::string& path,
                             ExistingFile existing = ExistingFile::kReplace);

// WriteReportAtomically, or for the path "-" the same text on standard output (the commands
// whose stdout is theirs: import, export).
Status WriteReport(const Report& report, const std::string& path, ExistingFile existing);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_
