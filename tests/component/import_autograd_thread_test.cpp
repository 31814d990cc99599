// `gpuattr import --ranges ops` on the real DDP traces of ../shared/traces: the work DDP's reducer
// launches on the autograd thread between and after the evaluate ops (the bucket copies, inside
// `aten::copy_` ops that name no phase) is backward (docs/attribution.md §Phases, backward on
// autograd's threads), to the nanosecond of pytorch_phase_reference.py --ranges-ops, an
// independent computation; and stays backward when the trace's `## backward ##` annotation, which
// covers the main thread while the autograd thread works, is dropped (drop_annotations.py), as in
// the torch.profiler traces of programs that do not annotate.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "import_run.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::test {
namespace {

using nlohmann::json;
using test_support::TempDir;

// The trace's phase terms imported with --ranges ops; each equals the reference's.
json ImportedPhasesAgreeingWithReference(const std::string& trace) {
  TempDir dir;
  const ImportRun run = Import(dir, {trace}, {"--ranges", "ops"});
  REQUIRE(run.process.exit_code == 0);
  REQUIRE(run.report["processes"].size() == 1);
  const json& process = run.report["processes"][0];
  const json reference = ReferencePhases(trace, {"--ranges-ops"});
  const json& expected = reference.at(std::to_string(process["pid"].get<uint64_t>())).at("phases");
  for (const std::string& term : kPhaseTerms) {
    INFO(trace << " " << term);
    CHECK(process["phases"][term] == expected[term]);
  }
  return process["phases"];
}

TEST_CASE(
    "gpuattr import --ranges ops: the DDP reducer's work on the autograd thread is backward, "
    "with or without DDP's ## backward ## annotation",
    "[import][traces][phases]") {
  const json nccl =
      ImportedPhasesAgreeingWithReference(kTraces + "hta_a100_ddp_nccl/nccl_data.json.gz");
  // The reducer's 483 device-to-device copies are no longer `other`.
  CHECK(nccl["other_ns"] == 0);

  TempDir dir;
  const std::string unannotated = dir.File("nccl_data_without_backward_annotation.json");
  const test_support::ProcessResult dropped = test_support::RunProcess(
      {GPUATTR_PYTHON, std::string(GPUATTR_SOURCE_DIR) + "/tests/component/drop_annotations.py",
       kTraces + "hta_a100_ddp_nccl/nccl_data.json.gz", unannotated, "## backward ##"});
  INFO(dropped.err);
  REQUIRE(dropped.exit_code == 0);
  CHECK(dropped.out == "dropped 3\n");  // one per step
  const json bare = ImportedPhasesAgreeingWithReference(unannotated);
  // Without the annotation only launches before the autograd thread's first evaluate op of a step
  // are not backward: a few microseconds.
  CHECK(bare["backward_ns"].get<uint64_t>() + bare["other_ns"].get<uint64_t>() ==
        nccl["backward_ns"].get<uint64_t>());
  CHECK(bare["other_ns"].get<uint64_t>() * 1000 < nccl["backward_ns"].get<uint64_t>());

  ImportedPhasesAgreeingWithReference(kTraces + "hta_a100_trace_diff_control/control.json.gz");
}

}  // namespace
}  // namespace gpuattr::test
