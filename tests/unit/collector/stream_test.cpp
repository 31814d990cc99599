// The streaming analysis (docs/architecture.md §Streaming analysis): a ProcessTrace releases
// activities through its reorder window while messages arrive. Each test feeds the same messages
// to a streaming trace with a short window and to a deferred one (a window holding the whole
// trace: everything analysed at the end), and checks the report is the same where the design
// says it must be, and names what the window changed where it says it may.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>

#include "report_test_util.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

using wire::ApiKind;

enum : uint32_t { kExe = 1, kStep = 2, kForward = 3, kGemm = 5, kWarmup = 6 };
enum : uint32_t { kNodeStep = 10, kNodeForward = 11, kNodeWarmup = 12 };

constexpr uint64_t kWindow = 1000;  // ns of trace time

Message Preamble() {
  Message message;
  message.Add(MakeHello(100, 0, kExe)).Str(kExe, "/usr/bin/python3");
  message.Str(kStep, "step").Str(kForward, "forward").Str(kGemm, "_Z4gemmPfS_");
  message.Str(kWarmup, "warmup");
  message.Add(MakeNode(kNodeStep, 0, kStep)).Add(MakeNode(kNodeForward, kNodeStep, kForward));
  message.Add(MakeNode(kNodeWarmup, 0, kWarmup));
  message.Add(CuptiOk());
  return message;
}

wire::Goodbye Bye(uint64_t ts) {
  return {ts, static_cast<uint32_t>(wire::GoodbyeReason::kExit), 0};
}

uint64_t U(const Json& value) { return value.get<uint64_t>(); }

AnalysisOptions Streaming(uint64_t window = kWindow) {
  AnalysisOptions options;
  options.reorder_window_ns = window;
  return options;
}

// `options` with a reorder window holding the whole trace: nothing is released before the end,
// the analysis every streamed one must equal.
AnalysisOptions WholeTrace(AnalysisOptions options) {
  options.reorder_window_ns = AnalysisOptions::kWholeTraceWindow;
  return options;
}

// Feeds `messages` to a trace and finishes it; `after_each` sees the trace after every message.
void FeedAll(ProcessTrace& trace, std::vector<Message>& messages,
             const std::function<void(const ProcessTrace&)>& after_each = {}) {
  Feeder feed(trace);
  for (Message& message : messages) {
    REQUIRE(feed.Send(message).ok());
    if (after_each) after_each(trace);
  }
  trace.Finish();
}

// The same messages, streamed and deferred: the two process reports.
std::pair<Json, Json> BothWays(const std::function<std::vector<Message>()>& make,
                               AnalysisOptions options = Streaming()) {
  ProcessTrace streamed(options);
  std::vector<Message> first = make();
  FeedAll(streamed, first);
  ProcessTrace deferred(WholeTrace(options));
  std::vector<Message> second = make();
  FeedAll(deferred, second);
  return {ProcessReportOf(streamed, options), ProcessReportOf(deferred, options)};
}

TEST_CASE("streaming: a kernel arriving before its launch joins across messages",
          "[unit][stream]") {
  auto make = [] {
    std::vector<Message> messages(5);
    messages[0] = Preamble();
    messages[0].Push(100, 1, kNodeStep).Push(110, 1, kNodeForward);
    // The device message comes first; its launches follow in the next host message.
    messages[1].Add(MakeKernel(1, 400, 500, 7, kGemm)).Add(MakeKernel(2, 520, 600, 7, kGemm));
    messages[2].Add(MakeLaunch(1, 200, 1, kNodeForward)).Add(wire::ApiExit{210, 1, 1});
    messages[2].Add(MakeLaunch(2, 300, 1, kNodeForward)).Add(wire::ApiExit{305, 2, 1});
    messages[2].Pop(700, 1, kNodeForward).Pop(710, 1, kNodeStep);
    // Later traffic moves the watermark past both kernels while the stream still runs.
    messages[3].Push(5000, 1, kNodeStep).Add(MakeLaunch(3, 5010, 1, kNodeStep));
    messages[3].Add(MakeKernel(3, 5100, 5200, 7, kGemm)).Pop(5300, 1, kNodeStep);
    messages[4].Add(Bye(9000));
    return messages;
  };
  const auto [streamed, deferred] = BothWays(make);
  CHECK(streamed == deferred);
  CHECK(U(streamed["loss"]["orphan_activities"]) == 0);
  CHECK(U(streamed["loss"]["unmatched_launches"]) == 0);
  CHECK(U(Pass(streamed, {"step", "forward"})["device"]["self_ns"]) == 180);
  CHECK(U(streamed["steps"]["instances"]) == 2);
}

