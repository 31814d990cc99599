#include "analysis/rule_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuattr::collector {

namespace {

// Rule files are a few kilobytes; anything this large is not one.
constexpr std::streamoff kMaxRuleFileBytes = 4 << 20;

constexpr char kFamilyRules[] =
#include "family_rules.inc"
    ;
constexpr char kPhaseRules[] =
#include "phase_rules.inc"
    ;

}  // namespace

StatusOr<std::string> ReadRuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgumentError("cannot read '" + path + "'");
  if (static_cast<std::streamoff>(text.tellp()) > kMaxRuleFileBytes) {
    return InvalidArgumentError("'" + path + "' is larger than a rules file can be (4 MiB)");
  }
  return text.str();
}

StatusOr<nlohmann::json> ParseRuleJson(std::string_view text, const std::string& origin) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return InvalidArgumentError(origin + ": not valid JSON");
  if (!json.is_object()) return InvalidArgumentError(origin + ": the top level is not an object");
  return json;
}

std::string_view DefaultFamilyRulesText() { return kFamilyRules; }
std::string_view DefaultPhaseRulesText() { return kPhaseRules; }

}  // namespace gpuattr::collector
