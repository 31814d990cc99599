// Reading a report's process entry back into the part of its ProcessAnalysis that the summary
// merges (SummaryBuilder::Add): status, device_measured, totals, coverage's terms
// (attributed_kernel_ns, by_phase_kernel_ns, unattributed, fallbacks) and families. `gpuattr
// merge` (cli/merge_command.h) recomputes a job's summary from these, by the same code that built
// each input's.
//
// The entry is untrusted input (another machine's file): every field is checked for its type
// and range, and the first that fails is named in a kDataLoss error with `where` (the file and
// the entry's index) before it. Reports written before a field existed (by_phase_kernel_ns,
// launch totals) fail the same way, naming the field. Pure; any thread.
#ifndef GPUATTR_COLLECTOR_REPORT_PROCESS_READER_H_
#define GPUATTR_COLLECTOR_REPORT_PROCESS_READER_H_

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/process_analysis.h"
#include "base/status.h"

namespace gpuattr::collector {

StatusOr<ProcessAnalysis> SummaryTermsOf(const nlohmann::json& process, const std::string& where);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_REPORT_PROCESS_READER_H_
