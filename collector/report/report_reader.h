// Reading reports back: `gpuattr report`, `diff`, `gate` and `merge` read files that `gpuattr run`
// (or anyone) wrote, so the bytes are untrusted input.
//
// LoadReport streams the file through nlohmann's SAX parser (its public json_sax interface) in
// 1 MiB reads: the text is never held, and the document is built as it is read, except each
// process's steps.rows, whose elements go into columns (step_row_columns.h) and leave an empty
// array in the document. The rows are the only part of a report that grows with the run, so a
// reader holds the columns (about 180 bytes a row) and a small DOM, not four times the text.
// At most kMaxReportBytes are read, and a value or key inside more than kMaxReportDepth arrays and
// objects stops the parse (nothing that renders or prints the document can run out of stack).
// Parsed without exceptions; schema_version checked. Nothing else of the document is checked:
// its readers go through Field, which turns a missing member, or a member of something that is
// not an object, into null. Pure apart from reading the file; any thread.
//
// Errors: every failure to use the file (missing, unreadable, a directory, too large, not JSON,
// too deep, another schema) is kDataLoss, exit 3. (ExitCodeFor maps kNotFound to 2, usage:
// right for a missing CMD or shim, wrong for an input file.)
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "report/step_row_columns.h"

namespace gpuattr::collector {

inline constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;
inline constexpr size_t kMaxReportDepth = 512;

// A report as read: the document with every processes[i].steps.rows array left empty, and the
// rows of each in columns.
class LoadedReport {
 public:
  // Moves each processes[i].steps.rows array of `document` into columns: the split LoadReport
  // makes as it reads (tests and fuzzers build documents in memory).
  static LoadedReport FromDocument(nlohmann::json document);

  const nlohmann::json& document() const { return document_; }
  // The rows of processes[process_index]; empty for a process without rows.
  const StepRowColumns& StepRows(size_t process_index) const;
  // The document with its rows back in place, each row as the file held it (`report --html`,
  // `merge`: these hold the whole DOM).
  nlohmann::json TakeDocumentWithRows() &&;

 private:
  friend StatusOr<LoadedReport> LoadReport(const std::string& path);
  nlohmann::json document_;
  std::map<size_t, StepRowColumns> step_rows_;  // by process index; only processes with rows
};

// The report at `path`, checked to be a JSON object with schema_version gpuattr.report/1;
// nothing else about it is checked.
StatusOr<LoadedReport> LoadReport(const std::string& path);

// `object[key]` when `object` is an object holding `key`, else null; never throws.
const nlohmann::json& Field(const nlohmann::json& object, const char* key);

// Whether `value` is a count: an integer in [0, 2^64), so get<uint64_t>() gives it.
bool IsCount(const nlohmann::json& value);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_