TEST_CASE(
    "streaming: an unmatched launch expires behind the window, and its late kernel is an orphan",
    "[unit][stream]") {
  ProcessTrace trace(Streaming());
  std::vector<Message> messages(4);
  messages[0] = Preamble();
  messages[0].Push(50, 1, kNodeStep).Add(MakeLaunch(1, 100, 1, kNodeStep));
  messages[1].Add(MakeLaunch(2, 3000, 1, kNodeStep)).Add(MakeKernel(2, 3100, 3200, 7, kGemm));
  messages[1].Add(MakeLaunch(3, 6000, 1, kNodeStep)).Add(MakeKernel(3, 6100, 6200, 7, kGemm));
  // Launch 1's kernel arrives long after the window passed the launch.
  messages[2].Add(MakeKernel(1, 8000, 8100, 7, kGemm)).Pop(9000, 1, kNodeStep);
  messages[3].Add(Bye(12000));
  std::vector<size_t> in_flight;
  FeedAll(trace, messages, [&](const ProcessTrace& t) { in_flight.push_back(t.in_flight()); });
  const Json process = ProcessReportOf(trace, Streaming());
  CHECK(U(process["loss"]["expired_launches"]) == 1);
  CHECK(U(process["loss"]["unmatched_launches"]) == 1);
  CHECK(U(process["loss"]["orphan_activities"]) == 1);
  CHECK(UnattributedNs(process, "launch_not_seen") == 100);
  CHECK(U(process["totals"]["kernels"]) == 3);
  // After the second message the window had released kernel 2 and dropped launches 1 and 2.
  REQUIRE(in_flight.size() == 4);
  CHECK(in_flight[1] == 2);  // launch 3 and kernel 3, still inside the window
  CheckReconciliation(process);
}

TEST_CASE("streaming: an activity arriving below the released ones is late but counted",
          "[unit][stream]") {
  ProcessTrace trace(Streaming());
  std::vector<Message> messages(4);
  messages[0] = Preamble();
  messages[0].Push(50, 1, kNodeStep);
  messages[0].Add(MakeLaunch(1, 900, 1, kNodeStep)).Add(MakeLaunch(2, 950, 1, kNodeStep));
  messages[0].Add(MakeKernel(1, 1000, 1500, 7, kGemm));
  // The watermark moves to 1300: kernel 1 is released.
  messages[1].Add(MakeLaunch(3, 2200, 1, kNodeStep)).Add(MakeKernel(3, 2200, 2300, 7, kGemm));
  // Kernel 2 started before kernel 1, but arrives after the window released kernel 1.
  messages[2].Add(MakeKernel(2, 950, 1300, 7, kGemm)).Pop(5000, 1, kNodeStep);
  messages[3].Add(Bye(6000));
  FeedAll(trace, messages);
  const Json process = ProcessReportOf(trace, Streaming());
  CHECK(U(process["loss"]["late_activities"]) == 1);
  CHECK(U(process["totals"]["kernels"]) == 3);
  CHECK(U(process["totals"]["kernel_ns"]) == 950);
  CHECK(U(process["loss"]["orphan_activities"]) == 0);
  CHECK(U(Pass(process, {"step"})["device"]["self_ns"]) == 950);
  // The late kernel stays out of the union: [1000, 1500) + [2200, 2300), short of the true
  // union by the 50 ns it ran before kernel 1 (at most its duration, as documented).
  CHECK(U(process["devices"][0]["busy_ns"]) == 600);
  CheckReconciliation(process);
}

