// ProcessTrace and its analysis, fed through the wire: the correlation join in both arrival
// orders, graph launches (1:N, capture through clones), inheritance from the main thread, loss
// counting, busy unions and gaps, the pass tree and its reconciliation, refusals.
#include <catch2/catch.hpp>

#include "analysis/kernel_family.h"
#include "report_test_util.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using wire::ApiKind;

// String ids and path nodes shared by the tests.
enum : uint32_t { kExe = 1, kStep = 2, kForward = 3, kBackward = 4, kGemm = 5, kOptimizer = 6 };
enum : uint32_t { kNodeStep = 10, kNodeForward = 11, kNodeBackward = 12, kNodeOptimizer = 13 };

Message Preamble(bool cupti = true) {
  Message message;
  message.Add(MakeHello(100, 0, kExe)).Str(kExe, "/usr/bin/python3");
  message.Str(kStep, "step").Str(kForward, "forward").Str(kBackward, "backward");
  message.Str(kGemm, "_Z4gemmPfS_").Str(kOptimizer, "optimizer");
  message.Add(MakeNode(kNodeStep, 0, kStep)).Add(MakeNode(kNodeForward, kNodeStep, kForward));
  message.Add(MakeNode(kNodeBackward, kNodeStep, kBackward))
      .Add(MakeNode(kNodeOptimizer, 0, kOptimizer));
  if (cupti) message.Add(CuptiOk());
  return message;
}

wire::Goodbye Bye(uint64_t ts) {
  return {ts, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0};
}

uint64_t U(const Json& value) { return value.get<uint64_t>(); }

TEST_CASE("device activity joins its launch in either arrival order", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message first = Preamble();
  first.Push(100, 1, kNodeStep).Push(110, 1, kNodeForward);
  first.Add(MakeKernel(1, 200, 300, 7, kGemm));  // before its launch
  REQUIRE(feed.Send(first).ok());
  Message second;
  second.Add(MakeLaunch(1, 120, 1, kNodeForward)).Add(wire::ApiExit{125, 1, 1});
  second.Add(MakeLaunch(2, 130, 1, kNodeForward)).Pop(140, 1, kNodeForward);
  second.Add(MakeLaunch(3, 150, 1, kNodeStep)).Pop(400, 1, kNodeStep);
  REQUIRE(feed.Send(second).ok());
  Message third;
  third.Add(MakeKernel(2, 300, 350, 7, kGemm)).Add(MakeKernel(3, 350, 450, 7, kGemm)).Add(Bye(500));
  REQUIRE(feed.Send(third).ok());
  trace.Finish();

  const Json process = ProcessReportOf(trace);
  CHECK(process["status"] == "complete");
  CHECK(process["pid"] == 100);
  CHECK(process["rank"] == 0);
  CHECK(process["exe"] == "/usr/bin/python3");
  const Json& forward = Pass(process, {"step", "forward"});
  CHECK(U(forward["device"]["self_ns"]) == 150);
  CHECK(U(forward["attribution"]["direct_ns"]) == 150);
  CHECK(U(forward["device"]["kernels"]) == 2);
  CHECK(U(forward["instances"]) == 1);
  CHECK(U(forward["host_ns"]["total"]) == 30);
  const Json& step = Pass(process, {"step"});
  CHECK(U(step["device"]["self_ns"]) == 100);
  CHECK(U(step["device"]["total_ns"]) == 250);
  CHECK(U(step["host_ns"]["total"]) == 300);
  CHECK(U(process["loss"]["unmatched_launches"]) == 0);
  CHECK(U(process["loss"]["orphan_activities"]) == 0);
  CHECK(process["coverage"]["attributed_fraction"] == 1.0);
  CHECK(process["coverage"]["passed"] == true);
  CHECK(U(process["totals"]["launches"]) == 3);
  CheckReconciliation(process);
}

