// ProcessTrace: everything the collector knows about one traced process, built from the records
// of its connection, and the analysis over it.
//
// One ProcessTrace per connection (a traced process; a forked child has its own). The ingest
// thread feeds it datagram by datagram; it never trusts a byte: a malformed datagram is rejected
// whole with kDataLoss and changes nothing. Records may arrive in any order across datagrams
// (device activity before its launch, a kernel before the graph node it ran), so the join by
// (correlation id) and by (graph node id) tolerates both orders and names what stays unmatched.
// Single-threaded: owned by the ingest loop while the connection lives, read by the report
// builder after it ended.
//
// Memory (docs/architecture.md §Streaming analysis): built with options, it keeps device
// activities only inside its reorder window (ordered by start) and launches only while in
// flight; each released activity is joined and folded into the analysis. Built without, it
// defers: everything waits for TakeAnalysis (importers, tests).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"

namespace gpuattr::wire {
struct RecordView;
}  // namespace gpuattr::wire

namespace gpuattr::collector {

class FamilyRules;
struct ActivityRecord;
class PhaseRules;
class TraceObserver;

struct AnalysisOptions {
  bool inherit = true;               // DESIGN §2 rule 2; --no-inherit turns it off
  double coverage_threshold = 0.95;  // coverage.passed is attributed_fraction >= this
  // Rule tables (--family-rules, --phase-rules); null: the built-in ones.
  std::shared_ptr<const FamilyRules> family_rules;
  std::shared_ptr<const PhaseRules> phase_rules;
  std::optional<std::string> step;  // --step NAME; empty: auto-detect
  uint64_t skip_steps = 0;          // --skip-steps N
  // Streaming only (ProcessTrace(AnalysisOptions)): how far behind the latest timestamp an
  // activity may arrive and still join the unions in start order (--reorder-window).
  uint64_t reorder_window_ns = 2'000'000'000;
  // Receives released activities, launches, closed ranges and the finished analysis of every
  // process (analysis/trace_observer.h): the exports (--trace, --folded, --speedscope,
  // --activities). Unset: none. Called on the
  // thread that folds (the ingest thread while streaming).
  std::shared_ptr<TraceObserver> observer;
};

// Replaces `options`' rule tables with the files named by --phase-rules and --family-rules (an
// empty path keeps the built-in table). kInvalidArgument/kNotFound name the file and the problem.
Status LoadRuleFiles(const std::string& phase_rules_path, const std::string& family_rules_path,
                     AnalysisOptions* options);

struct ProcessAnalysis;

class ProcessTrace {
 public:
  // Deferred: every activity waits until TakeAnalysis names the options (import, tests).
  ProcessTrace();
  // Streaming: activities are folded with `options` as the reorder window releases them.
  explicit ProcessTrace(AnalysisOptions options);
  ~ProcessTrace();
  ProcessTrace(const ProcessTrace&) = delete;
  ProcessTrace& operator=(const ProcessTrace&) = delete;

  // Validates one datagram (wire::MessageReader) and applies its records. On a framing error or
  // a protocol violation (no Hello first, a version mismatch) returns kDataLoss and applies
  // nothing; the caller closes the connection and counts it.
  Status ConsumeMessage(const uint8_t* data, uint32_t size);

  // The connection ended (EOF or closed by us). A stream without Goodbye is `truncated`.
  void Finish();

  bool has_hello() const;
  uint32_t pid() const;  // 0 before Hello

  // After Finish: the analysis. For a deferred trace `options` shape it (each call analyses
  // anew); a streaming one was shaped at construction and its first call ends the fold, later
  // calls return the same result.
  ProcessAnalysis TakeAnalysis(const AnalysisOptions& options) const;

  // Test accessor: activities waiting in the reorder window plus launches in flight.
  size_t in_flight() const;
  // Test accessor: closed ranges and pushes held for a fold that has not consumed them yet.
  size_t host_records_held() const;

 private:
  struct State;
  void Apply(const wire::RecordView& record);
  void AddActivity(const ActivityRecord& record);
  std::unique_ptr<State> state_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