TEST_CASE("streaming: a graph launch joins N activities arriving in different messages",
          "[unit][stream]") {
  auto make = [] {
    std::vector<Message> messages(5);
    messages[0] = Preamble();
    messages[0].Push(10, 1, kNodeForward).Add(MakeGraphNode(500, 0, kNodeForward));
    messages[0].Add(MakeGraphNode(501, 0, kNodeForward)).Pop(20, 1, kNodeForward);
    messages[0].Push(100, 1, kNodeStep).Add(MakeLaunch(7, 200, 1, kNodeStep, ApiKind::kGraph));
    messages[0].Add(wire::ApiExit{230, 7, 1});
    messages[1].Add(MakeKernel(7, 300, 400, 7, kGemm, 500));
    messages[2].Add(MakeKernel(7, 450, 500, 7, kGemm, 501));
    messages[3].Add(MakeKernel(7, 900, 1000, 7, kGemm, 500)).Pop(1100, 1, kNodeStep);
    messages[3].Add(MakeLaunch(8, 3000, 1, 0)).Add(MakeKernel(8, 3100, 3150, 7, kGemm));
    messages[4].Add(Bye(6000));
    return messages;
  };
  const auto [streamed, deferred] = BothWays(make);
  CHECK(streamed == deferred);
  CHECK(U(streamed["loss"]["orphan_activities"]) == 0);
  CHECK(U(streamed["loss"]["unmatched_launches"]) == 0);
  const Json& forward = Pass(streamed, {"step", "forward"});
  CHECK(U(forward["attribution"]["captured_ns"]) == 250);
  // One api sample for the graph launch, however many of its kernels ran (launch 8 has no
  // ApiExit), and a latency sample per kernel.
  CHECK(U(streamed["families"][0]["launch"]["api_ns"]["count"]) == 1);
  CHECK(U(streamed["families"][0]["launch"]["latency_ns"]["count"]) == 4);
}

TEST_CASE("streaming: the step range is chosen at the end, its rows filled while streaming",
          "[unit][stream]") {
  auto make = [] {
    std::vector<Message> messages;
    messages.push_back(Preamble());
    // One warm-up range (a single instance: not a step), then three steps, each a message;
    // every step's kernels are released by the window before the next step arrives.
    messages.back().Push(10, 1, kNodeWarmup).Add(MakeLaunch(1, 20, 1, kNodeWarmup));
    messages.back().Add(MakeKernel(1, 30, 80, 7, kGemm)).Pop(90, 1, kNodeWarmup);
    uint32_t correlation = 2;
    for (uint64_t step = 0; step < 3; ++step) {
      Message message;
      const uint64_t base = 2000 * (step + 1);
      message.Push(base, 1, kNodeStep).Push(base + 10, 1, kNodeForward);
      for (uint64_t k = 0; k < 3; ++k) {
        message.Add(MakeLaunch(correlation, base + 20 + 10 * k, 1, kNodeForward));
        message.Add(MakeKernel(correlation, base + 100 + 200 * k, base + 250 + 200 * k, 7, kGemm));
        ++correlation;
      }
      message.Pop(base + 300, 1, kNodeForward);
      // Another thread's launch without a range: unattributed (no inheritance), in the step.
      message.Add(MakeLaunch(correlation, base + 310, 2, 0));
      message.Add(MakeKernel(correlation, base + 700, base + 800, 7, kGemm));
      ++correlation;
      message.Pop(base + 900, 1, kNodeStep);
      messages.push_back(std::move(message));
    }
    Message bye;
    bye.Add(Bye(10000));
    messages.push_back(std::move(bye));
    return messages;
  };
  AnalysisOptions options = Streaming();
  options.skip_steps = 1;
  options.inherit = false;
  const auto [streamed, deferred] = BothWays(make, options);
  CHECK(streamed == deferred);
  REQUIRE(streamed["steps"].is_object());
  CHECK(streamed["steps"]["range"] == "step");
  CHECK(U(streamed["steps"]["instances"]) == 3);
  REQUIRE(streamed["steps"]["rows"].size() == 2);
  const Json& row = streamed["steps"]["rows"][0];
  CHECK(U(row["index"]) == 1);
  CHECK(U(row["forward_ns"]) == 450);
  CHECK(U(row["unattributed_ns"]) == 100);
  // Busy: [100, 250) [300, 450) [500, 650) [700, 800) after the step's start.
  CHECK(U(row["busy_ns"]) == 550);
}

