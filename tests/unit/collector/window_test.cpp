// Capture windows (docs/attach.md §What a window's report covers), fed through the wire: which
// Hello modes a trace reads, the window's completion and its report object, exclusion by
// correlation id (deferred and streaming), ranges open before the window, and graph nodes whose
// creation was never seen. Every expected number is worked out by hand in the comments.
#include <catch2/catch.hpp>
#include <functional>

#include "report/report_writer.h"
#include "report_test_util.h"
#include "test_files.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using wire::ApiKind;
using wire::DetachOutcome;
using wire::WindowEndReason;

enum : uint32_t { kExe = 1, kTrain = 2, kStep = 3, kForward = 4, kGemm = 5 };
// train, train/step, train/step/forward, and a top-level step.
enum : uint32_t { kNodeTrain = 20, kNodeStep = 21, kNodeForward = 22, kNodeTopStep = 23 };

constexpr uint32_t kPid = 300;

uint64_t U(const Json& value) { return value.get<uint64_t>(); }

// Hello (window or traced), names, path nodes, CuptiOk and, for a window, WindowBegin at 1000
// (window 7, 250 ns to subscribe CUPTI, with `begin_flags`).
Message Preamble(bool window = true, uint16_t begin_flags = 0) {
  Message message;
  message.Add(window ? MakeWindowHello(kPid, 2) : MakeHello(kPid, 2));
  message.Str(kExe, "/usr/bin/python3").Str(kTrain, "train").Str(kStep, "step");
  message.Str(kForward, "forward").Str(kGemm, "_Z4gemmPfS_");
  message.Add(MakeNode(kNodeTrain, 0, kTrain)).Add(MakeNode(kNodeStep, kNodeTrain, kStep));
  message.Add(MakeNode(kNodeForward, kNodeStep, kForward)).Add(MakeNode(kNodeTopStep, 0, kStep));
  message.Add(CuptiOk());
  if (window) message.Add(wire::WindowBegin{1000, 7, 1, 250}, begin_flags);
  return message;
}

// `options`: the report's own settings (the traces were built with the same options).
Json AttachReport(const std::vector<ProcessTrace*>& traces,
                  std::map<uint32_t, uint64_t> attach_indices = {},
                  const AnalysisOptions& options = {}) {
  ReportInputs inputs;
  inputs.capture.mode = "attach";
  inputs.capture.host = "testhost";
  inputs.capture.started_at_realtime_ns = 1700000000123456789ull;
  inputs.capture.duration_ns = 4000;
  inputs.window_request = WindowRequest{"pid", kPid, std::nullopt, std::nullopt, 2, "step"};
  inputs.attach_indices = std::move(attach_indices);
  for (ProcessTrace* trace : traces) inputs.processes.push_back(trace->TakeAnalysis());
  inputs.coverage_threshold = options.coverage_threshold;
  inputs.inherit = options.inherit;
  return ReportAsWritten(BuildReport(inputs));
}

Json WindowProcess(ProcessTrace& trace, const AnalysisOptions& options = {}) {
  Json report = AttachReport({&trace}, {}, options);
  REQUIRE(report["processes"].size() == 1);
  return report["processes"][0];
}

