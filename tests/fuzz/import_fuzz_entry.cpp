#include "import_fuzz_entry.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "import/kineto_importer.h"
#include "import/trace_replay.h"
#include "report/report_builder.h"
#include "report/report_writer.h"

namespace gpuattr::fuzz {

bool ImportKinetoBytes(const uint8_t* data, size_t size) {
  using namespace collector;
  MemorySource source(std::string_view(reinterpret_cast<const char*>(data), size));
  return ReportIfImported(
      ImportKineto(&source, "fuzz.json", KinetoOptions{size % 2 == 1}, nullptr));
}

bool ReportIfImported(const StatusOr<collector::ImportedTrace>& trace) {
  using namespace collector;
  if (!trace.ok()) {
    if (trace.status().code() != StatusCode::kDataLoss) {
      std::fprintf(stderr, "import failed with a non-data error: %s\n",
                   trace.status().message().c_str());
      std::abort();
    }
    return false;
  }
  ReplayStats stats;
  auto processes = ReplayTrace(*trace, AnalysisOptions{}, &stats);
  if (!processes.ok()) {
    std::fprintf(stderr, "replay failed: %s\n", processes.status().message().c_str());
    std::abort();
  }
  ReportInputs inputs;
  inputs.capture.mode = "import";
  for (const auto& process : *processes) inputs.processes.push_back(process->TakeAnalysis());
  const Report report = BuildReport(inputs);
  if (!report.without_step_rows.is_object()) std::abort();
  if (SerializeReport(report).empty()) std::abort();
  return true;
}

}  // namespace gpuattr::fuzz