// `steps` warm-up ranges (not step-like) and `steps` step ranges, one of each per message, each
// with a kernel: warmup [b, b+100] launches at b+10 (kernel b+20..b+40); step [b+200, b+900]
// holds forward [b+300, b+600] launching at b+310 (kernel b+400..b+500) and launches itself at
// b+700 (kernel b+750..b+800).
std::vector<Message> WarmupsAndSteps(uint64_t warmups, uint64_t steps) {
  std::vector<Message> messages;
  messages.push_back(Preamble());
  uint32_t correlation = 1;
  auto launch = [&](Message& message, uint64_t at, uint32_t node, uint64_t start, uint64_t end) {
    message.Add(MakeLaunch(correlation, at, 1, node));
    message.Add(MakeKernel(correlation++, start, end, 7, kGemm));
  };
  for (uint64_t i = 0; i < std::max(warmups, steps); ++i) {
    Message message;
    const uint64_t b = 10000 * (i + 1);
    if (i < warmups) {
      message.Push(b, 1, kNodeWarmup);
      launch(message, b + 10, kNodeWarmup, b + 20, b + 40);
      message.Pop(b + 100, 1, kNodeWarmup);
    }
    if (i < steps) {
      message.Push(b + 200, 1, kNodeStep).Push(b + 300, 1, kNodeForward);
      launch(message, b + 310, kNodeForward, b + 400, b + 500);
      message.Pop(b + 600, 1, kNodeForward);
      launch(message, b + 700, kNodeStep, b + 750, b + 800);
      message.Pop(b + 900, 1, kNodeStep);
    }
    messages.push_back(std::move(message));
  }
  Message bye;
  bye.Add(Bye(10000 * (std::max(warmups, steps) + 2)));
  messages.push_back(std::move(bye));
  return messages;
}

TEST_CASE("streaming: auto-detection stops keeping names that can no longer be the step range",
          "[unit][stream]") {
  // Each message's activities are released by the next one, so instances are registered while
  // the stream runs. Whatever is no longer kept, the result must be the deferred analysis's.
  SECTION("two closed step instances settle it: warmup and the nested forward are dropped") {
    const auto [streamed, deferred] = BothWays([] { return WarmupsAndSteps(6, 6); });
    CHECK(streamed == deferred);
    REQUIRE(streamed["steps"].is_object());
    CHECK(streamed["steps"]["range"] == "step");
    REQUIRE(streamed["steps"]["rows"].size() == 6);
    for (const Json& row : streamed["steps"]["rows"]) {
      CHECK(U(row["forward_ns"]) == 100);
      CHECK(U(row["other_ns"]) == 50);
      CHECK(U(row["busy_ns"]) == 150);
    }
  }
  SECTION("one step instance never settles it: the warm-up range wins, rows complete") {
    const auto [streamed, deferred] = BothWays([] { return WarmupsAndSteps(6, 1); });
    CHECK(streamed == deferred);
    REQUIRE(streamed["steps"].is_object());
    CHECK(streamed["steps"]["range"] == "warmup");
    REQUIRE(streamed["steps"]["rows"].size() == 6);
    for (const Json& row : streamed["steps"]["rows"]) CHECK(U(row["other_ns"]) == 20);
  }
  SECTION("--step keeps only its own name's instances, at any depth") {
    AnalysisOptions options = Streaming();
    options.step = "forward";
    const auto [streamed, deferred] = BothWays([] { return WarmupsAndSteps(6, 6); }, options);
    CHECK(streamed == deferred);
    REQUIRE(streamed["steps"]["rows"].size() == 6);
    CHECK(U(streamed["steps"]["rows"][5]["forward_ns"]) == 100);
  }
}

