// AddProcessFacts: the process's identity, its status and refusals from one decision
// (process_analysis.h ProcessStatus), and the loss counters the report reads from the trace.
#include "analysis/process_facts.h"

#include <catch2/catch.hpp>
#include <string>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

wire::Hello Hello(wire::HelloMode mode = wire::HelloMode::kTraced) {
  wire::Hello hello{};
  hello.pid = 42;
  hello.ppid = 7;
  hello.rank = 3;
  hello.local_rank = -1;
  hello.monotonic_ns = 100;
  hello.realtime_ns = 1700000000000000000ull;
  hello.mode = static_cast<uint32_t>(mode);
  return hello;
}

ProcessAnalysis FactsOf(const TraceData& data, bool measured) {
  ProcessAnalysis analysis;
  analysis.device_measured = measured;
  AddProcessFacts(data, analysis);
  return analysis;
}

TEST_CASE("a stream that ended with Goodbye and measured device time is complete",
          "[unit][process_facts]") {
  TraceFixture trace;
  trace.data.hello = Hello();
  trace.data.hello->exe_string = trace.Str("/usr/bin/python3");
  trace.data.cupti_state = wire::CuptiState{0, 130000, 0, 0};
  trace.data.goodbye = wire::Goodbye{500, 1, 0};
  trace.data.thread_names[9] = trace.Str("autograd");
  trace.data.lost_messages = 2;
  trace.data.unmatched_pops = 1;
  wire::Diagnostics diagnostics{};
  diagnostics.ring_dropped_records = 1;
  diagnostics.cupti_dropped_records = 4;
  trace.data.diagnostics = diagnostics;
  const ProcessAnalysis facts = FactsOf(trace.data, true);
  REQUIRE(facts.process);
  CHECK(facts.process->pid == 42);
  CHECK(facts.process->ppid == 7);
  CHECK(facts.process->rank == 3);
  CHECK(facts.process->exe == "/usr/bin/python3");
  CHECK(facts.process->realtime_ns == 1700000000000000000ull);
  CHECK(facts.status == ProcessStatus::kComplete);
  CHECK(std::string(ProcessStatusName(facts.status)) == "complete");
  CHECK(facts.goodbye);
  CHECK(facts.refusals.empty());
  REQUIRE(facts.threads.size() == 1);
  CHECK(facts.threads[0].name == "autograd");
  CHECK(facts.loss.lost_messages == 2);
  CHECK(facts.loss.unmatched_pops == 1);
  CHECK(facts.loss.dropped_records == 5u);
  CHECK_FALSE(facts.window);
}