Status SendHello(ProcessTrace& trace, uint32_t mode) {
  wire::Hello hello = MakeHello(kPid);
  hello.mode = mode;
  Message message;
  message.Add(hello);
  std::vector<uint8_t> bytes = message.Bytes(0);
  return trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

TEST_CASE("window: a trace reads traced and window streams, and refuses armed and unknown modes",
          "[unit][window]") {
  for (const wire::HelloMode mode : {wire::HelloMode::kTraced, wire::HelloMode::kWindow}) {
    ProcessTrace trace;
    CHECK(SendHello(trace, static_cast<uint32_t>(mode)).ok());
    CHECK(trace.has_hello());
  }
  for (const uint32_t mode : {static_cast<uint32_t>(wire::HelloMode::kArmed), uint32_t{9}}) {
    INFO("mode " << mode);
    ProcessTrace trace;
    CHECK(SendHello(trace, mode).code() == StatusCode::kDataLoss);
    CHECK_FALSE(trace.has_hello());
  }
  ProcessTrace trace;
  Feeder feed(trace);
  Message first = Preamble();
  REQUIRE(feed.Send(first).ok());
  Message second;
  second.Add(MakeWindowHello(kPid));
  CHECK(feed.Send(second).code() == StatusCode::kDataLoss);
}

TEST_CASE("window: a stream ended by WindowEnd is complete and reports its window",
          "[unit][window]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Push(1100, 1, kNodeTopStep).Add(MakeLaunch(10, 1200, 1, kNodeTopStep));
  message.Add(MakeKernel(10, 1300, 1400, 7, kGemm)).Pop(1500, 1, kNodeTopStep);
  message.Add(
      MakeWindowEnd(2000, 7, WindowEndReason::kStepsDone, DetachOutcome::kFinalized, 2, 800));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();

  const Json report = AttachReport({&trace}, {{kPid, 3}});
  CHECK(report["capture"]["mode"] == "attach");
  CHECK(report["capture"]["window"] == Json::parse(R"({"selector": "pid", "pid": 300,
      "rank": null, "duration_ns": null, "steps": 2, "step_name": "step"})"));
  const Json& process = report["processes"][0];
  CHECK(process["status"] == "complete");
  CHECK(process["goodbye"] == false);
  CHECK(process["window"] == Json::parse(R"({"id": 7, "begin_ns": 1000, "end_ns": 2000,
      "end_reason": "steps_done", "detach": "finalized", "attach_ns": 250, "detach_ns": 800,
      "steps": 2, "excluded_activities": 0, "launch_correlation_ids": {"first": 10, "last": 10},
      "attach_index": 3, "late_attach": false})"));
  CHECK(U(Pass(process, {"step"})["attribution"]["direct_ns"]) == 100);
  // The capture ends at WindowEnd: the device's tail runs from 1400 to 2000.
  CHECK(U(process["devices"][0]["gaps"]["tail_ns"]) == 600);

  test_support::TempDir dir;
  const std::string path = dir.File("window.json");
  REQUIRE(WriteReportAtomically(Report{report, {}}, path).ok());
  const test_support::SchemaCheck check = test_support::ValidateReport(path);
  INFO(check.output);
  CHECK(check.valid);
}

TEST_CASE("window: cut streams are truncated, unknown wire values read as null", "[unit][window]") {
  auto window_of = [](const std::function<void(Message&)>& end) {
    ProcessTrace trace;
    Feeder feed(trace);
    Message message = Preamble();
    message.Add(MakeLaunch(10, 1200, 1, 0)).Add(MakeKernel(10, 1300, 1400));
    end(message);
    REQUIRE(feed.Send(message).ok());
    trace.Finish();
    return WindowProcess(trace);
  };
  SECTION("no WindowEnd") {
    const Json process = window_of([](Message&) {});
    CHECK(process["status"] == "truncated");
    CHECK(process["window"] == Json::parse(R"({"id": 7, "begin_ns": 1000, "end_ns": null,
        "end_reason": null, "detach": null, "attach_ns": 250, "detach_ns": null, "steps": null,
        "excluded_activities": 0, "launch_correlation_ids": {"first": 10, "last": 10},
        "attach_index": 1, "late_attach": false})"));
  }
  SECTION("a reason and a detach outcome this collector does not know") {
    const Json process = window_of([](Message& message) {
      message.Add(wire::WindowEnd{2000, 7, 99, 98, 0, 5});
    });
    CHECK(process["status"] == "complete");
    CHECK(process["window"]["end_ns"] == 2000);
    CHECK(process["window"]["end_reason"].is_null());
    CHECK(process["window"]["detach"].is_null());
    CHECK(process["window"]["detach_ns"].is_null());
  }
  SECTION("a pending detach has no detach time") {
    const Json process = window_of([](Message& message) {
      message.Add(MakeWindowEnd(2000, 7, WindowEndReason::kClosed, DetachOutcome::kPending, 0, 5));
    });
    CHECK(process["window"]["end_reason"] == "closed");
    CHECK(process["window"]["detach"] == "pending");
    CHECK(process["window"]["detach_ns"].is_null());
    CHECK(process["window"]["steps"] == 0);
  }
  SECTION("a process traced from the start has no window") {
    ProcessTrace trace;
    Feeder feed(trace);
    Message message = Preamble(/*window=*/false);
    message.Add(wire::Goodbye{2000, 1, 0});
    REQUIRE(feed.Send(message).ok());
    trace.Finish();
    const Json report = ReportFor({&trace});
    CHECK(report["capture"]["window"].is_null());
    CHECK(report["processes"][0]["window"].is_null());
    CHECK(report["processes"][0]["status"] == "complete");
  }
}

// Window [1000, 5000]; launches 10 @1100, 12 @1200, 20 @1300 under step on tid 1.
//   c5 900-950 and c9 1000-1010: no launch, below 10 -> excluded.
//   c10 1150-1250 (100), c12 1250-1300 (50), c20 1400-1430 (30): step, direct.
//   c15 1300-1320 (20): no launch, between 10 and 20 -> launch_not_seen.
//   c0 1500-1510 (10): correlation id 0 names no launch -> launch_not_seen.
//   c21 5100-5200: no launch, above 20 (after the window) -> excluded.
std::vector<Message> ExclusionMessages(bool window) {
  std::vector<Message> messages(3);
  messages[0] = Preamble(window);
  messages[0].Push(1050, 1, kNodeTopStep);
  messages[0].Add(MakeKernel(5, 900, 950)).Add(MakeKernel(9, 1000, 1010));
  for (const auto& [correlation, enter] : {std::pair{10u, 1100u}, {12u, 1200u}, {20u, 1300u}}) {
    messages[1].Add(MakeLaunch(correlation, enter, 1, kNodeTopStep));
  }
  messages[1].Add(MakeKernel(10, 1150, 1250)).Add(MakeKernel(12, 1250, 1300));
  messages[1].Add(MakeKernel(15, 1300, 1320)).Add(MakeKernel(20, 1400, 1430));
  messages[1].Add(MakeKernel(0, 1500, 1510));
  messages[2].Add(MakeKernel(21, 5100, 5200)).Pop(1600, 1, kNodeTopStep);
  if (window) {
    messages[2].Add(MakeWindowEnd(5000, 7, WindowEndReason::kClosed, DetachOutcome::kFinalized));
  } else {
    messages[2].Add(wire::Goodbye{5000, 1, 0});
  }
  return messages;
}

Json FeedExclusion(ProcessTrace& trace, bool window, const AnalysisOptions& options = {}) {
  Feeder feed(trace);
  std::vector<Message> messages = ExclusionMessages(window);
  for (Message& message : messages) REQUIRE(feed.Send(message).ok());
  trace.Finish();
  return window ? WindowProcess(trace, options) : ProcessReportOf(trace, options);
}

void CheckExcluded(const Json& process) {
  CHECK(U(process["window"]["excluded_activities"]) == 3);
  CHECK(U(process["totals"]["kernels"]) == 5);
  CHECK(U(process["totals"]["kernel_ns"]) == 100 + 50 + 20 + 30 + 10);
  CHECK(U(process["totals"]["launches"]) == 3);
  CHECK(U(Pass(process, {"step"})["attribution"]["direct_ns"]) == 180);
  CHECK(process["coverage"]["unattributed"] ==
        Json::parse(R"([{"reason": "launch_not_seen", "ns": 30, "kernel_ns": 30,
                         "activities": 2}])"));
  CHECK(U(process["loss"]["orphan_activities"]) == 2);
  CHECK(U(process["loss"]["late_activities"]) == 0);
  const Json& device = process["devices"][0];
  // Busy: [1150, 1320] + [1400, 1430] + [1500, 1510] = 210 of the span [1150, 1510].
  CHECK(U(device["first_start_ns"]) == 1150);
  CHECK(U(device["span_ns"]) == 360);
  CHECK(U(device["busy_ns"]) == 210);
  // The capture ends at WindowEnd (5000), not at the excluded activity's end (5200).
  CHECK(U(device["gaps"]["tail_ns"]) == 5000 - 1510);
  CHECK(U(process["families"][0]["kernels"]) == 5);
  CheckReconciliation(process);
}

