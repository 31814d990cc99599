// The analysis flags, declared once for every subcommand that analyses a trace (`run`, `import`,
// `export`): --no-inherit, --coverage-threshold, --step, --skip-steps, --phase-rules and
// --family-rules (docs/attribution.md). The rule files are named here and loaded by the command
// (LoadRuleFiles), before any work starts.
//
// Main thread only; the targets must outlive the parse.
#ifndef GPUATTR_COLLECTOR_CLI_ANALYSIS_FLAGS_H_
#define GPUATTR_COLLECTOR_CLI_ANALYSIS_FLAGS_H_

#include <string>

#include "analysis/process_trace.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct AnalysisFlagTargets {
  AnalysisOptions* options = nullptr;
  std::string* phase_rules_path = nullptr;   // empty: the built-in table
  std::string* family_rules_path = nullptr;  // empty: the built-in table
};

void AddAnalysisFlags(CLI::App* command, const AnalysisFlagTargets& targets);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_ANALYSIS_FLAGS_H_