TEST_CASE("one decision: truncated first, then refused, host only or complete",
          "[unit][process_facts]") {
  TraceFixture trace;
  trace.data.hello = Hello();
  trace.data.goodbye = wire::Goodbye{500, 1, 0};
  SECTION("CUDA never initialised: host only, nothing refused, nothing lost") {
    const ProcessAnalysis facts = FactsOf(trace.data, false);
    CHECK(facts.status == ProcessStatus::kHostOnly);
    CHECK(std::string(ProcessStatusName(facts.status)) == "host_only");
    CHECK(facts.refusals.empty());
    CHECK_FALSE(facts.loss.lost_span);
  }
  SECTION("no driver: the shim's driver_missing refuses") {
    trace.data.refusals.push_back({static_cast<uint32_t>(wire::RefusalCode::kDriverMissing), 0,
                                   trace.Str("libcuda.so.1: cannot open shared object file"), 0});
    const ProcessAnalysis facts = FactsOf(trace.data, false);
    CHECK(facts.status == ProcessStatus::kRefused);
    REQUIRE(facts.refusals.size() == 1);
    CHECK(std::string(facts.refusals[0].entry->code) == "driver_missing");
    CHECK(facts.refusals[0].seen == "libcuda.so.1: cannot open shared object file");
  }
  SECTION("CUPTI failed without saying why") {
    trace.data.cupti_state = wire::CuptiState{999, 130000, 0, 0};
    const ProcessAnalysis facts = FactsOf(trace.data, false);
    CHECK(facts.status == ProcessStatus::kRefused);
    REQUIRE(facts.refusals.size() == 1);
    CHECK(std::string(facts.refusals[0].entry->code) == "cupti_unavailable");
    CHECK(facts.refusals[0].cupti_result == 999);
  }
  SECTION("a refusal from outside the stream refuses a host-only process") {
    ProcessAnalysis facts = FactsOf(trace.data, false);
    AddOutsideRefusal(NoDeviceActivityInTraceRefusal(), "", facts);
    CHECK(facts.status == ProcessStatus::kRefused);
    REQUIRE(facts.refusals.size() == 1);
    CHECK(std::string(facts.refusals[0].entry->code) == "no_device_activity_in_trace");
  }
  SECTION("CUPTI finalized itself mid-run") {
    trace.data.cupti_state = wire::CuptiState{0, 130000, 0, 0};
    trace.data.refusals.push_back(
        {static_cast<uint32_t>(wire::RefusalCode::kCuptiFatalError), 7, trace.Str("finalized"), 0});
    const ProcessAnalysis facts = FactsOf(trace.data, true);
    CHECK(facts.status == ProcessStatus::kTruncated);
    REQUIRE(facts.refusals.size() == 1);
    CHECK(std::string(facts.refusals[0].entry->code) == "cupti_fatal_error");
    CHECK(facts.refusals[0].seen == "finalized");
    CHECK_FALSE(facts.loss.lost_span);  // the stream itself ended in order
  }
}

TEST_CASE("a stream cut before Goodbye is truncated and names the span it may have lost",
          "[unit][process_facts]") {
  TraceFixture trace;
  trace.data.hello = Hello();
  trace.data.last_timestamp_ns = 9000;
  SECTION("measured") {
    trace.data.cupti_state = wire::CuptiState{0, 130000, 0, 0};
    trace.data.closed_ns = 9500;
    const ProcessAnalysis facts = FactsOf(trace.data, true);
    CHECK(facts.status == ProcessStatus::kTruncated);
    REQUIRE(facts.loss.lost_span);
    CHECK(facts.loss.lost_span->from_ns == 9000);
    CHECK(facts.loss.lost_span->to_ns == 9500u);
  }
  SECTION("host only, and the close time not known: truncated wins") {
    const ProcessAnalysis facts = FactsOf(trace.data, false);
    CHECK(facts.status == ProcessStatus::kTruncated);
    REQUIRE(facts.loss.lost_span);
    CHECK_FALSE(facts.loss.lost_span->to_ns);
  }
  SECTION("a close time before the last record is not believed") {
    trace.data.closed_ns = 10;
    const ProcessAnalysis facts = FactsOf(trace.data, false);
    REQUIRE(facts.loss.lost_span);
    CHECK_FALSE(facts.loss.lost_span->to_ns);
  }
}

TEST_CASE("a capture window's stream ends with its WindowEnd", "[unit][process_facts]") {
  TraceFixture trace;
  trace.data.hello = Hello(wire::HelloMode::kWindow);
  trace.data.cupti_state = wire::CuptiState{0, 130000, 0, 0};
  trace.data.goodbye = wire::Goodbye{500, 1, 0};  // a Goodbye does not end a window
  CHECK(FactsOf(trace.data, true).status == ProcessStatus::kTruncated);
  trace.data.window_end = wire::WindowEnd{};
  const ProcessAnalysis facts = FactsOf(trace.data, true);
  CHECK(facts.status == ProcessStatus::kComplete);
  REQUIRE(facts.window);
  CHECK(facts.window->end);
  CHECK_FALSE(facts.window->begin);
}

TEST_CASE("a stream that never said Hello has no identity", "[unit][process_facts]") {
  TraceFixture trace;
  CHECK_FALSE(FactsOf(trace.data, false).process);
}

}  // namespace
}  // namespace gpuattr::collector::testing
