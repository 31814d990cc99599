// Helpers to read reports in tests: the single process of a one-trace report, a pass by path,
// and the reconciliation identity DESIGN §2 promises.
#ifndef GPUATTR_TESTS_UNIT_COLLECTOR_REPORT_TEST_UTIL_H_
#define GPUATTR_TESTS_UNIT_COLLECTOR_REPORT_TEST_UTIL_H_

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "report/report_builder.h"
#include "report/report_writer.h"

namespace gpuattr::collector::testing {

using Json = nlohmann::json;

// The report as the collector writes it, parsed back: the step rows in place.
inline Json ReportAsWritten(const Report& report) { return Json::parse(SerializeReport(report)); }

// The report of `traces` (their analyses are taken here); `options` gives the report's own
// settings (coverage threshold, inherit), and must be the options the traces were built with.
inline Json ReportFor(const std::vector<ProcessTrace*>& traces,
                      const AnalysisOptions& options = {}) {
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.capture.command = {"python3", "train.py"};
  inputs.capture.host = "testhost";
  inputs.capture.started_at_realtime_ns = 1700000000123456789ull;
  inputs.capture.duration_ns = 5000;
  for (ProcessTrace* trace : traces) inputs.processes.push_back(trace->TakeAnalysis());
  inputs.coverage_threshold = options.coverage_threshold;
  inputs.inherit = options.inherit;
  return ReportAsWritten(BuildReport(inputs));
}

inline Json ProcessReportOf(ProcessTrace& trace, const AnalysisOptions& options = {}) {
  Json report = ReportFor({&trace}, options);
  REQUIRE(report["processes"].size() == 1);
  return report["processes"][0];
}

inline const Json* FindPass(const Json& passes, const std::vector<std::string>& path,
                            size_t depth = 0) {
  for (const Json& pass : passes) {
    if (pass["name"] == path[depth]) {
      if (depth + 1 == path.size()) return &pass;
      return FindPass(pass["children"], path, depth + 1);
    }
  }
  return nullptr;
}

inline const Json& Pass(const Json& process, const std::vector<std::string>& path) {
  const Json* pass = FindPass(process["passes"], path);
  INFO("pass " << Json(path).dump());
  REQUIRE(pass != nullptr);
  return *pass;
}

inline uint64_t UnattributedNs(const Json& process, const std::string& reason) {
  for (const Json& entry : process["coverage"]["unattributed"]) {
    if (entry["reason"] == reason) return entry["ns"].get<uint64_t>();
  }
  return 0;
}

// Root totals + unattributed == kernel + memcpy + memset time, exactly.
inline void CheckReconciliation(const Json& process) {
  uint64_t roots = 0;
  for (const Json& pass : process["passes"]) roots += pass["device"]["total_ns"].get<uint64_t>();
  uint64_t unattributed = 0;
  for (const Json& entry : process["coverage"]["unattributed"])
    unattributed += entry["ns"].get<uint64_t>();
  const Json& totals = process["totals"];
  CHECK(roots + unattributed == totals["kernel_ns"].get<uint64_t>() +
                                    totals["memcpy_ns"].get<uint64_t>() +
                                    totals["memset_ns"].get<uint64_t>());
}

}  // namespace gpuattr::collector::testing

#endif  // GPUATTR_TESTS_UNIT_COLLECTOR_REPORT_TEST_UTIL_H_
