// `gpuattr gate --baseline A.json --current B.json [--rules gate.json] [--markdown FILE]
// [--junit FILE] [--json FILE]`: checks the current report against the baseline with the rules
// (gate/rules.h; the defaults without --rules) and prints the table of checks (gate/gate.h).
// Runs on the main thread; no state.
//
// Exit statuses (docs/gate.md): 0 every check passed, 1 a check failed; errors are Statuses that
// cli.cpp maps with ExitCodeFor: kDataLoss (exit 3) for every problem with an input — a report
// or rules file missing, unreadable or invalid, a metric that does not resolve in either report
// (its path named) — and kInternal (exit 4) when an output file cannot be written.
#ifndef GPUATTR_COLLECTOR_CLI_GATE_COMMAND_H_
#define GPUATTR_COLLECTOR_CLI_GATE_COMMAND_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "cli/subcommand.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

inline constexpr uint64_t kMaxRulesBytes = uint64_t{16} << 20;

struct GateCommandOptions {
  std::string baseline;
  std::string current;
  std::string rules;     // empty: the defaults
  std::string markdown;  // empty: none
  std::string junit;
  std::string json;
};

struct GateCommandResult {
  int exit_status = 0;  // 0 pass, 1 regression
  std::string table;    // for stdout
};

StatusOr<GateCommandResult> RunGateCommand(const GateCommandOptions& options);

// Adds `gpuattr gate` to `app`.
Subcommand AddGateSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_GATE_COMMAND_H_