TEST_CASE("a graph launch joins N activities, attributed at capture through clones",
          "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Push(100, 1, kNodeStep).Push(105, 1, kNodeForward);
  // Stream capture: the captured launches create graph nodes under step/forward.
  message.Add(MakeLaunch(5, 110, 1, kNodeForward)).Add(MakeGraphNode(500, 5, kNodeForward));
  message.Add(MakeLaunch(6, 112, 1, kNodeForward)).Add(MakeGraphNode(501, 6, kNodeForward));
  message.Pop(120, 1, kNodeForward).Pop(125, 1, kNodeStep).Push(130, 1, kNodeOptimizer);
  // Instantiate clones every node (CUPTI also reports the clone as created, under optimizer);
  // 700 is a clone of a clone.
  message.Add(MakeClone(600, 500)).Add(MakeGraphNode(600, 0, kNodeOptimizer));
  message.Add(MakeClone(601, 501)).Add(MakeClone(700, 600));
  message.Add(MakeLaunch(7, 140, 1, kNodeOptimizer, ApiKind::kGraph));
  message.Add(MakeKernel(7, 200, 260, 7, kGemm, 700)).Add(MakeKernel(7, 260, 300, 7, kGemm, 601));
  message.Add(MakeKernel(7, 300, 310, 7, kGemm, 999));  // a node whose creation was not seen
  message.Pop(320, 1, kNodeOptimizer).Add(Bye(400));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();

  const Json process = ProcessReportOf(trace);
  const Json& forward = Pass(process, {"step", "forward"});
  CHECK(U(forward["attribution"]["captured_ns"]) == 100);
  CHECK(U(forward["device"]["self_ns"]) == 100);
  REQUIRE(forward["launch_contexts"].size() == 1);
  CHECK(forward["launch_contexts"][0]["path"] == Json({"optimizer"}));
  CHECK(U(forward["launch_contexts"][0]["ns"]) == 100);
  CHECK(U(forward["launch_contexts"][0]["activities"]) == 2);
  // Node 999's creation was never seen: attributed at its graph launch, listed as a fallback.
  CHECK(U(Pass(process, {"optimizer"})["device"]["self_ns"]) == 10);
  CHECK(U(Pass(process, {"optimizer"})["attribution"]["direct_ns"]) == 10);
  CHECK(process["coverage"]["unattributed"].empty());
  CHECK(process["coverage"]["fallbacks"] ==
        Json::parse(R"([{"reason": "graph_captured_before_window", "ns": 10, "activities": 1}])"));
  // The captured launches (5, 6) never run; the graph launch (7) matched three activities.
  CHECK(U(process["loss"]["unmatched_launches"]) == 0);
  CHECK(U(process["loss"]["orphan_activities"]) == 0);
  CHECK(U(process["totals"]["kernels"]) == 3);
  CheckReconciliation(process);
}

TEST_CASE("launches on a thread without ranges inherit the main thread's range", "[unit][trace]") {
  auto fed = [](AnalysisOptions options) {
    auto trace = std::make_unique<ProcessTrace>(std::move(options));
    Feeder feed(*trace);
    Message first = Preamble();
    // tid 2's ranges arrive first but start later: the main thread is tid 1 (first push by time).
    first.Push(200, 2, kNodeOptimizer)
        .Add(MakeLaunch(3, 220, 2, kNodeOptimizer))
        .Pop(250, 2, kNodeOptimizer);
    REQUIRE(feed.Send(first).ok());
    Message second;
    second.Push(100, 1, kNodeBackward).Pop(1000, 1, kNodeBackward);
    second.Add(MakeLaunch(1, 500, 3, 0)).Add(MakeLaunch(2, 1500, 3, 0));
    second.Add(MakeKernel(1, 600, 700)).Add(MakeKernel(2, 1600, 1650)).Add(MakeKernel(3, 230, 240));
    second.Add(wire::ThreadName{3, kBackward}).Add(Bye(2000));
    REQUIRE(feed.Send(second).ok());
    trace->Finish();
    return trace;
  };

  SECTION("inherit on") {
    const Json process = ProcessReportOf(*fed({}));
    CHECK(process["main_thread"] == 1);
    const Json& backward = Pass(process, {"step", "backward"});
    CHECK(U(backward["attribution"]["inherited_ns"]) == 100);
    CHECK(U(backward["attribution"]["direct_ns"]) == 0);
    CHECK(U(Pass(process, {"optimizer"})["attribution"]["direct_ns"]) == 10);
    CHECK(UnattributedNs(process, "no_open_range") == 50);
    CHECK(Pass(process, {"step"})["host_ns"].is_null());
    CHECK(U(Pass(process, {"step"})["instances"]) == 0);
    CheckReconciliation(process);
  }
  SECTION("inherit off") {
    AnalysisOptions options;
    options.inherit = false;
    const Json process = ProcessReportOf(*fed(options), options);
    CHECK(U(Pass(process, {"step", "backward"})["device"]["self_ns"]) == 0);
    CHECK(UnattributedNs(process, "no_open_range") == 150);
    CheckReconciliation(process);
  }
}

