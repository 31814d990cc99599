// The golden tier (house style §9.8, Perfetto's diff tests): byte streams the real shim sent
// while simgpu-run ran a scenario (tests/golden/<case>/stream.rec), replayed datagram by datagram
// into the collector's ProcessTraces, must give exactly the committed report.json and
// activities.jsonl, and the committed report must satisfy the schema. A change that moves any
// number, or any byte of the report's text, shows here as a diff to read.
//
// GPUATTR_UPDATE_GOLDENS=1 rewrites the expected files instead of comparing
// (scripts/update_goldens.sh, which also records the streams again).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "activity_line_collector.h"
#include "analysis/process_trace.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

struct Replayed {
  std::string report;
  std::string activities;
};

// stream.rec: records of (connection u32, length u32, bytes), little-endian; a length of
// 0xFFFFFFFF closes the connection (scripts/behaviour_snapshot.py writes them). Each connection
// is one ProcessTrace, as under `gpuattr run`; traces are reported in the order they closed.
Replayed Replay(const std::string& path) {
  const std::string bytes = test_support::ReadFile(path);
  REQUIRE_FALSE(bytes.empty());
  auto collector = std::make_shared<ActivityLineCollector>();
  AnalysisOptions options;
  options.observer = collector;
  std::map<uint32_t, std::unique_ptr<ProcessTrace>> open;
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.capture.command = {"simgpu-run", "scenario.json"};
  inputs.capture.host = "golden";
  for (size_t at = 0; at < bytes.size();) {
    REQUIRE(bytes.size() - at >= 8);
    uint32_t connection = 0;
    uint32_t length = 0;
    std::memcpy(&connection, bytes.data() + at, 4);
    std::memcpy(&length, bytes.data() + at + 4, 4);
    at += 8;
    std::unique_ptr<ProcessTrace>& trace = open[connection];
    if (!trace) trace = std::make_unique<ProcessTrace>(options);
    if (length == 0xFFFFFFFFu) {
      trace->Finish();
      inputs.processes.push_back(trace->TakeAnalysis());
      open.erase(connection);
      continue;
    }
    REQUIRE(bytes.size() - at >= length);
    const Status consumed =
        trace->ConsumeMessage(reinterpret_cast<const uint8_t*>(bytes.data() + at), length);
    INFO(consumed.message());
    REQUIRE(consumed.ok());
    at += length;
  }
  REQUIRE(open.empty());  // every recorded connection closed
  return {SerializeReport(BuildReport(inputs)), collector->text};
}

void CheckGolden(const std::string& name) {
  const std::string dir = std::string(GPUATTR_GOLDEN_DIR) + "/" + name;
  const Replayed replayed = Replay(dir + "/stream.rec");
  const char* update = std::getenv("GPUATTR_UPDATE_GOLDENS");
  if (update != nullptr && std::strcmp(update, "1") == 0) {
    test_support::WriteFile(dir + "/report.json", replayed.report);
    test_support::WriteFile(dir + "/activities.jsonl", replayed.activities);
  }
  const test_support::SchemaCheck schema = test_support::ValidateReport(dir + "/report.json");
  INFO(schema.output);
  CHECK(schema.valid);
  // Compared whole: any difference at all fails, and the first differing line says where.
  const std::string expected = test_support::ReadFile(dir + "/report.json");
  const std::string expected_lines = test_support::ReadFile(dir + "/activities.jsonl");
  if (replayed.report != expected) {
    size_t line = 1;
    size_t i = 0;
    for (; i < expected.size() && i < replayed.report.size() && expected[i] == replayed.report[i];
         ++i) {
      if (expected[i] == '\n') ++line;
    }
    FAIL_CHECK(name << "/report.json differs from line " << line
                    << " on; scripts/update_goldens.sh rewrites it (read the diff)");
  }
  CHECK(replayed.activities == expected_lines);
}

TEST_CASE("golden: nested ranges on one thread", "[golden]") { CheckGolden("nested_ranges"); }

TEST_CASE("golden: an autograd thread inherits the main thread's backward", "[golden]") {
  CheckGolden("autograd_threads");
}

TEST_CASE("golden: four ranks, one a straggler", "[golden]") { CheckGolden("four_ranks"); }

TEST_CASE("golden: a process killed mid-run is truncated", "[golden]") {
  CheckGolden("fault_crash");
}

TEST_CASE("golden: warm-up steps and jittered kernels", "[golden]") { CheckGolden("warmup_steps"); }

TEST_CASE("golden: a CUDA graph captured in forward and backward, replayed twice", "[golden]") {
  CheckGolden("graph_replay");
}

}  // namespace
}  // namespace gpuattr::collector::testing
