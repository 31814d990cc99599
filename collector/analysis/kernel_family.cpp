#include "analysis/kernel_family.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "analysis/rule_file.h"

namespace gpuattr::collector {

namespace {

std::optional<std::string> CxaDemangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return std::nullopt;
  return std::string(demangled.get());
}

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::string DemangleKernelName(std::string_view name) {
  if (name.size() < 2 || name.substr(0, 2) != "_Z") return std::string(name);
  std::string mangled(name);
  // C++23's extended floating-point types, which ROCm's composable kernels and cuDNN's kernels
  // use (DF16_ _Float16, DF16b std::bfloat16_t), postdate this libstdc++'s demangler: it fails
  // on them, or reads DF16b as a fixed-point type. Both are builtin types (never substitution
  // candidates), so each is swapped for an older builtin that names the same thing (Dh, IEEE
  // half) or stands in for it (Dn, written back as std::bfloat16_t), when the name holds no Dn.
  if (mangled.find("DF16") != std::string::npos) {
    std::string rewritten = mangled;
    ReplaceAll(rewritten, "DF16_", "Dh");
    const bool bfloat16 = rewritten.find("DF16b") != std::string::npos;
    if (!bfloat16 || rewritten.find("Dn") == std::string::npos) {
      ReplaceAll(rewritten, "DF16b", "Dn");
      if (std::optional<std::string> demangled = CxaDemangle(rewritten)) {
        if (bfloat16) ReplaceAll(*demangled, "decltype(nullptr)", "std::bfloat16_t");
        return *demangled;
      }
    }
  }
  return CxaDemangle(mangled).value_or(mangled);
}

std::string KernelFamily(std::string_view demangled) {
  static constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  std::string text(demangled);
  for (size_t at = text.find(kAnonymous); at != std::string::npos; at = text.find(kAnonymous)) {
    text.erase(at, kAnonymous.size());
  }
  // Drop everything inside <...> and (...) at any depth. `operator<` and friends would unbalance
  // this; kernels cannot be operators, and an unbalanced name only loses its tail.
  std::string out;
  int angle = 0;
  int paren = 0;
  for (char c : text) {
    if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == '(' && angle == 0) {
      ++paren;
    } else if (c == ')' && paren > 0 && angle == 0) {
      --paren;
    } else if (angle == 0 && paren == 0) {
      out.push_back(c);
    }
  }
  // What is left is "[return type ]qualified::name[ const]": keep the last word.
  while (!out.empty() && out.back() == ' ') out.pop_back();
  static constexpr std::string_view kConst = " const";
  if (out.size() > kConst.size() && out.ends_with(kConst)) out.resize(out.size() - kConst.size());
  const size_t space = out.rfind(' ');
  if (space != std::string::npos) out.erase(0, space + 1);
  return out.empty() ? std::string(demangled) : out;
}

StatusOr<FamilyRules> FamilyRules::Parse(std::string_view json_text, const std::string& origin) {
  GPUATTR_ASSIGN_OR_RETURN(const nlohmann::json json, ParseRuleJson(json_text, origin));
  auto rules = json.find("rules");
  if (rules == json.end() || !rules->is_array()) {
    return InvalidArgumentError(origin + ": \"rules\" is missing or not an array");
  }
  for (const auto& [key, value] : json.items()) {
    if (key != "rules") return InvalidArgumentError(origin + ": unknown key \"" + key + "\"");
  }
  FamilyRules table;
  for (size_t i = 0; i < rules->size(); ++i) {
    const nlohmann::json& rule = (*rules)[i];
    const std::string where = "rule " + std::to_string(i);
    if (!rule.is_object()) return InvalidArgumentError(origin + ": " + where + " is not an object");
    for (const auto& [key, value] : rule.items()) {
      if (key != "match" && key != "family" && key != "note" && key != "category") {
        return InvalidArgumentError(origin + ": " + where + ": unknown key \"" + key + "\"");
      }
      if (!value.is_string()) {
        return InvalidArgumentError(origin + ": " + where + ": \"" + key + "\" is not a string");
      }
    }
    if (!rule.contains("match") || !rule.contains("family")) {
      return InvalidArgumentError(origin + ": " + where + " needs \"match\" and \"family\"");
    }
    const std::string family = rule["family"].get<std::string>();
    if (family.empty()) {
      return InvalidArgumentError(origin + ": " + where + ": \"family\" is empty");
    }
    const std::string category = rule.value("category", std::string("compute"));
    if (category != "compute" && category != "communication") {
      return InvalidArgumentError(origin + ": " + where + ": \"category\" must be compute or " +
                                  "communication, not \"" + category + "\"");
    }
    GPUATTR_ASSIGN_OR_RETURN(
        std::regex match,
        CompileRuleRegex(rule["match"].get<std::string>(), std::regex::flag_type{}, origin, where));
    table.rules_.push_back({std::move(match), family, category == "communication"});
  }
  return table;
}

StatusOr<FamilyRules> FamilyRules::Load(const std::string& path) {
  GPUATTR_ASSIGN_OR_RETURN(const std::string text, ReadRuleFile(path));
  return Parse(text, "family rules '" + path + "'");
}

const FamilyRules& FamilyRules::Default() {
  static const FamilyRules* const kDefault = [] {
    StatusOr<FamilyRules> parsed =
        Parse(DefaultFamilyRulesText(), "built-in family rules (collector/data/family_rules.json)");
    if (!parsed.ok()) {
      // A broken build, caught by the unit tests; never a user's input.
      std::fprintf(stderr, "gpuattr: %s\n", parsed.status().message().c_str());
      std::abort();
    }
    return new FamilyRules(std::move(parsed).value());
  }();
  return *kDefault;
}

std::string FamilyRules::FamilyOf(std::string_view demangled) const {
  return ClassOf(demangled).family;
}

FamilyRules::KernelClass FamilyRules::ClassOf(std::string_view demangled) const {
  // std::regex recurses per character; a demangled name from the wire (4 KiB mangled at most)
  // is matched on its first 16 KiB only, which bounds the stack it can take.
  constexpr size_t kMaxMatched = 16 * 1024;
  const std::string_view matched = demangled.substr(0, kMaxMatched);
  std::match_results<std::string_view::const_iterator> groups;
  for (const Rule& rule : rules_) {
    if (std::regex_search(matched.begin(), matched.end(), groups, rule.match)) {
      std::string family = groups.format(rule.family);
      if (!family.empty()) return {std::move(family), rule.communication};
    }
  }
  return {KernelFamily(demangled), false};
}

}  // namespace gpuattr::collector