TEST_CASE("orphans, unmatched launches, incomplete records and loss are counted", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Push(1, 1, kNodeStep);
  message.Add(MakeLaunch(50, 5, 1, kNodeStep));                            // never runs
  message.Add(MakeKernel(0, 10, 20)).Add(MakeKernel(99, 20, 40));          // no launch
  message.Add(MakeLaunch(51, 6, 1, kNodeStep)).Add(MakeKernel(51, 0, 0));  // no timestamps
  message.Add(MakeLaunch(52, 7, 1, kNodeStep, ApiKind::kCapture));         // bookkeeping only
  message.Add(MakeLaunch(53, 8, 1, kNodeStep)).Add(MakeGraphNode(530, 53, kNodeStep));
  message.Add(MakeLaunch(54, 9, 1, kNodeStep));
  message.Add(MakeLaunch(54, 9, 1, 0), wire::kApiFlagNested);  // the driver call inside
  message.Add(MakeKernel(54, 40, 45));
  wire::Diagnostics diagnostics{};
  diagnostics.ring_dropped_records = 1;
  diagnostics.socket_dropped_records = 2;
  diagnostics.cupti_dropped_records = 3;
  message.Add(diagnostics);
  REQUIRE(feed.Send(message).ok());
  feed.SkipSequence(2);
  Message later;
  diagnostics.ring_dropped_records = 4;  // cumulative: supersedes the first
  later.Add(diagnostics);
  REQUIRE(feed.Send(later).ok());
  trace.Finish();  // no Goodbye

  const Json process = ProcessReportOf(trace);
  CHECK(process["status"] == "truncated");
  const Json& loss = process["loss"];
  CHECK(U(loss["unmatched_launches"]) == 1);
  CHECK(U(loss["orphan_activities"]) == 2);
  CHECK(U(loss["incomplete_records"]) == 1);
  CHECK(U(loss["dropped_records"]) == 9);
  CHECK(U(loss["lost_messages"]) == 2);
  CHECK(U(loss["unclosed_ranges"]) == 1);
  CHECK(U(process["totals"]["launches"]) == 4);
  CHECK(U(process["totals"]["kernels"]) == 3);
  CHECK(U(process["totals"]["kernel_ns"]) == 35);
  CHECK(UnattributedNs(process, "launch_not_seen") == 30);
  CHECK(U(Pass(process, {"step"})["attribution"]["direct_ns"]) == 5);
  CHECK(process["coverage"]["attributed_fraction"].get<double>() == Approx(5.0 / 35.0));
  CHECK(process["coverage"]["passed"] == false);
  CheckReconciliation(process);
}

