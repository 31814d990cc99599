// `gpuattr run [options] -- CMD ARGS...`: runs CMD with the shim preloaded, serves the collector
// socket while CMD and its descendants run, then writes the report.
//
// Threading: everything happens on the calling (main) thread, in one poll loop over two
// descriptors: a signalfd (SIGCHLD, SIGINT, SIGTERM, blocked for the whole run) and the
// SocketServer's epoll descriptor. No other thread exists, so no lock does either.
//
// Signals: CMD stays in gpuattr's process group, so it keeps the terminal (it can read stdin,
// and job control treats `gpuattr run -- CMD` like CMD). A Ctrl-C on the terminal therefore
// already reaches CMD and gpuattr both; gpuattr sees it as SI_KERNEL and does not forward it
// again. A SIGINT or SIGTERM sent to gpuattr by a process (kill, a batch scheduler: SI_USER and
// friends) is forwarded to CMD, once. Either way gpuattr itself does not stop: it waits for CMD
// to exit and still writes the report. (A signal sent with kill(-pgid) reaches CMD directly and
// through us: the one case of double delivery, accepted for keeping the terminal.)
// Descendants: gpuattr is a child subreaper (PR_SET_CHILD_SUBREAPER), so descendants orphaned
// by CMD become its children: it reaps them (their exit statuses go into the report) and knows
// whether any is left. After CMD exits, gpuattr waits up to drain_timeout_s until no connection
// is open and no descendant is left (a late child may yet connect); one more SIGINT or SIGTERM
// cuts that wait short. Whatever is still open then ends as truncated; descendants still running
// are left alone. (An orphan sees gpuattr, not init, as its parent.)
//
// Clean run (`--clean-steps N`, docs/attribution.md §FLOPs): after the traced run and its
// report's inputs are complete, CMD runs once more with no shim and no ranges, only the Python
// step timer, its stdin, stdout and stderr on /dev/null and signals forwarded as above; its step
// times give MFU its denominator. Its exit status is not gpuattr's.
//
// Armed (`gpuattr run --armed`, docs/attach.md): gpuattr collects nothing itself and writes no
// report. CMD runs with the shim in armed mode (GPUATTR_MODE=armed) pointed at the daemon's
// socket; reports come from `gpuattr attach` through the daemon. No daemon reachable: a warning,
// and CMD runs all the same (the traced job comes first). Signals are forwarded as above.
//
// Exit status: CMD's (128 + signal when a signal killed it); 127 when CMD is not found and 126
// when it cannot be executed, as a shell does. Failures of gpuattr itself are a Status, which
// the caller maps to an exit status (cli.h).
#ifndef GPUATTR_COLLECTOR_CLI_RUN_H_
#define GPUATTR_COLLECTOR_CLI_RUN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "cli/subcommand.h"
#include "export/exports.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuattr::collector {

inline constexpr double kMaxDrainTimeoutS = 3600.0;

struct RunOptions {
  std::vector<std::string> command;              // CMD ARGS...; never empty
  std::string output = "gpuattr-report%n.json";  // output_names.h
  AnalysisOptions analysis;
  bool quiet = false;            // no summary on stderr
  bool force_overwrite = false;  // replace existing outputs
  double drain_timeout_s = 5.0;
  // Rule tables replacing the built-in ones, read and checked before CMD starts; empty: built-in.
  std::string phase_rules_path;
  std::string family_rules_path;
  // --trace, --folded, --speedscope (docs/visualization.md), --activities.
  ExportPaths exports;
  // --kernel-maps: where to keep the compiled graphs' kernel maps (cli/kept_kernel_maps.h).
  std::string kept_kernel_maps;
  bool armed = false;       // --armed: run CMD armed for the daemon; no report here
  std::string socket_path;  // --socket (armed): the daemon's; empty: the default
  // --pytorch: the Python annotator's mode, "modules", "ops" or "off" (docs/pytorch.md); empty:
  // GPUATTR_PYTORCH's value, else "modules".
  std::string pytorch_mode;
  // FLOPs (docs/attribution.md §FLOPs): --flops counts through the annotator, with --flop-rules
  // before the built-in rules; --peak-flops replaces the device table's peak; the uninstrumented
  // step time comes from a second, bare run of CMD (--clean-steps N: the median of N steps) or
  // is stated (--clean-step-ms). Each of the others implies --flops.
  bool flops = false;
  std::string flop_rules_path;
  std::optional<double> peak_flops;
  uint64_t clean_steps = 0;
  std::optional<double> clean_step_ms;
};

// Runs the capture and returns the exit status gpuattr should exit with.
StatusOr<int> RunCapture(const RunOptions& options);

// Adds `gpuattr run` to `app`.
Subcommand AddRunSubcommand(CLI::App& app);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_CLI_RUN_H_
