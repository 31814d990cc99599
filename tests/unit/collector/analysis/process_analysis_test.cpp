// The result model's own code: ProcessStatusName, FamilyStats merging, and AnalysisMerger, the
// summary's merge over processes.
#include "analysis/process_analysis.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpuattr::collector::testing {
namespace {

ProcessAnalysis Measured(uint64_t kernel_ns, uint64_t attributed_ns, const std::string& family) {
  ProcessAnalysis analysis;
  analysis.device_measured = true;
  analysis.totals.kernel_ns = kernel_ns;
  analysis.totals.kernels = 1;
  analysis.totals.launches = 2;
  analysis.attributed_kernel_ns = attributed_ns;
  analysis.phase_coverage.attributed_kernel_ns[static_cast<size_t>(Phase::kForward)] =
      attributed_ns;
  analysis.unattributed.push_back({"no_open_range", kernel_ns - attributed_ns, 0, 1});
  FamilyStats stats;
  stats.family = family;
  stats.AddKernel({}, kernel_ns);
  stats.AddExample(family + "_kernel");
  analysis.families.push_back(stats);
  analysis.fallbacks.push_back({"graph_captured_before_window", 5, 1});
  return analysis;
}

TEST_CASE("the summary's merge adds what the measured processes measured",
          "[unit][process_analysis]") {
  const ProcessAnalysis a = Measured(100, 90, "gemm");
  const ProcessAnalysis b = Measured(300, 100, "gemm");
  const ProcessAnalysis c = Measured(50, 50, "copy");
  ProcessAnalysis refused;  // no device time: adds nothing
  refused.totals.kernel_ns = 1000;
  auto merge = [](const std::vector<const ProcessAnalysis*>& processes) {
    AnalysisMerger merger;
    for (const ProcessAnalysis* process : processes) merger.Add(*process);
    return std::move(merger).Finish();
  };
  const MergedAnalysis merged = merge({&a, &refused, &b, &c});
  CHECK(merged.any_measured);
  CHECK(merged.totals.kernel_ns == 450);
  CHECK(merged.totals.kernels == 3);
  CHECK(merged.totals.launches == 6);
  CHECK(merged.attributed_kernel_ns == 240);
  CHECK(merged.phase_coverage.attributed_kernel_ns[static_cast<size_t>(Phase::kForward)] == 240);
  REQUIRE(merged.unattributed.size() == 1);
  CHECK(merged.unattributed[0].ns == 210);
  CHECK(merged.unattributed[0].activities == 3);
  REQUIRE(merged.fallbacks.size() == 1);
  CHECK(merged.fallbacks[0].ns == 15);
  REQUIRE(merged.families.size() == 2);
  CHECK(merged.families[0].family == "gemm");  // largest first
  CHECK(merged.families[0].kernels == 2);
  CHECK(merged.families[0].total_ns == 400);
  CHECK(merged.families[0].min_ns == 100);
  CHECK(merged.families[0].names == std::vector<std::string>{"gemm_kernel"});
  CHECK(merged.families[1].family == "copy");

  CHECK_FALSE(merge({&refused}).any_measured);
  CHECK(merge({&refused}).totals.kernel_ns == 0);
}

TEST_CASE("a union of sample summaries keeps its exact terms and drops the median",
          "[unit][process_analysis]") {
  Samples<int64_t> first;
  for (int64_t value : {5, -3, 9}) first.Add(value);
  Samples<int64_t> second;
  for (int64_t value : {20, 1}) second.Add(value);
  SampleSummary<int64_t> summary = SampleSummary<int64_t>::Of(first);
  CHECK(summary.median == 5);
  CHECK(summary.median_exact == true);

  SampleSummary<int64_t> empty;
  empty.Merge(summary);  // one side without samples: the median survives
  CHECK(empty.count == 3);
  CHECK(empty.median == 5);
  summary.Merge(SampleSummary<int64_t>::Of(Samples<int64_t>{}));
  CHECK(summary.median == 5);

  summary.Merge(SampleSummary<int64_t>::Of(second));
  CHECK(summary.count == 5);
  CHECK(summary.total == 32);
  CHECK(summary.min == -3);
  CHECK(summary.max == 20);
  CHECK_FALSE(summary.median.has_value());
  CHECK_FALSE(summary.median_exact.has_value());

  SampleSummary<int64_t> near_limit;
  near_limit.count = 1;
  near_limit.total = near_limit.min = near_limit.max = INT64_MAX - 1;
  near_limit.Merge(summary);
  CHECK(near_limit.total == INT64_MAX);  // saturates like Samples::total
}

TEST_CASE("statuses have their report names", "[unit][process_analysis]") {
  CHECK(std::string(ProcessStatusName(ProcessStatus::kComplete)) == "complete");
  CHECK(std::string(ProcessStatusName(ProcessStatus::kTruncated)) == "truncated");
  CHECK(std::string(ProcessStatusName(ProcessStatus::kRefused)) == "refused");
}

}  // namespace
}  // namespace gpuattr::collector::testing