TEST_CASE("streaming: closed ranges and pushes are dropped once folded", "[unit][stream]") {
  // 150 ranges over 50 messages: each message's activities, released by the next one, fold
  // every range closed so far, so no more than one message's ranges and pushes are ever held.
  ProcessTrace streamed(Streaming());
  std::vector<Message> messages = WarmupsAndSteps(50, 50);
  std::vector<size_t> held;
  FeedAll(streamed, messages,
          [&](const ProcessTrace& t) { held.push_back(t.host_records_held()); });
  REQUIRE(held.size() == 52);
  CHECK(*std::max_element(held.begin(), held.end()) <= 6);
  ProcessTrace deferred(WholeTrace(Streaming()));
  std::vector<Message> again = WarmupsAndSteps(50, 50);
  FeedAll(deferred, again);
  CHECK(deferred.host_records_held() == 300);  // kept: nothing is folded before the end
  const Json process = ProcessReportOf(streamed, Streaming());
  CHECK(process == ProcessReportOf(deferred, Streaming()));
  CHECK(U(Pass(process, {"step", "forward"})["instances"]) == 50);
  CHECK(U(process["steps"]["instances"]) == 50);
}

TEST_CASE("streaming: state stays bounded by the window over 200,000 kernels", "[unit][stream]") {
  constexpr uint64_t kKernels = 200000;
  constexpr uint64_t kPerMessage = 100;
  ProcessTrace trace(Streaming(10000));
  Feeder feed(trace);
  Message preamble = Preamble();
  preamble.Push(1, 1, kNodeStep);
  REQUIRE(feed.Send(preamble).ok());
  size_t most_in_flight = 0;
  for (uint64_t first = 0; first < kKernels; first += kPerMessage) {
    Message message;
    for (uint64_t k = first; k < first + kPerMessage; ++k) {
      const auto correlation = static_cast<uint32_t>(k + 1);
      const uint64_t launch = 10 + 100 * k;
      message.Add(MakeLaunch(correlation, launch, 1, kNodeStep));
      message.Add(MakeKernel(correlation, launch + 50, launch + 90, 7, kGemm));
    }
    REQUIRE(feed.Send(message).ok());
    most_in_flight = std::max(most_in_flight, trace.in_flight());
  }
  Message last;
  last.Pop(100 * kKernels + 100, 1, kNodeStep).Add(Bye(100 * kKernels + 200));
  REQUIRE(feed.Send(last).ok());
  trace.Finish();
  // A 10 µs window holds about 100 kernels; a message adds 100 more before the release.
  CHECK(most_in_flight <= 3 * kPerMessage);
  const Json process = ProcessReportOf(trace, Streaming(10000));
  CHECK(U(process["totals"]["kernels"]) == kKernels);
  CHECK(U(process["loss"]["orphan_activities"]) == 0);
  CHECK(U(process["loss"]["unmatched_launches"]) == 0);
  CHECK(U(process["loss"]["late_activities"]) == 0);
  CHECK(U(process["devices"][0]["busy_ns"]) == 40 * kKernels);
  CHECK(U(process["devices"][0]["gaps"]["count"]) == kKernels - 1);
  const Json& latency = process["families"][0]["launch"]["latency_ns"];
  CHECK(U(latency["count"]) == kKernels);
  CHECK(U(latency["median"]) == 50);
  CHECK(latency["median_exact"] == false);
}

}  // namespace
}  // namespace gpuattr::collector::testing
