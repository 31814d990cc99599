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
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"

namespace gpuattr::collector {

class FamilyRules;
class PhaseRules;

struct AnalysisOptions {
  bool inherit = true;               // DESIGN §2 rule 2; --no-inherit turns it off
  double coverage_threshold = 0.95;  // coverage.passed is attributed_fraction >= this
  // Rule tables (--family-rules, --phase-rules); null: the built-in ones.
  std::shared_ptr<const FamilyRules> family_rules;
  std::shared_ptr<const PhaseRules> phase_rules;
  std::optional<std::string> step;  // --step NAME; empty: auto-detect
  uint64_t skip_steps = 0;          // --skip-steps N
};

class ProcessTrace {
 public:
  ProcessTrace();
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

 private:
  friend class ReportBuilderAccess;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_TRACE_H_
