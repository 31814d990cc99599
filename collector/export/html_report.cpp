#include "export/html_report.h"

#include <string_view>

namespace gpuattr::collector {
namespace {

constexpr std::string_view kTemplate =
#include "report_html.inc"
    ;

constexpr std::string_view kPlaceholder = "@@GPUATTR_REPORT_JSON@@";
static_assert(kTemplate.find(kPlaceholder) != std::string_view::npos,
              "collector/data/report.html must hold the report placeholder");

// JSON safe inside a <script> element and free of URL-looking text: '<' and '/' only occur
// inside strings in JSON, where "\u003c" and "\/" mean the same characters.
std::string ScriptSafeJson(const nlohmann::json& report) {
  const std::string json = report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '/') {
      out += "\\/";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string RenderHtmlReport(const nlohmann::json& report) {
  const size_t at = kTemplate.find(kPlaceholder);
  std::string page;
  page.reserve(kTemplate.size() + 1024);
  page.append(kTemplate.substr(0, at));
  page += ScriptSafeJson(report);
  page.append(kTemplate.substr(at + kPlaceholder.size()));
  return page;
}

}  // namespace gpuattr::collector