TEST_CASE("window: activities outside the window by correlation id are excluded",
          "[unit][window]") {
  SECTION("deferred") {
    AnalysisOptions whole_trace;
    whole_trace.reorder_window_ns = AnalysisOptions::kWholeTraceWindow;
    ProcessTrace trace(whole_trace);
    CheckExcluded(FeedExclusion(trace, /*window=*/true));
  }
  SECTION("streaming: the reorder window releases c5 before any launch arrived") {
    AnalysisOptions options;
    options.reorder_window_ns = 100;
    ProcessTrace trace(options);
    CheckExcluded(FeedExclusion(trace, /*window=*/true, options));
  }
  SECTION("a stream traced from the start excludes nothing") {
    ProcessTrace trace;
    const Json process = FeedExclusion(trace, /*window=*/false);
    CHECK(process["window"].is_null());
    CHECK(U(process["totals"]["kernels"]) == 8);
    CHECK(U(process["loss"]["orphan_activities"]) == 5);
    CheckReconciliation(process);
  }
}

TEST_CASE("window: streaming decides with the launches known at release", "[unit][window]") {
  // c15 (1010-1020) arrives before any launch; a mark at 2000 moves the watermark (reorder
  // window 100) past it, so it is released while no launch is known: excluded. Launches 10 and
  // 20 arrive afterwards. Analysed at the end, c15 lies between them: launch_not_seen.
  auto feed_all = [](ProcessTrace& trace) {
    Feeder feed(trace);
    Message first = Preamble();
    first.Add(MakeKernel(15, 1010, 1020));
    REQUIRE(feed.Send(first).ok());
    Message second;
    second.Add(wire::Mark{2000, 1, kStep, 0, 0});
    REQUIRE(feed.Send(second).ok());
    Message third;
    third.Add(MakeLaunch(10, 2100, 1, 0)).Add(MakeLaunch(20, 2200, 1, 0));
    third.Add(MakeKernel(10, 2150, 2160)).Add(MakeKernel(20, 2250, 2270));
    third.Add(MakeWindowEnd(3000, 7, WindowEndReason::kClosed, DetachOutcome::kFinalized));
    REQUIRE(feed.Send(third).ok());
    trace.Finish();
  };
  AnalysisOptions options;
  options.reorder_window_ns = 100;
  ProcessTrace streamed(options);
  feed_all(streamed);
  const Json streamed_process = WindowProcess(streamed, options);
  CHECK(U(streamed_process["window"]["excluded_activities"]) == 1);
  CHECK(U(streamed_process["totals"]["kernel_ns"]) == 30);
  CHECK(streamed_process["coverage"]["unattributed"] ==
        Json::parse(R"([{"reason": "no_open_range", "ns": 30, "kernel_ns": 30,
                         "activities": 2}])"));
  AnalysisOptions whole_trace;
  whole_trace.reorder_window_ns = AnalysisOptions::kWholeTraceWindow;
  ProcessTrace deferred(whole_trace);
  feed_all(deferred);
  const Json deferred_process = WindowProcess(deferred);
  CHECK(U(deferred_process["window"]["excluded_activities"]) == 0);
  CHECK(U(deferred_process["totals"]["kernel_ns"]) == 40);
  CHECK(UnattributedNs(deferred_process, "launch_not_seen") == 10);
}