TEST_CASE("a gap is named by the main thread's range, else by the launching thread's",
          "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Str(20, "dataloader").Add(MakeNode(20, kNodeStep, 20));
  // Main thread 1: step, and dataloader from 150 to 400. Thread 2 launches everything under its
  // own `backward`. Gaps: [200, 500) while the main thread was in dataloader; [600, 800) after
  // the main thread's step ended, named by thread 2's range.
  message.Push(10, 1, kNodeStep).Push(20, 2, kNodeBackward);
  message.Add(MakeLaunch(1, 30, 2, kNodeBackward)).Add(MakeKernel(1, 100, 200, 1));
  message.Push(150, 1, 20).Pop(400, 1, 20);
  message.Add(MakeLaunch(2, 450, 2, kNodeBackward)).Add(MakeKernel(2, 500, 600, 1));
  message.Pop(550, 1, kNodeStep);
  message.Add(MakeLaunch(3, 700, 2, kNodeBackward)).Add(MakeKernel(3, 800, 900, 1));
  message.Pop(950, 2, kNodeBackward).Add(Bye(1000));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();

  const Json process = ProcessReportOf(trace);
  const Json& largest = process["devices"][0]["gaps"]["largest"];
  REQUIRE(largest.size() == 2);
  CHECK(U(largest[0]["start_ns"]) == 200);
  CHECK(largest[0]["host_range"] == Json({"step", "dataloader"}));
  CHECK(largest[0]["launch_tid"] == 2);
  CHECK(U(largest[1]["start_ns"]) == 600);
  CHECK(largest[1]["host_range"] == Json({"step", "backward"}));
}

TEST_CASE("busy is the union over overlapping streams, and gaps are classified", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Str(7, "NVIDIA H100").Add(wire::Device{0, 7});
  message.Push(10, 1, kNodeStep);
  for (uint32_t c = 1; c <= 5; ++c) {
    const uint64_t enter[] = {0, 50, 60, 70, 550, 90};
    message.Add(MakeLaunch(c, enter[c], 1, kNodeStep));
  }
  message.Add(MakeKernel(1, 100, 300, 1)).Add(MakeKernel(2, 250, 450, 2));
  message.Add(MakeKernel(3, 400, 500, 1)).Add(MakeKernel(4, 600, 700, 2));
  message.Add(MakeMemcpy(5, 800, 850, 1));
  message.Pop(900, 1, kNodeStep).Add(Bye(1000));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();

  const Json process = ProcessReportOf(trace);
  REQUIRE(process["devices"].size() == 1);
  const Json& device = process["devices"][0];
  CHECK(device["name"] == "NVIDIA H100");
  CHECK(U(device["span_ns"]) == 750);
  CHECK(U(device["busy_ns"]) == 550);
  CHECK(U(device["idle_ns"]) == 200);
  CHECK(device["idle_fraction"].get<double>() == Approx(200.0 / 750.0));
  REQUIRE(device["streams"].size() == 2);
  CHECK(U(device["streams"][0]["busy_ns"]) == 350);
  CHECK(U(device["streams"][0]["kernel_ns"]) == 300);
  CHECK(U(device["streams"][0]["activities"]) == 3);
  CHECK(U(device["streams"][1]["busy_ns"]) == 300);
  const Json& gaps = device["gaps"];
  CHECK(U(gaps["host_bound_ns"]) == 100);
  CHECK(U(gaps["dependency_ns"]) == 100);
  CHECK(U(gaps["host_bound_ns"]) + U(gaps["dependency_ns"]) + U(gaps["unclassified_ns"]) ==
        U(device["idle_ns"]));
  CHECK(U(gaps["tail_ns"]) == 150);
  REQUIRE(gaps["largest"].size() == 2);
  CHECK(U(gaps["largest"][0]["start_ns"]) == 500);
  CHECK(gaps["largest"][0]["class"] == "host_bound");
  CHECK(gaps["largest"][0]["host_range"] == Json({"step"}));
  CHECK(gaps["largest"][1]["class"] == "dependency");
  const Json& step = Pass(process, {"step"});
  CHECK(U(step["device"]["self_ns"]) == 650);
  CHECK(U(step["device"]["busy_ns"]) == 550);
  CHECK(U(process["totals"]["memcpy_ns"]) == 50);
  CheckReconciliation(process);
}

