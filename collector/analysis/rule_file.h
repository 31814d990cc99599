// Rule tables as data: reading and parsing the JSON files behind --family-rules and
// --phase-rules, and the defaults compiled into the binary (collector/data/*.json, embedded at
// build time by collector/core.cmake, so an installed gpuattr reads no data file).
//
// Pure functions; any thread. Errors are kInvalidArgument Statuses whose message names the file
// and the problem (the CLI turns them into exit status 2 before the command runs).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_RULE_FILE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_RULE_FILE_H_

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuattr::collector {

// The text of the rules file at `path`.
StatusOr<std::string> ReadRuleFile(const std::string& path);

// `text` parsed as a JSON object; `origin` (a path, or "built-in ...") prefixes every error.
StatusOr<nlohmann::json> ParseRuleJson(std::string_view text, const std::string& origin);

// An ECMAScript regex (std::regex, or a std::basic_regex with other traits) from `pattern`;
// `where` says which rule it is, for the error message.
template <typename Regex = std::regex>
StatusOr<Regex> CompileRuleRegex(const std::string& pattern, typename Regex::flag_type flags,
                                 const std::string& origin, const std::string& where) {
  // std::regex reports a bad pattern only by throwing; the exception ends here.
  try {
    return Regex(pattern, flags | Regex::ECMAScript | Regex::optimize);
  } catch (const std::regex_error& error) {
    return InvalidArgumentError(origin + ": " + where + ": invalid regular expression '" + pattern +
                                "': " + error.what());
  }
}

// The built-in tables' JSON text (collector/data/family_rules.json, phase_rules.json).
std::string_view DefaultFamilyRulesText();
std::string_view DefaultPhaseRulesText();

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_RULE_FILE_H_