// Window [1000, 2500]. At its begin tid 1 has train and train/step open (flagged, stamped 1000).
//   c10 @1100 tid 1 under train/step -> 1100-1200 (100, direct);
//   c11 @1150 tid 2, no range -> 1200-1250 (50, inherits train/step from tid 1);
//   the flagged step pops at 1300 (no instance);
//   step [1400, 1700] with forward [1410, 1450]: c12 @1420 -> 1500-1600 (100, forward);
//   step [1800, 2000]: c13 @1810 -> 1900-1950 (50);
//   c14 @2100 tid 2 -> 2100-2110 (10, inherits train: still open);
//   step pushed at 2200, open at the window's end: c15 @2210 -> 2300-2310 (10).
void FeedOpenBeforeWindow(ProcessTrace& trace) {
  Feeder feed(trace);
  Message m = Preamble();
  m.PushOpenBeforeWindow(1000, 1, kNodeTrain).PushOpenBeforeWindow(1000, 1, kNodeStep);
  m.Add(MakeLaunch(10, 1100, 1, kNodeStep)).Add(MakeLaunch(11, 1150, 2, 0));
  m.Pop(1300, 1, kNodeStep);
  m.Push(1400, 1, kNodeStep).Push(1410, 1, kNodeForward).Add(MakeLaunch(12, 1420, 1, kNodeForward));
  m.Pop(1450, 1, kNodeForward).Pop(1700, 1, kNodeStep);
  m.Push(1800, 1, kNodeStep).Add(MakeLaunch(13, 1810, 1, kNodeStep)).Pop(2000, 1, kNodeStep);
  m.Add(MakeLaunch(14, 2100, 2, 0));
  m.Push(2200, 1, kNodeStep).Add(MakeLaunch(15, 2210, 1, kNodeStep));
  m.Add(MakeKernel(10, 1100, 1200)).Add(MakeKernel(11, 1200, 1250));
  m.Add(MakeKernel(12, 1500, 1600)).Add(MakeKernel(13, 1900, 1950));
  m.Add(MakeKernel(14, 2100, 2110)).Add(MakeKernel(15, 2300, 2310));
  m.Add(MakeWindowEnd(2500, 7, WindowEndReason::kClosed, DetachOutcome::kFinalized));
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
}

