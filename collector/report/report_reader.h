// Reading reports back: `gpuattr report`, `diff` and `gate` read files that `gpuattr run` (or
// anyone) wrote, so the bytes are untrusted input.
//
// LoadReport reads at most kMaxReportBytes (bounded memory), refuses a document nested deeper
// than kMaxReportDepth before parsing it (no recursion in rendering or printing can run out of
// stack; checked by one pass over the text, since nlohmann's depth-reporting callback parser is
// twenty times slower), parses without exceptions and checks schema_version. Nothing else of the
// document is checked: its readers go through Field, which turns a missing member, or a member of
// something that is not an object, into null. Pure apart from reading the file; any thread.
//
// Errors: every failure to use the file (missing, unreadable, a directory, too large, not JSON,
// too deep, another schema) is kDataLoss, exit 3. (ExitCodeFor maps kNotFound to 2, usage:
// right for a missing CMD or shim, wrong for an input file.)
#ifndef GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_
#define GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace gpuattr::collector {

inline constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;
inline constexpr size_t kMaxReportDepth = 512;

// The document at `path`, parsed and checked to be a JSON object with schema_version
// gpuattr.report/1; nothing else about it is checked.
StatusOr<nlohmann::json> LoadReport(const std::string& path);

// `object[key]` when `object` is an object holding `key`, else null; never throws.
const nlohmann::json& Field(const nlohmann::json& object, const char* key);

// Whether `value` is a count: an integer in [0, 2^64), so get<uint64_t>() gives it.
bool IsCount(const nlohmann::json& value);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_REPORT_READER_H_