TEST_CASE("pass tree: self and total are exact, and reconcile with unattributed", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Push(0, 1, kNodeStep).Push(1, 1, kNodeForward).Pop(50, 1, kNodeForward);
  message.Push(60, 1, kNodeBackward).Pop(90, 1, kNodeBackward).Pop(100, 1, kNodeStep);
  message.Push(110, 1, kNodeStep).Pop(130, 1, kNodeStep);
  message.Add(MakeLaunch(1, 0, 1, kNodeStep)).Add(MakeKernel(1, 200, 210));
  message.Add(MakeLaunch(2, 2, 1, kNodeForward)).Add(MakeKernel(2, 210, 240));
  message.Add(MakeLaunch(3, 61, 1, kNodeBackward)).Add(MakeKernel(3, 240, 290));
  message.Add(MakeLaunch(4, 95, 9, 0)).Add(MakeKernel(4, 290, 297));  // tid 9 has no range
  wire::Memset set{};
  set.start_ns = 300;
  set.end_ns = 304;
  set.correlation_id = 5;
  message.Add(MakeLaunch(5, 62, 1, kNodeBackward, ApiKind::kMemset)).Add(set);
  message.Add(Bye(400));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();

  const Json process = ProcessReportOf(trace);
  const Json& step = Pass(process, {"step"});
  CHECK(U(step["instances"]) == 2);
  CHECK(U(step["host_ns"]["total"]) == 120);
  CHECK(U(step["host_ns"]["min"]) == 20);
  CHECK(U(step["host_ns"]["median"]) == 20);
  CHECK(U(step["host_ns"]["max"]) == 100);
  // Launch 4 (tid 9, t = 95) inherits step, open on the main thread from 0 to 100.
  CHECK(U(step["attribution"]["direct_ns"]) == 10);
  CHECK(U(step["attribution"]["inherited_ns"]) == 7);
  CHECK(U(step["device"]["self_ns"]) == 17);
  CHECK(U(step["device"]["total_ns"]) == 17 + 30 + 54);
  CHECK(U(Pass(process, {"step", "forward"})["device"]["total_ns"]) == 30);
  CHECK(U(Pass(process, {"step", "backward"})["device"]["self_ns"]) == 54);
  CHECK(U(Pass(process, {"step", "backward"})["device"]["kernels"]) == 1);
  CHECK(process["passes"][0]["children"][0]["name"] == "backward");  // larger total first
  CHECK(U(process["totals"]["memset_ns"]) == 4);
  CheckReconciliation(process);
}

TEST_CASE("unmatched and unclosed ranges are counted, not fatal", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Push(100, 1, kNodeStep).Push(110, 1, kNodeForward);
  message.Pop(120, 1, kNodeOptimizer);  // never opened on tid 1
  message.Pop(130, 1, kNodeStep);       // closes forward with it
  message.Pop(131, 5, kNodeStep);       // empty stack
  message.Push(140, 1, kNodeBackward).Add(Bye(200));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  CHECK(U(process["loss"]["unmatched_pops"]) == 2);
  CHECK(U(process["loss"]["implicitly_closed_ranges"]) == 1);
  CHECK(U(process["loss"]["unclosed_ranges"]) == 1);
  CHECK(U(Pass(process, {"step", "forward"})["host_ns"]["total"]) == 20);
  CHECK(U(Pass(process, {"step", "backward"})["host_ns"]["total"]) == 60);
}

TEST_CASE("an NVTX-only process reports host ranges and null device fields", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble(/*cupti=*/false);
  message.Push(100, 1, kNodeStep).Pop(300, 1, kNodeStep).Add(Bye(400));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  CHECK(process["status"] == "host_only");
  CHECK(process["refusals"].empty());
  CHECK(process["loss"]["lost_span"].is_null());
  CHECK(process["devices"].is_null());
  CHECK(process["families"].is_null());
  CHECK(process["totals"]["kernel_ns"].is_null());
  CHECK(process["coverage"]["attributed_fraction"].is_null());
  CHECK(process["coverage"]["passed"].is_null());
  CHECK(process["loss"]["dropped_records"].is_null());
  const Json& step = Pass(process, {"step"});
  CHECK(U(step["host_ns"]["total"]) == 200);
  CHECK(step["device"].is_null());
}

