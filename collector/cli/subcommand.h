// Subcommand: one `gpuattr X` as the command line knows it: its CLI11 node, and what runs it once
// the parse chose it. Every command file adds its own (AddXSubcommand, beside the code it runs),
// keeping what the parse fills alive in the closure; cli.cpp only parses and dispatches.
//
// Main thread only.
#ifndef GPUATTR_COLLECTOR_CLI_SUBCOMMAND_H_
#define GPUATTR_COLLECTOR_CLI_SUBCOMMAND_H_

#include <functional>

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

struct Subcommand {
  CLI::App* app = nullptr;
  // Checks what the parse left (a usage error is exit 2), runs, returns gpuattr's exit status.
  std::function<int()> run;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_SUBCOMMAND_H_
