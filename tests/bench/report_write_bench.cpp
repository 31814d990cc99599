// The report writer's text rate: SerializeReport of one process whose steps hold N rows (the part
// of a report that grows with the run), and of a DOM of the same size without rows. The figure a
// writer on nlohmann's public API alone (issue 21) must keep (docs/benchmarks.md §Report writing
// rate). Bytes per second of report text; scripts/bench.sh runs it on one core.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/report_builder.h"
#include "report/report_writer.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

// A report of one process with `rows` step rows, each with a few phase and category terms.
Report ReportWithSteps(int64_t rows) {
  auto steps = std::make_shared<std::vector<StepRow>>();
  for (int64_t i = 0; i < rows; ++i) {
    StepRow row;
    row.index = static_cast<uint64_t>(i);
    row.name = "ProfilerStep#" + std::to_string(i);
    row.start_ns = 1000 + static_cast<uint64_t>(i) * 10000;
    row.end_ns = row.start_ns + 9000;
    row.phases.ns[0] = 3000;
    row.phases.ns[1] = 4000;
    row.busy_ns = 7000;
    row.categories.compute_ns = 6500;
    steps->push_back(row);
  }
  Report report;
  report.without_step_rows = {
      {"schema_version", "gpuattr.report/1"},
      {"processes",
       {{{"pid", 1}, {"steps", {{"range", "ProfilerStep#*"}, {"rows", Json::array()}}}}}}};
  report.step_rows.push_back({true, false, steps});
  return report;
}

// Times SerializeReport of `report`, counting its text's bytes.
void TimeSerialize(benchmark::State& state, const Report& report) {
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = SerializeReport(report);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["report_MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_SerializeStepRows(benchmark::State& state) {
  TimeSerialize(state, ReportWithSteps(state.range(0)));
}
BENCHMARK(BM_SerializeStepRows)->Arg(100000)->Unit(benchmark::kMillisecond);

// The same rows as one DOM, written whole (the rest of a report: passes, families, devices).
void BM_SerializeDom(benchmark::State& state) {
  Report report;
  report.without_step_rows = Json::parse(SerializeReport(ReportWithSteps(state.range(0))));
  TimeSerialize(state, report);
}
BENCHMARK(BM_SerializeDom)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpuattr::collector

BENCHMARK_MAIN();