TEST_CASE("a stream cut mid-step is truncated: the span it may have lost, and no step row",
          "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  for (uint64_t start : {100, 300, 500})
    message.Push(start, 1, kNodeStep).Pop(start + 150, 1, kNodeStep);
  message.Push(700, 1, kNodeStep).Push(720, 1, kNodeForward);  // interrupted here: no Goodbye
  REQUIRE(feed.Send(message).ok());
  trace.Finish(/*closed_ns=*/1000);
  const Json process = ProcessReportOf(trace);
  CHECK(process["status"] == "truncated");
  CHECK(process["goodbye"] == false);
  CHECK(process["loss"]["lost_span"] == Json({{"from_ns", 720}, {"to_ns", 1000}, {"ns", 280}}));
  CHECK(U(process["loss"]["unclosed_ranges"]) == 2);
  const Json& steps = process["steps"];
  CHECK(U(steps["instances"]) == 3);
  CHECK(U(steps["unfinished"]) == 1);
  REQUIRE(steps["rows"].size() == 3);
  CHECK(U(steps["rows"][2]["start_ns"]) == 500);
  // The interrupted step's range is still a pass instance, closed at the last record.
  CHECK(U(Pass(process, {"step"})["instances"]) == 4);
}

TEST_CASE("a CUPTI refusal carries its catalogue code and the shim's cause", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble(/*cupti=*/false);
  message.Str(8, "the subscriber slot is held by nsys").Add(wire::CuptiState{1, 0, 0, 0});
  message.Add(
      wire::Refusal{static_cast<uint32_t>(wire::RefusalCode::kCuptiSubscriberConflict), 39, 8, 0});
  message.Add(Bye(10));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  CHECK(process["status"] == "refused");
  REQUIRE(process["refusals"].size() == 1);
  CHECK(process["refusals"][0]["code"] == "cupti_subscriber_conflict");
  CHECK(process["refusals"][0]["cupti_result"] == 39);
  CHECK_THAT(process["refusals"][0]["cause"].get<std::string>(), Catch::Contains("held by nsys"));
}

