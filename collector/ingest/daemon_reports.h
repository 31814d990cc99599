// DaemonReports: the reports `gpuattr daemon` writes, and their file names (docs/attach.md).
//
//   run-<pid>-<UTC>-<n>.json   a process traced from its start, when its connection ended;
//   attach-<n>-<UTC>.json      an attach, once all of its windows ended.
//
// Names are made here alone, from numbers and the UTC time: no client string becomes part of a
// path. A name taken by an earlier daemon in the same second gets a suffix (bounded; the last
// candidate is used even when taken: written atomically, it replaces the old file whole).
//
// Single-threaded: the daemon's thread.
#ifndef GPUATTR_COLLECTOR_INGEST_DAEMON_REPORTS_H_
#define GPUATTR_COLLECTOR_INGEST_DAEMON_REPORTS_H_

#include <cstdint>
#include <string>

#include "analysis/process_trace.h"
#include "base/status.h"
#include "ingest/attach_session.h"
#include "report/report_builder.h"
#include "wire/protocol.h"

namespace gpuattr::collector {

// capture.window of an attach report: what `request` asked for (`step_name` defined with it).
WindowRequest WindowRequestFromWire(const wire::AttachRequest& request,
                                    const std::string& step_name);

class DaemonReports {
 public:
  // `reports_dir` exists and is writable (the caller checked); `analysis` are the options every
  // trace of the daemon is analysed with.
  DaemonReports(std::string reports_dir, const AnalysisOptions& analysis);

  // The report of a traced connection's finished trace, accepted at `accepted_ns` (monotonic)
  // and `accepted_realtime_ns`; the path it was written to.
  StatusOr<std::string> WriteTraced(ProcessTrace& trace, uint64_t accepted_ns,
                                    uint64_t accepted_realtime_ns);
  // The report of a finished attach over its windows' traces; the path it was written to.
  StatusOr<std::string> WriteAttach(AttachSession& attach);

 private:
  std::string NewPath(const std::string& stem) const;

  std::string reports_dir_;
  double coverage_threshold_;
  bool inherit_;
  uint64_t next_run_number_ = 1;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_INGEST_DAEMON_REPORTS_H_
