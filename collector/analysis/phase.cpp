#include "analysis/phase.h"

#include <cstdio>
#include <cstdlib>

#include "analysis/rule_file.h"

namespace gpuattr::collector {

namespace {

constexpr std::array<const char*, kPhaseCount> kPhaseNames = {
    "forward", "backward", "recompute", "optimizer", "loss", "communication"};
constexpr uint8_t Bit(Phase phase) { return static_cast<uint8_t>(1u << static_cast<int>(phase)); }

}  // namespace

const char* PhaseName(Phase phase) { return kPhaseNames[static_cast<size_t>(phase)]; }

StatusOr<PhaseRules> PhaseRules::Parse(std::string_view json_text, const std::string& origin) {
  GPUATTR_ASSIGN_OR_RETURN(const nlohmann::json json, ParseRuleJson(json_text, origin));
  auto phases = json.find("phases");
  if (phases == json.end() || !phases->is_object()) {
    return InvalidArgumentError(origin + ": \"phases\" is missing or not an object");
  }
  for (const auto& [key, value] : json.items()) {
    if (key != "phases") return InvalidArgumentError(origin + ": unknown key \"" + key + "\"");
  }
  PhaseRules table;
  for (const auto& [name, patterns] : phases->items()) {
    size_t index = 0;
    while (index < kPhaseCount && name != kPhaseNames[index]) ++index;
    if (index == kPhaseCount) {
      return InvalidArgumentError(
          origin + ": unknown phase \"" + name +
          "\" (phases: forward, backward, recompute, optimizer, loss, communication)");
    }
    if (!patterns.is_array()) {
      return InvalidArgumentError(origin + ": phase \"" + name + "\" is not an array of patterns");
    }
    for (size_t i = 0; i < patterns.size(); ++i) {
      const std::string where = "phase \"" + name + "\" pattern " + std::to_string(i);
      if (!patterns[i].is_string()) {
        return InvalidArgumentError(origin + ": " + where + " is not a string");
      }
      GPUATTR_ASSIGN_OR_RETURN(Regex regex, CompileRuleRegex<Regex>(patterns[i].get<std::string>(),
                                                                    Regex::icase, origin, where));
      table.patterns_[index].push_back(std::move(regex));
    }
  }
  return table;
}

StatusOr<PhaseRules> PhaseRules::Load(const std::string& path) {
  GPUATTR_ASSIGN_OR_RETURN(const std::string text, ReadRuleFile(path));
  return Parse(text, "phase rules '" + path + "'");
}

const PhaseRules& PhaseRules::Default() {
  static const PhaseRules* const kDefault = [] {
    StatusOr<PhaseRules> parsed =
        Parse(DefaultPhaseRulesText(), "built-in phase rules (collector/data/phase_rules.json)");
    if (!parsed.ok()) {
      // A broken build, caught by the unit tests; never a user's input.
      std::fprintf(stderr, "gpuattr: %s\n", parsed.status().message().c_str());
      std::abort();
    }
    return new PhaseRules(std::move(parsed).value());
  }();
  return *kDefault;
}

uint8_t PhaseRules::Matches(std::string_view name) const {
  uint8_t mask = 0;
  for (size_t i = 0; i < kPhaseCount; ++i) {
    for (const Regex& pattern : patterns_[i]) {
      if (std::regex_match(name.begin(), name.end(), pattern)) {
        mask = static_cast<uint8_t>(mask | (1u << i));
        break;
      }
    }
  }
  return mask;
}

std::optional<Phase> PhaseRules::PhaseOfPath(const std::vector<std::string>& path,
                                             NameMasks* cache) const {
  std::vector<uint8_t> masks;
  masks.reserve(path.size());
  for (const std::string& name : path) {
    if (cache == nullptr) {
      masks.push_back(Matches(name));
      continue;
    }
    auto [known, added] = cache->try_emplace(name, 0);
    if (added) known->second = Matches(name);
    masks.push_back(known->second);
  }
  for (size_t i = path.size(); i-- > 0;) {
    if (masks[i] == 0) continue;
    size_t first = 0;
    while ((masks[i] & (1u << first)) == 0) ++first;
    const auto phase = static_cast<Phase>(first);
    if (phase == Phase::kForward) {
      for (size_t above = 0; above < i; ++above) {
        if (masks[above] & Bit(Phase::kBackward)) return Phase::kRecompute;
      }
    }
    return phase;
  }
  return std::nullopt;
}

}  // namespace gpuattr::collector
