// What a report says of a process that could not be measured, end to end under `gpuattr run`
// with real programs (docs/attribution.md §Status and loss): an nvcc-built program on a machine
// without a CUDA driver is refused with driver_missing, whichever way it links the runtime; on a
// machine with one, it is not.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "scenario_check.h"

namespace gpuattr::e2e {
namespace {

using json = nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;

bool HostHasDriver() {
  struct stat status;
  return stat("/proc/driver/nvidia/version", &status) == 0 || stat("/dev/dxg", &status) == 0;
}

void CheckDriverVerdict(const std::string& program) {
  TempDir dir;
  const std::string report_path = dir.File("r.json");
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", report_path, "--", program});
  INFO(program << "\nstdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(report_path));
  const json report = ReadJson(report_path);
  REQUIRE(report["processes"].size() == 1);
  const json& process = report["processes"][0];
  if (HostHasDriver()) {
    CHECK(process["status"] != "refused");
    for (const json& refusal : process["refusals"]) CHECK(refusal["code"] != "driver_missing");
    return;
  }
  CHECK_THAT(run.out, Catch::Contains("cudaErrorInsufficientDriver"));
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  const json& refusal = process["refusals"][0];
  CHECK(refusal["code"] == "driver_missing");
  CHECK_THAT(refusal["cause"].get<std::string>(), Catch::Contains("libcuda.so.1"));
  CHECK_THAT(refusal["remedy"].get<std::string>(), Catch::Contains("driver"));
  CHECK(process["totals"]["kernel_ns"].is_null());
  CHECK(process["goodbye"] == true);
  CHECK(report["summary"]["statuses"]["refused"] == 1);
}

TEST_CASE("an nvcc-built program with the static runtime and no driver gets driver_missing",
          "[e2e]") {
  if (GPUATTR_ASAN_SHIM) {
    // The ASan-built shim preloaded into the uninstrumented, statically linked program crashes
    // it at start (pc 0, on a thread ASan does not know) unless libasan is preloaded first: a
    // sanitizer-build artefact this test does not work around; the dev build's run checks it.
    WARN("skipped under the asan-ubsan preset");
    return;
  }
  CheckDriverVerdict(DEVICE_COUNT_STATIC);
}

TEST_CASE("an nvcc-built program with libcudart.so and no driver gets driver_missing", "[e2e]") {
  CheckDriverVerdict(DEVICE_COUNT_SHARED);
}

}  // namespace
}  // namespace gpuattr::e2e
