#include "export/html_report.h"

#include <string>
#include <string_view>

#include "report/atomic_write.h"
#include "report/report_writer.h"

namespace gpuattr::collector {
namespace {

constexpr std::string_view kTemplate =
#include "report_html.inc"
    ;

constexpr std::string_view kPlaceholder = "@@GPUATTR_REPORT_JSON@@";
static_assert(kTemplate.find(kPlaceholder) != std::string_view::npos,
              "collector/data/report.html must hold the report placeholder");

// JSON text made compact and safe inside a <script> element, from pieces of any size: the
// whitespace outside strings is dropped (what is left of dump(2)'s text is dump(-1)'s), and '<'
// and '/', which occur only inside strings in JSON, are written as "\u003c" and "\/", which
// mean the same characters there; so neither a closing script tag nor a URL is in the page.
class ScriptSafeJson {
 public:
  void Append(std::string_view json, std::string* out) {
    out->reserve(out->size() + json.size());
    for (const char c : json) {
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        continue;
      } else if (c == '"') {
        in_string_ = true;
      }
      if (c == '<') {
        *out += "\\u003c";
      } else if (c == '/') {
        *out += "\\/";
      } else {
        out->push_back(c);
      }
    }
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;  // the previous character of the string was an unescaped backslash
};

constexpr size_t kPlaceholderAt = kTemplate.find(kPlaceholder);
constexpr std::string_view kPageBefore = kTemplate.substr(0, kPlaceholderAt);
constexpr std::string_view kPageAfter = kTemplate.substr(kPlaceholderAt + kPlaceholder.size());

}  // namespace

std::string RenderHtmlReport(const nlohmann::json& report) {
  std::string page(kPageBefore);
  ScriptSafeJson().Append(report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                          &page);
  page.append(kPageAfter);
  return page;
}

Status WriteHtmlReport(const LoadedReport& report, const std::optional<uint64_t>& pid,
                       const std::string& path) {
  GPUATTR_ASSIGN_OR_RETURN(AtomicTextFile page,
                           AtomicTextFile::Create(path, ExistingFile::kReplace));
  page.Append(std::string(kPageBefore));
  ScriptSafeJson json;
  std::string safe;
  WriteLoadedReportText(report, pid, [&](const std::string& piece) {
    safe.clear();
    json.Append(piece, &safe);
    page.Append(safe);
  });
  page.Append(std::string(kPageAfter));
  return page.Commit();
}

}  // namespace gpuattr::collector
