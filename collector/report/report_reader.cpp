// LoadReport (report_reader.h): bounded reading, a depth check before parsing, the schema check.
#include "report/report_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "report/report_json.h"

namespace gpuattr::collector {

namespace {

using Json = nlohmann::json;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// The whole file, or kDataLoss naming why not.
StatusOr<std::string> ReadReportFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return DataLossError("cannot read report " + Quoted(path) + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || S_ISDIR(info.st_mode)) {
    const int error = S_ISDIR(info.st_mode) ? EISDIR : errno;
    ::close(fd);
    return DataLossError("cannot read report " + Quoted(path) + ": " + std::strerror(error));
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      return DataLossError("cannot read report " + Quoted(path) + ": " + std::strerror(error));
    }
    if (got == 0) break;
    if (text.size() + static_cast<size_t>(got) > kMaxReportBytes) {
      ::close(fd);
      return DataLossError("report " + Quoted(path) + " is larger than " +
                           std::to_string(kMaxReportBytes >> 20) + " MiB; not read");
    }
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return text;
}

// Whether some value (or key) of `text` lies inside more than `limit` arrays and objects, read
// as JSON would be; text that is not JSON gets some answer, and the parse refuses it. One pass,
// no allocation: checked before parsing, which nlohmann's depth-reporting callback parser slows
// twentyfold (a 459 MB report: 2 minutes instead of 4 s).
bool NestedDeeperThan(const std::string& text, size_t limit) {
  size_t open = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case ' ':
      case '\n':
      case '\r':
      case '\t':
      case ':':
      case ',':
        break;
      case '}':
      case ']':
        if (open > 0) --open;
        break;
      default:  // a value or key starts here, `open` containers deep
        if (open > limit) return true;
        if (c == '{' || c == '[') ++open;
        in_string = c == '"';
        break;
    }
  }
  return false;
}

}  // namespace

StatusOr<Json> LoadReport(const std::string& path) {
  GPUATTR_ASSIGN_OR_RETURN(const std::string text, ReadReportFile(path));
  if (NestedDeeperThan(text, kMaxReportDepth)) {
    return DataLossError("report " + Quoted(path) + " is nested deeper than " +
                         std::to_string(kMaxReportDepth) + " levels; not a gpuattr report");
  }
  Json report = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded()) {
    return DataLossError("report " + Quoted(path) +
                         " is not JSON (a report is the file `gpuattr run -o` writes)");
  }
  const auto version = report.is_object() ? report.find("schema_version") : report.end();
  if (!report.is_object() || version == report.end() || !version->is_string()) {
    return DataLossError("report " + Quoted(path) + " is JSON but not a gpuattr report: no " +
                         "schema_version \"" + kReportSchemaVersion + "\"");
  }
  if (version->get_ref<const std::string&>() != kReportSchemaVersion) {
    return DataLossError("report " + Quoted(path) + " has schema_version " +
                         version->dump(-1, ' ', true, Json::error_handler_t::replace) +
                         "; this gpuattr reads " + kReportSchemaVersion);
  }
  return report;
}

const Json& Field(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

bool IsCount(const Json& value) {
  return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
}

}  // namespace gpuattr::collector