TEST_CASE("window: ranges open before the window are on the stack but are not instances",
          "[unit][window]") {
  AnalysisOptions options;
  options.step = "step";
  ProcessTrace trace(options);
  FeedOpenBeforeWindow(trace);
  const Json process = WindowProcess(trace, options);
  CHECK(process["main_thread"] == 1);
  const Json& train = Pass(process, {"train"});
  CHECK(U(train["instances"]) == 0);
  CHECK(train["host_ns"].is_null());
  CHECK(U(train["attribution"]["inherited_ns"]) == 10);
  CHECK(U(train["device"]["self_ns"]) == 10);
  const Json& step = Pass(process, {"train", "step"});
  CHECK(U(step["instances"]) == 2);  // neither the flagged one nor the one open at the end
  CHECK(U(step["host_ns"]["total"]) == 300 + 200);
  CHECK(U(step["host_ns"]["max"]) == 300);
  CHECK(U(step["attribution"]["direct_ns"]) == 100 + 50 + 10);
  CHECK(U(step["attribution"]["inherited_ns"]) == 50);
  const Json& forward = Pass(process, {"train", "step", "forward"});
  CHECK(U(forward["instances"]) == 1);
  CHECK(U(forward["host_ns"]["total"]) == 40);
  CHECK(U(forward["attribution"]["direct_ns"]) == 100);
  CHECK(process["coverage"]["unattributed"].empty());
  CHECK(U(process["loss"]["unclosed_ranges"]) == 0);
  CHECK(U(process["loss"]["unmatched_pops"]) == 0);
  CheckReconciliation(process);

  const Json& steps = process["steps"];
  REQUIRE(steps.is_object());
  CHECK(U(steps["instances"]) == 2);
  REQUIRE(steps["rows"].size() == 2);
  const Json& first = steps["rows"][0];
  CHECK(U(first["start_ns"]) == 1400);
  CHECK(U(first["end_ns"]) == 1700);
  CHECK(U(first["forward_ns"]) == 100);
  CHECK(U(first["other_ns"]) == 0);
  CHECK(U(first["busy_ns"]) == 100);
  const Json& second = steps["rows"][1];
  CHECK(U(second["start_ns"]) == 1800);
  CHECK(U(second["other_ns"]) == 50);
  CHECK(U(second["busy_ns"]) == 50);
  CHECK(U(second["gaps_ns"]) == 150);

  // Auto-detection sees no top-level range with two instances: train was never one.
  ProcessTrace auto_detected;
  FeedOpenBeforeWindow(auto_detected);
  const Json detected = WindowProcess(auto_detected);
  CHECK(detected["steps"].is_null());
}

// step [1100, 1300] on tid 1. Graph nodes 700-704 were created before the window (never seen):
//   c30 @1150 tid 1 under step: nodes 700 (1200-1260, 60) and 701 (1260-1300, 40) -> step, direct;
//   c31 @1160 tid 2, no range: node 702 (1300-1310, 10) -> step, inherited from tid 1;
//   c32 @1400 tid 1, no range open: node 703 (1400-1420, 20) -> no_open_range;
//   c29, its launch not recorded: node 704 (1420-1425, 5) -> launch_not_seen, no fallback;
//   c28 @1170 tid 1: an ordinary kernel (1430-1440, 10) -> step, direct.
void FeedGraphBeforeWindow(ProcessTrace& trace, bool window, uint16_t begin_flags = 0) {
  Feeder feed(trace);
  Message m = Preamble(window, begin_flags);
  m.Push(1100, 1, kNodeTopStep);
  m.Add(MakeLaunch(30, 1150, 1, kNodeTopStep, ApiKind::kGraph));
  m.Add(MakeLaunch(31, 1160, 2, 0, ApiKind::kGraph)).Add(MakeLaunch(28, 1170, 1, kNodeTopStep));
  m.Pop(1300, 1, kNodeTopStep).Add(MakeLaunch(32, 1400, 1, 0, ApiKind::kGraph));
  m.Add(MakeKernel(30, 1200, 1260, 7, kGemm, 700)).Add(MakeKernel(30, 1260, 1300, 7, kGemm, 701));
  m.Add(MakeKernel(31, 1300, 1310, 7, kGemm, 702)).Add(MakeKernel(32, 1400, 1420, 7, kGemm, 703));
  m.Add(MakeKernel(29, 1420, 1425, 7, kGemm, 704)).Add(MakeKernel(28, 1430, 1440, 7, kGemm));
  if (window) {
    m.Add(MakeWindowEnd(2000, 7, WindowEndReason::kClosed, DetachOutcome::kFinalized));
  } else {
    m.Add(wire::Goodbye{2000, 1, 0});
  }
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
}

