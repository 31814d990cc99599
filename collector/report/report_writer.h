// The report's text: what `gpuattr run`, `import`, the daemon and `attach` write.
//
// Report (report_builder.h) is a DOM without its step rows plus the rows as the analysis made
// them; the writer renders the text nlohmann's dump(2) would give of the whole, each row rendered
// as it is reached, so the whole text never exists at once, and writes it in 1 MiB pieces through
// an AtomicTextFile (or to stdout). StreamedReport writes the same text with the processes handed
// over one at a time, and a loaded report's rows are written from their columns. Single-threaded;
// no global state.
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "report/atomic_write.h"
#include "report/report_builder.h"
#include "report/report_reader.h"

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
// whose stdout is theirs: import, export, merge).
Status WriteReport(const Report& report, const std::string& path, ExistingFile existing);

// The step rows of one process as a writer reaches them: how many, and the i-th as JSON.
struct StepRowSource {
  size_t count = 0;
  std::function<nlohmann::json(size_t)> row;
};

// The rows of processes[process] of a loaded report, from their columns (valid while it lives).
StepRowSource LoadedStepRows(const LoadedReport& report, size_t process);

// A report as LoadReport read it (report_reader.h), written as dump(2) gives its document with
// the rows back in place, the rows taken from their columns one at a time (`gpuattr report
// --json`: the text never exists whole, nor the rows' DOM). Same destinations as WriteReport.
Status WriteLoadedReport(const LoadedReport& report, const std::string& path,
                         ExistingFile existing);

// The same text handed to `out` piece by piece (the HTML report embeds it); with `pid`, the
// report with that process only in `processes`.
void WriteLoadedReportText(const LoadedReport& report, const std::optional<uint64_t>& pid,
                           const std::function<void(const std::string&)>& out);

// A report written while it is assembled (`gpuattr merge`): the top-level members that sort
// before "processes", then each process as it comes, then the members after it, as the same text
// WriteReport gives of the whole DOM, holding one process at a time. Same destinations as
// WriteReport ("-": standard output); nothing is published until Finish succeeds.
class StreamedReport {
 public:
  static StatusOr<std::unique_ptr<StreamedReport>> Open(const std::string& path,
                                                        ExistingFile existing);
  ~StreamedReport();
  StreamedReport(const StreamedReport&) = delete;
  StreamedReport& operator=(const StreamedReport&) = delete;

  // Once, first: `before`'s members, whose keys must all sort before "processes".
  void Begin(const nlohmann::json& before);
  // The next element of `processes`; an empty steps.rows in it is written from `rows`.
  void AddProcess(const nlohmann::json& process, StepRowSource rows = {});
  // Once, last: `after`'s members (keys after "processes"); closes and publishes the text.
  Status Finish(const nlohmann::json& after);

 private:
  class Text;
  explicit StreamedReport(std::unique_ptr<Text> text);
  std::unique_ptr<Text> text_;
  size_t processes_ = 0;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_WRITER_H_
