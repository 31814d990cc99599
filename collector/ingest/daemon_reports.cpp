#include "ingest/daemon_reports.h"

#include <sys/stat.h>
#include <time.h>

#include <utility>

#include "base/os.h"
#include "report/report_json.h"
#include "report/report_writer.h"

namespace gpuattr::collector {
namespace {

// "20250102T030405Z": the UTC second, for report file names.
std::string UtcStamp(uint64_t realtime_ns) { return UtcSeconds(realtime_ns, "%Y%m%dT%H%M%SZ"); }

}  // namespace

WindowRequest WindowRequestFromWire(const wire::AttachRequest& request,
                                    const std::string& step_name) {
  WindowRequest window;
  switch (static_cast<wire::AttachSelector>(request.selector)) {
    case wire::AttachSelector::kPid:
      window.selector = "pid";
      window.pid = request.value;
      break;
    case wire::AttachSelector::kRank:
      window.selector = "rank";
      window.rank = request.value;
      break;
    case wire::AttachSelector::kAll:
      window.selector = "all";
      break;
  }
  if (request.duration_ns > 0) window.duration_ns = request.duration_ns;
  if (request.steps > 0) {
    window.steps = request.steps;
    if (!step_name.empty()) window.step_name = step_name;
  }
  return window;
}

DaemonReports::DaemonReports(std::string reports_dir, const AnalysisOptions& analysis)
    : reports_dir_(std::move(reports_dir)),
      coverage_threshold_(analysis.coverage_threshold),
      inherit_(analysis.inherit) {}

StatusOr<std::string> DaemonReports::WriteTraced(ProcessTrace& trace, uint64_t accepted_ns,
                                                 uint64_t accepted_realtime_ns) {
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.capture.host = HostName();
  inputs.capture.started_at_realtime_ns = accepted_realtime_ns;
  inputs.capture.duration_ns = NowNs(CLOCK_MONOTONIC) - accepted_ns;
  inputs.processes.push_back(trace.TakeAnalysis());
  inputs.coverage_threshold = coverage_threshold_;
  inputs.inherit = inherit_;
  const std::string path =
      NewPath("run-" + std::to_string(trace.pid()) + "-" + UtcStamp(NowNs(CLOCK_REALTIME)) + "-" +
              std::to_string(next_run_number_++));
  GPUATTR_RETURN_IF_ERROR(WriteReportAtomically(BuildReport(inputs), path));
  return path;
}

StatusOr<std::string> DaemonReports::WriteAttach(AttachSession& attach) {
  ReportInputs inputs;
  inputs.capture.mode = "attach";
  inputs.capture.host = HostName();
  inputs.capture.started_at_realtime_ns = attach.requested_realtime_ns();
  inputs.capture.duration_ns = NowNs(CLOCK_MONOTONIC) - attach.requested_ns();
  inputs.coverage_threshold = coverage_threshold_;
  inputs.inherit = inherit_;
  inputs.window_request = WindowRequestFromWire(attach.request(), attach.step_name());
  for (AttachSession::Window& window : attach.windows()) {
    if (!window.trace) continue;
    inputs.processes.push_back(window.trace->TakeAnalysis());
    inputs.attach_indices[window.pid] = window.attach_index;
  }
  const std::string path = NewPath("attach-" + std::to_string(attach.number()) + "-" +
                                   UtcStamp(attach.requested_realtime_ns()));
  GPUATTR_RETURN_IF_ERROR(WriteReportAtomically(BuildReport(inputs), path));
  return path;
}

std::string DaemonReports::NewPath(const std::string& stem) const {
  const std::string base = reports_dir_ + "/" + stem;
  std::string path = base + ".json";
  struct stat info {};
  // A name taken by an earlier daemon in the same second gets a suffix; bounded, and the last
  // candidate is used even when taken (written atomically, it replaces the old file whole).
  for (int suffix = 2; suffix < 1000 && lstat(path.c_str(), &info) == 0; ++suffix) {
    path = base + "." + std::to_string(suffix) + ".json";
  }
  return path;
}

}  // namespace gpuattr::collector
