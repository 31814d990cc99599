#include "cli/analysis_flags.h"

#include <CLI/CLI.hpp>

namespace gpuattr::collector {

void AddAnalysisFlags(CLI::App* command, const AnalysisFlagTargets& targets) {
  AnalysisOptions* options = targets.options;
  command->add_flag_callback(
      "--no-inherit", [options] { options->inherit = false; },
      "Do not attribute a launch from a thread with no open range to the range open on the main "
      "thread at that instant (autograd worker threads)");
  command
      ->add_option("--coverage-threshold", options->coverage_threshold,
                   "Coverage passes when the attributed fraction of device time is at least this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  command->add_option_function<std::string>(
      "--step", [options](const std::string& name) { options->step = name; },
      "The step range (a range name; ProfilerStep#N counts as ProfilerStep#*); default: "
      "auto-detected among top-level ranges");
  command->add_option("--skip-steps", options->skip_steps, "Drop the first N step rows (warm-up)")
      ->capture_default_str();
  command->add_option("--phase-rules", *targets.phase_rules_path,
                      "JSON file of phase patterns replacing the built-in table "
                      "(docs/attribution.md §Phases)");
  command->add_option("--family-rules", *targets.family_rules_path,
                      "JSON file of kernel family rules replacing the built-in table "
                      "(docs/attribution.md §Kernel families)");
}

}  // namespace gpuattr::collector
