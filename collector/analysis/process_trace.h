// ProcessTrace: everything the collector knows about one traced process, built from the records
// of its connection, and the streaming analysis over it (docs/architecture.md §Streaming
// analysis). A facade over the pipeline's stages:
//
//   datagram ─▶ trace_builder ─▶ reorder_window ─▶ launch_join ─▶ activity_folder ─▶ analysis
//               (decode, check,   (start order,     (correlation    (attribute once,
//                TraceData)        watermark)        id, expiry)      fold units)
//
// One ProcessTrace per connection (a traced process; a forked child has its own). The ingest
// thread feeds it datagram by datagram; it never trusts a byte: a malformed datagram is rejected
// whole with kDataLoss and changes nothing. Records may arrive in any order across datagrams
// (device activity before its launch, a kernel before the graph node it ran), so the join by
// correlation id and by graph node id tolerates both orders and names what stays unmatched.
//
// The options are given once, at construction: attribution happens while the stream is read.
// Memory is bounded by work in flight: activities wait only inside the reorder window, launches
// only while in flight, and folded host records are dropped. A window of kWholeTraceWindow
// releases nothing before the end (an imported file: finite, and already in memory).
//
// Single-threaded: owned by the ingest loop while the connection lives, then by whoever builds
// the report.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace gpuattr::wire {
class MessageReader;
}  // namespace gpuattr::wire

namespace gpuattr::collector {

class FamilyRules;
class PhaseRules;
class TraceObserver;
struct ProcessAnalysis;

struct AnalysisOptions {
  // A reorder window that holds the whole trace: nothing is released before the end.
  static constexpr uint64_t kWholeTraceWindow = std::numeric_limits<uint64_t>::max();

  bool inherit = true;               // DESIGN §2 rule 2; --no-inherit turns it off
  double coverage_threshold = 0.95;  // coverage.passed is attributed_fraction >= this
  // Rule tables (--family-rules, --phase-rules); null: the built-in ones.
  std::shared_ptr<const FamilyRules> family_rules;
  std::shared_ptr<const PhaseRules> phase_rules;
  std::optional<std::string> step;  // --step NAME; empty: auto-detect
  uint64_t skip_steps = 0;          // --skip-steps N
  // How far behind the latest timestamp an activity may arrive and still join the unions in
  // start order, and a launch wait for its activity.
  uint64_t reorder_window_ns = 2'000'000'000;
  // The kernel maps of torch.compile'd graphs (compiled_graph_join.h): a file, or a directory of
  // <pid>.jsonl files (gpuattr run's); empty: launches stay on their compiled graph's range.
  std::string kernel_maps;
  // Graph calls named as torch.profiler names them (`## Call CompiledFxGraph KEY ##`) that the
  // maps do not name, each with the range name of the map an import matched to it by its kernels
  // (import/compiled_graph_calls.h).
  std::vector<std::pair<std::string, std::string>> kernel_map_names;
  // Receives released activities, launches, closed ranges and the finished analysis of every
  // process (analysis/trace_observer.h): the exports. Unset: none. Called on the thread that
  // folds (the ingest thread while streaming).
  std::shared_ptr<TraceObserver> observer;
};

// Replaces `options`' rule tables with the files named by --phase-rules and --family-rules (an
// empty path keeps the built-in table). kInvalidArgument/kNotFound name the file and the problem.
Status LoadRuleFiles(const std::string& phase_rules_path, const std::string& family_rules_path,
                     AnalysisOptions* options);

class ProcessTrace {
 public:
  explicit ProcessTrace(AnalysisOptions options = {});
  ~ProcessTrace();
  ProcessTrace(const ProcessTrace&) = delete;
  ProcessTrace& operator=(const ProcessTrace&) = delete;

  // Validates one datagram (wire::MessageReader) and consumes it. On a framing error or a
  // protocol violation (no Hello first, a version mismatch) returns kDataLoss and applies
  // nothing; the caller closes the connection and counts it.
  Status ConsumeMessage(const uint8_t* data, uint32_t size);
  // The same for a datagram the caller has validated already (`reader` opened, at its first
  // record): it is not validated again.
  Status ConsumeValidated(wire::MessageReader& reader);

  // The connection ended (EOF or closed by us) at `closed_ns`, CLOCK_MONOTONIC (the shim's
  // clock: a live connection on this host); empty when not known, as for a replayed stream file.
  // A stream without Goodbye is `truncated`, and may have lost what came after its last record.
  void Finish(std::optional<uint64_t> closed_ns = std::nullopt);

  bool has_hello() const;
  uint32_t pid() const;  // 0 before Hello

  // After Finish: the analysis. The first call ends the fold; later calls return the same.
  ProcessAnalysis TakeAnalysis();

  // Test accessor: activities waiting in the reorder window plus launches in flight.
  size_t in_flight() const;
  // Test accessor: closed ranges, pushes and value marks held for a fold that has not consumed
  // them yet.
  size_t host_records_held() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
