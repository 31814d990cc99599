// Phases (docs/attribution.md §Phases): which part of a training step a pass path belongs to.
//
// A PhaseRules table lists, per phase, ECMAScript patterns matched case-insensitively against a
// range's WHOLE name (data: collector/data/phase_rules.json, or --phase-rules FILE, same format:
// {"phases": {"forward": [...], "backward": [...], "recompute": [...], "optimizer": [...],
// "loss": [...], "communication": [...]}}; a phase left out has no patterns). A name matching
// several phases takes the first of forward, backward, recompute, optimizer, loss,
// communication. The phase of a path is that of its innermost phase-matching range, except that
// a forward range with a backward-matching range above it is recompute. (An activity's phase is
// its path's, except that a collective kernel is communication whatever its path:
// activity_folder.h.) Immutable after parsing; any thread may use one concurrently.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PHASE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PHASE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace gpuattr::collector {

enum class Phase : uint8_t {
  kForward = 0,
  kBackward,
  kRecompute,
  kOptimizer,
  kLoss,
  kCommunication
};
inline constexpr size_t kPhaseCount = 6;

// "forward", "backward", "recompute", "optimizer", "loss", "communication".
const char* PhaseName(Phase phase);

class PhaseRules {
 public:
  static StatusOr<PhaseRules> Parse(std::string_view json_text, const std::string& origin);
  static StatusOr<PhaseRules> Load(const std::string& path);
  // The built-in table; parsed once (a unit test proves it parses).
  static const PhaseRules& Default();

  // Matches' answers by name, kept by one caller: paths repeat their names (a trace's thousands
  // of module paths of each step share their module names), and a regular expression costs
  // microseconds.
  using NameMasks = std::unordered_map<std::string, uint8_t>;

  // Bit i set: `name` matches a pattern of Phase(i).
  uint8_t Matches(std::string_view name) const;
  // The phase of a path of range names (outermost first); empty when no range matches.
  // `masks` (optional) caches Matches across calls.
  std::optional<Phase> PhaseOfPath(const std::vector<std::string>& path,
                                   NameMasks* masks = nullptr) const;

  // std::regex_traits<char> folding case as the "C" locale does, which the collector never
  // changes: libstdc++'s own asks the locale for its ctype facet at every character an icase
  // pattern compares, most of a match's time.
  struct AsciiCaseTraits : std::regex_traits<char> {
    char translate_nocase(char c) const { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
  };
  using Regex = std::basic_regex<char, AsciiCaseTraits>;

 private:
  std::array<std::vector<Regex>, kPhaseCount> patterns_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PHASE_H_