TEST_CASE("window: a late attach says what it cannot know and names graphs built before it",
          "[unit][window]") {
  ProcessTrace late;
  FeedGraphBeforeWindow(late, /*window=*/true,
                        wire::kWindowBeginFlagLateAttach | wire::kWindowBeginFlagTorchLoaded);
  const Json process = WindowProcess(late);
  CHECK(process["status"] == "complete");  // refusals of parts of the picture, not device time
  CHECK(process["window"]["late_attach"] == true);
  CHECK(process["window"]["launch_correlation_ids"] == Json::parse(R"({"first": 28, "last": 32})"));
  std::vector<std::string> codes;
  for (const Json& refusal : process["refusals"]) codes.push_back(refusal["code"]);
  CHECK(codes == std::vector<std::string>{"nvtx_bound_before_attach",
                                          "launches_in_flight_at_attach",
                                          "pytorch_annotator_requires_start"});
  CHECK(process["coverage"]["fallbacks"] ==
        Json::parse(R"([{"reason": "graph_captured_before_attach", "ns": 130, "activities": 4}])"));

  ProcessTrace without_torch;
  FeedGraphBeforeWindow(without_torch, /*window=*/true, wire::kWindowBeginFlagLateAttach);
  CHECK(WindowProcess(without_torch)["refusals"].size() == 2);
  ProcessTrace armed;
  FeedGraphBeforeWindow(armed, /*window=*/true);
  const Json armed_process = WindowProcess(armed);
  CHECK(armed_process["refusals"].empty());
  CHECK(armed_process["window"]["late_attach"] == false);
}

TEST_CASE("window: graph nodes whose creation was never seen fall back to their launch",
          "[unit][window]") {
  const Json expected_fallbacks =
      Json::parse(R"([{"reason": "graph_captured_before_window", "ns": 130, "activities": 4}])");
  auto check = [&](const Json& process) {
    const Json& step = Pass(process, {"step"});
    CHECK(U(step["attribution"]["direct_ns"]) == 60 + 40 + 10);
    CHECK(U(step["attribution"]["inherited_ns"]) == 10);
    CHECK(U(step["attribution"]["captured_ns"]) == 0);
    CHECK(step["launch_contexts"].empty());
    CHECK(UnattributedNs(process, "no_open_range") == 20);
    CHECK(UnattributedNs(process, "launch_not_seen") == 5);
    CHECK(process["coverage"]["fallbacks"] == expected_fallbacks);
    CheckReconciliation(process);
  };
  ProcessTrace windowed;
  FeedGraphBeforeWindow(windowed, /*window=*/true);
  ProcessTrace traced;
  FeedGraphBeforeWindow(traced, /*window=*/false);
  SECTION("in a window") {
    const Json process = WindowProcess(windowed);
    check(process);
    CHECK(U(process["window"]["excluded_activities"]) == 0);
  }
  SECTION("traced from the start (records lost)") { check(ProcessReportOf(traced)); }
  SECTION("the summary merges the processes' fallbacks") {
    const Json report = AttachReport({&windowed, &traced});
    CHECK(
        report["summary"]["coverage"]["fallbacks"] ==
        Json::parse(R"([{"reason": "graph_captured_before_window", "ns": 260, "activities": 8}])"));
  }
  SECTION("an unmeasured process has null fallbacks, a clean one none") {
    ProcessTrace nvtx_only;
    Feeder feed(nvtx_only);
    Message m;
    m.Add(MakeHello(301)).Add(wire::Goodbye{10, 1, 0});
    REQUIRE(feed.Send(m).ok());
    nvtx_only.Finish();
    CHECK(ProcessReportOf(nvtx_only)["coverage"]["fallbacks"].is_null());
    ProcessTrace clean;
    Feeder clean_feed(clean);
    Message c = Preamble(/*window=*/false);
    c.Add(MakeLaunch(1, 5, 1, 0)).Add(MakeKernel(1, 10, 20)).Add(wire::Goodbye{30, 1, 0});
    REQUIRE(clean_feed.Send(c).ok());
    clean.Finish();
    CHECK(ProcessReportOf(clean)["coverage"]["fallbacks"] == Json::array());
  }
}

}  // namespace
}  // namespace gpuattr::collector::testing