TEST_CASE("protocol violations are rejected whole", "[unit][trace]") {
  SECTION("first record is not a Hello") {
    ProcessTrace trace;
    Message message;
    message.Add(wire::Device{0, 0}).Add(MakeHello(1));
    std::vector<uint8_t> bytes = message.Bytes(0);
    CHECK(trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size())).code() ==
          StatusCode::kDataLoss);
    CHECK_FALSE(trace.has_hello());
  }
  SECTION("bad Hello magic or protocol version") {
    wire::Hello bad_magic = MakeHello(1);
    bad_magic.magic[0] = 'X';
    wire::Hello bad_version = MakeHello(1);
    bad_version.protocol_version = 2;
    for (const wire::Hello& hello : {bad_magic, bad_version}) {
      ProcessTrace trace;
      Message message;
      message.Add(hello);
      std::vector<uint8_t> bytes = message.Bytes(0);
      CHECK(trace.ConsumeMessage(bytes.data(), static_cast<uint32_t>(bytes.size())).code() ==
            StatusCode::kDataLoss);
      CHECK_FALSE(trace.has_hello());
    }
  }
  SECTION("a second Hello rejects its message and applies none of it") {
    ProcessTrace trace;
    Feeder feed(trace);
    Message first = Preamble();
    REQUIRE(feed.Send(first).ok());
    Message second;
    second.Add(MakeLaunch(1, 5, 1, kNodeStep)).Add(MakeKernel(1, 10, 20)).Add(MakeHello(2));
    CHECK(feed.Send(second).code() == StatusCode::kDataLoss);
    trace.Finish();
    CHECK(trace.pid() == 100);
    const Json process = ProcessReportOf(trace);
    CHECK(U(process["totals"]["kernels"]) == 0);
    CHECK(U(process["totals"]["launches"]) == 0);
  }
  SECTION("messages after Finish are refused") {
    ProcessTrace trace;
    Feeder feed(trace);
    Message first = Preamble();
    REQUIRE(feed.Send(first).ok());
    trace.Finish();
    Message late;
    late.Add(MakeKernel(1, 10, 20));
    CHECK(feed.Send(late).code() == StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("unknown ids are tolerated and named", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message;
  message.Add(MakeHello(3, -1, 77)).Add(CuptiOk()).Add(MakeNode(20, 21, 22));
  message.Push(1, 1, 20)
      .Push(2, 1, 40)
      .Add(MakeLaunch(1, 3, 1, 40))
      .Add(MakeKernel(1, 10, 20, 0, 55));
  message.Str(9, std::string("bad \xFF utf8")).Add(wire::ThreadName{1, 9}).Add(Bye(30));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  CHECK(process["rank"].is_null());
  CHECK(process["exe"] == "<unknown:77>");
  CHECK(FindPass(process["passes"], {"<unknown:21>", "<unknown:22>"}) != nullptr);
  CHECK(U(Pass(process, {"<unknown:40>"})["device"]["self_ns"]) == 10);
  CHECK(process["families"][0]["family"] == "<unknown:55>");
  CHECK(process["threads"][0]["name"] == "bad \xEF\xBF\xBD utf8");
}

TEST_CASE("kernel names are demangled and normalised into families", "[unit][family]") {
  CHECK(DemangleKernelName("_Z4gemmPfS_") == "gemm(float*, float*)");
  CHECK(DemangleKernelName("plain_name") == "plain_name");
  CHECK(DemangleKernelName("_Znot-valid") == "_Znot-valid");
  // C++23 extended floating-point types, which this libstdc++'s demangler predates: _Float16 is
  // half; bfloat16 is spelled back (ROCm's composable kernels, MI300X trace of ../shared).
  CHECK(DemangleKernelName("_Z1fDF16_") == "f(half)");
  CHECK(DemangleKernelName("_Z1fDF16bPDF16b") == "f(std::bfloat16_t, std::bfloat16_t*)");
  CHECK(DemangleKernelName("_ZN7ck_tile6kentryILi1ENS_3FwdIDF16bfEEEEvv") ==
        "void ck_tile::kentry<1, ck_tile::Fwd<std::bfloat16_t, float> >()");
  CHECK(KernelFamily("gemm(float*, float*)") == "gemm");
  CHECK(KernelFamily(DemangleKernelName("_Z6kernelIfEvPT_")) == "kernel");
  CHECK(KernelFamily(DemangleKernelName("_ZN12_GLOBAL__N_16reduceEv")) == "reduce");
  CHECK(KernelFamily(
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluFunctor<float>, "
            "at::detail::Array<char*, 2> >(int, at::native::GeluFunctor<float>)") ==
        "at::native::vectorized_elementwise_kernel");
  CHECK(KernelFamily("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn");
}

TEST_CASE("families aggregate kernels with shapes and shares", "[unit][family]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Str(20, "_Z6kernelIfEvPT_").Str(21, "_Z6kernelIiEvPT_");
  message.Add(MakeLaunch(1, 1, 1, 0)).Add(MakeKernel(1, 10, 20, 7, kGemm));
  message.Add(MakeLaunch(2, 1, 1, 0)).Add(MakeKernel(2, 20, 50, 7, kGemm));
  wire::Kernel other = MakeKernel(3, 50, 60, 7, 20);
  other.grid[0] = 4;
  message.Add(MakeLaunch(3, 1, 1, 0)).Add(other).Add(MakeKernel(4, 60, 65, 7, 21));
  message.Add(Bye(100));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  const Json& families = process["families"];
  REQUIRE(families.size() == 2);
  CHECK(families[0]["family"] == "gemm");
  CHECK(U(families[0]["kernels"]) == 2);
  CHECK(U(families[0]["total_ns"]) == 40);
  CHECK(U(families[0]["mean_ns"]) == 20);
  CHECK(U(families[0]["min_ns"]) == 10);
  CHECK(U(families[0]["max_ns"]) == 30);
  CHECK(families[0]["share"].get<double>() == Approx(40.0 / 55.0));
  CHECK(families[0]["names"] == Json({"gemm(float*, float*)"}));
  CHECK(families[1]["family"] == "kernel");
  CHECK(families[1]["names"].size() == 2);
  REQUIRE(families[1]["shapes"].size() == 2);
  CHECK(families[1]["shapes"][0]["grid"] == Json({4, 1, 1}));
}

TEST_CASE("start/end ranges and marks are reported beside the stack", "[unit][trace]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message message = Preamble();
  message.Add(wire::RangeStart{10, 77, 1, kStep, 0, 0}).Add(wire::RangeEnd{40, 77, 2, 0});
  message.Add(wire::RangeStart{50, 78, 1, kStep, 0, 0}).Add(wire::RangeEnd{51, 999, 1, 0});
  message.Add(wire::Mark{60, 1, kForward, kOptimizer, 0})
      .Add(wire::Mark{61, 1, kForward, kOptimizer, 0});
  message.Add(Bye(100));
  REQUIRE(feed.Send(message).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  REQUIRE(process["ranges"].size() == 1);
  CHECK(U(process["ranges"][0]["instances"]) == 2);  // the second closed at Finish (t = 100)
  CHECK(U(process["ranges"][0]["host_ns"]["total"]) == 30 + 50);
  CHECK(U(process["loss"]["unmatched_range_ends"]) == 1);
  REQUIRE(process["marks"].size() == 1);
  CHECK(process["marks"][0]["domain"] == "optimizer");
  CHECK(U(process["marks"][0]["count"]) == 2);
  CHECK(process["passes"].empty());
}

}  // namespace
}  // namespace gpuattr::collector::testing

namespace gpuattr::collector::testing {
namespace {

// The FLOP counter's value marks through the wire (docs/attribution.md §FLOPs): each goes to the
// pass its thread was in and to the step open then, folded once the watermark passed it (a 1 µs
// window here, so most fold while streaming) or at the end.
TEST_CASE("value marks count FLOPs on their pass and step, streamed or at the end",
          "[unit][trace]") {
  enum : uint32_t { kFlops = 20, kBytes = 21, kMm = 22 };
  for (const uint64_t window : {uint64_t{1000}, AnalysisOptions().reorder_window_ns}) {
    AnalysisOptions options;
    options.reorder_window_ns = window;
    ProcessTrace trace(options);
    Feeder feed(trace);
    Message first = Preamble(/*cupti=*/false);
    first.Str(kFlops, "gpuattr.flops").Str(kBytes, "gpuattr.bytes").Str(kMm, "aten::mm float32");
    for (uint64_t step = 0; step < 2; ++step) {
      const uint64_t t = 10'000 * (step + 1);
      first.Push(t, 1, kNodeStep).Push(t + 100, 1, kNodeForward);
      first.Add(wire::ValueMark{t + 200, 1, kMm, kFlops, kNodeForward, 1000 * (step + 1)});
      first.Add(wire::ValueMark{t + 200, 1, kMm, kBytes, kNodeForward, 100});
      first.Pop(t + 300, 1, kNodeForward);
      // Another thread's backward, while the step is open.
      first.Add(wire::ValueMark{t + 400, 2, kMm, kFlops, kNodeBackward, 2000});
      first.Pop(t + 900, 1, kNodeStep);
    }
    REQUIRE(feed.Send(first).ok());
    Message last;
    last.Add(Bye(50'000));
    REQUIRE(feed.Send(last).ok());
    trace.Finish();

    const Json process = ProcessReportOf(trace);
    INFO("window " << window);
    CHECK(process["work"]["flops"] == 3000 + 4000);
    const Json& forward = Pass(process, {"step", "forward"});
    CHECK(forward["work"]["flops"] == 3000);
    CHECK(forward["work"]["bytes_estimate"] == 200);
    CHECK(Pass(process, {"step", "backward"})["work"]["flops"] == 4000);
    CHECK(Pass(process, {"step"})["work"]["flops"] == 0);
    CHECK(Pass(process, {"step"})["work"]["flops_total"] == 7000);
    const Json& rows = process["steps"]["rows"];
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["flops"] == 3000);
    CHECK(rows[1]["flops"] == 4000);
    CHECK(rows[1]["bytes_estimate"] == 100);
    CHECK(process["steps"]["summary"]["flops"] == 3000);  // the lower median
  }
}

}  // namespace
}  // namespace gpuattr::collector::testing
