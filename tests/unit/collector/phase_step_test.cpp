// Phases, coverage by phase, steps, launch statistics and the per-activity export, computed by
// the analysis from wire records (docs/attribution.md §Phases, §Coverage, §Steps, §Kernel
// families, §Per-activity export). Every expected number is worked out by hand in the comments.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <memory>

#include "activity_line_collector.h"
#include "analysis/step_fold.h"
#include "report/report_writer.h"
#include "report_test_util.h"
#include "test_files.h"
#include "wire_test_util.h"

namespace gpuattr::collector::testing {
namespace {

enum : uint32_t {
  kExe = 1,
  kStep = 2,
  kForward = 3,
  kBackward = 4,
  kGemm = 5,
  kOptimizer = 6,
  kLoss = 7,
  kWorker = 8,
  kProfilerStep1 = 9,
  kProfilerStep2 = 10,
};
enum : uint32_t {
  kNodeStep = 10,
  kNodeForward = 11,
  kNodeBackward = 12,
  kNodeRecompute = 13,  // step/backward/forward
  kNodeLoss = 14,
  kNodeOptimizer = 15,
  kNodeProfiler1 = 16,
  kNodeProfiler2 = 17,
};

uint64_t U(const Json& value) { return value.get<uint64_t>(); }

// Two steps on the main thread (tid 1); tid 2 is an autograd-like worker with no ranges.
//
// step 0 [100, 500]: forward c1 -> 200-300 (100); loss c2 -> 300-320 (20);
//   backward { forward(recompute) c3 -> 320-360 (40); tid 2 c4 @155 -> 400-450 (50, inherits
//   step/backward); c5 -> 450-470 (20) }; optimizer c6 -> 470-480 (10); step c7 memcpy 480-490.
// step 1 [600, 800]: forward c8 -> 620-700 (80); step c9 @690 -> 780-850 (70, crosses the end);
//   graph launch c11 @705 of a node whose creation was never seen -> 850-860 (10, falls back
//   to its launch: step, direct).
// After the steps: c12 @900 on tid 1 with no range -> 900-905 (5, no_open_range).
void FeedTrainingTrace(ProcessTrace& trace);

// The training trace, analysed with `options`.
std::unique_ptr<ProcessTrace> TrainingTrace(AnalysisOptions options = {}) {
  auto trace = std::make_unique<ProcessTrace>(std::move(options));
  FeedTrainingTrace(*trace);
  return trace;
}

void FeedTrainingTrace(ProcessTrace& trace) {
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(100, 0, kExe)).Str(kExe, "/usr/bin/python3").Add(CuptiOk());
  m.Str(kStep, "step").Str(kForward, "forward").Str(kBackward, "backward");
  m.Str(kGemm, "_Z4gemmPfS_").Str(kOptimizer, "optimizer").Str(kLoss, "loss");
  m.Str(kWorker, "pt_autograd_0").Add(wire::ThreadName{2, kWorker});
  m.Add(MakeNode(kNodeStep, 0, kStep)).Add(MakeNode(kNodeForward, kNodeStep, kForward));
  m.Add(MakeNode(kNodeBackward, kNodeStep, kBackward));
  m.Add(MakeNode(kNodeRecompute, kNodeBackward, kForward));
  m.Add(MakeNode(kNodeLoss, kNodeStep, kLoss)).Add(MakeNode(kNodeOptimizer, kNodeStep, kOptimizer));
  m.Push(100, 1, kNodeStep).Push(110, 1, kNodeForward).Add(MakeLaunch(1, 115, 1, kNodeForward));
  m.Pop(120, 1, kNodeForward).Push(125, 1, kNodeLoss).Add(MakeLaunch(2, 126, 1, kNodeLoss));
  m.Pop(130, 1, kNodeLoss).Push(140, 1, kNodeBackward).Push(145, 1, kNodeRecompute);
  m.Add(MakeLaunch(3, 146, 1, kNodeRecompute)).Pop(150, 1, kNodeRecompute);
  m.Add(MakeLaunch(4, 155, 2, 0)).Add(MakeLaunch(5, 160, 1, kNodeBackward));
  m.Pop(170, 1, kNodeBackward).Push(175, 1, kNodeOptimizer);
  m.Add(MakeLaunch(6, 176, 1, kNodeOptimizer)).Pop(180, 1, kNodeOptimizer);
  m.Add(MakeLaunch(7, 185, 1, kNodeStep, wire::ApiKind::kMemcpy)).Pop(500, 1, kNodeStep);
  m.Add(MakeKernel(1, 200, 300, 7, kGemm)).Add(MakeKernel(2, 300, 320, 7, kGemm));
  m.Add(MakeKernel(3, 320, 360, 7, kGemm)).Add(MakeKernel(4, 400, 450, 8, kGemm));
  m.Add(MakeKernel(5, 450, 470, 7, kGemm)).Add(MakeKernel(6, 470, 480, 7, kGemm));
  m.Add(MakeMemcpy(7, 480, 490, 7));
  m.Push(600, 1, kNodeStep).Push(610, 1, kNodeForward).Add(MakeLaunch(8, 611, 1, kNodeForward));
  m.Pop(650, 1, kNodeForward).Add(MakeLaunch(9, 690, 1, kNodeStep));
  m.Add(MakeLaunch(11, 705, 1, kNodeStep, wire::ApiKind::kGraph)).Pop(800, 1, kNodeStep);
  m.Add(MakeKernel(8, 620, 700, 7, kGemm)).Add(MakeKernel(9, 780, 850, 7, kGemm));
  m.Add(MakeKernel(11, 850, 860, 7, kGemm, 999));
  m.Add(MakeLaunch(12, 900, 1, 0)).Add(MakeKernel(12, 900, 905, 7, kGemm));
  m.Add(wire::Goodbye{1000, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
}

TEST_CASE("phases sum the attributed device time by the phase of each path", "[unit][phases]") {
  ProcessTrace trace;
  FeedTrainingTrace(trace);
  const Json process = ProcessReportOf(trace);
  const Json& phases = process["phases"];
  CHECK(U(phases["forward_ns"]) == 100 + 80);
  CHECK(U(phases["loss_ns"]) == 20);
  CHECK(U(phases["recompute_ns"]) == 40);      // forward nested inside backward
  CHECK(U(phases["backward_ns"]) == 50 + 20);  // the worker's kernel inherits step/backward
  CHECK(U(phases["optimizer_ns"]) == 10);
  CHECK(U(phases["other_ns"]) == 10 + 70 + 10);  // the memcpy, c9 and c11, on `step` itself
  CHECK(phases["recompute_fraction"].get<double>() == Approx(40.0 / 180.0));
  uint64_t sum = 0;
  for (const char* key : {"forward_ns", "backward_ns", "recompute_ns", "optimizer_ns", "loss_ns",
                          "communication_ns", "other_ns"}) {
    sum += U(phases[key]);
  }
  const Json& totals = process["totals"];
  uint64_t unattributed = 0;
  for (const Json& entry : process["coverage"]["unattributed"]) unattributed += U(entry["ns"]);
  CHECK(unattributed == 5);
  CHECK(sum + unattributed == U(totals["kernel_ns"]) + U(totals["memcpy_ns"]));
  CheckReconciliation(process);

  CHECK(Pass(process, {"step"})["phase"].is_null());
  CHECK(Pass(process, {"step", "forward"})["phase"] == "forward");
  CHECK(Pass(process, {"step", "backward"})["phase"] == "backward");
  CHECK(Pass(process, {"step", "backward", "forward"})["phase"] == "recompute");
  CHECK(Pass(process, {"step", "loss"})["phase"] == "loss");
  CHECK(Pass(process, {"step", "optimizer"})["phase"] == "optimizer");
}

TEST_CASE("collective kernels are communication wherever they were launched", "[unit][phases]") {
  // One step: backward launches a gemm and, from the reducer's thread (no range, inherits
  // step/backward), an NCCL all-reduce; then an all-reduce inside an nccl:all_reduce range and
  // one launched with no range open anywhere.
  enum : uint32_t { kAllReduce = 20, kNcclRange = 21, kNodeNccl = 30 };
  AnalysisOptions options;
  options.step = "step";
  ProcessTrace trace(std::move(options));
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(100, 0, kExe)).Str(kExe, "/usr/bin/python3").Add(CuptiOk());
  m.Str(kStep, "step").Str(kBackward, "backward").Str(kGemm, "_Z4gemmPfS_");
  m.Str(kAllReduce, "ncclDevKernel_AllReduce_Sum_f32_RING_LL").Str(kNcclRange, "nccl:all_reduce");
  m.Add(MakeNode(kNodeStep, 0, kStep)).Add(MakeNode(kNodeBackward, kNodeStep, kBackward));
  m.Add(MakeNode(kNodeNccl, 0, kNcclRange));
  m.Push(100, 1, kNodeStep).Push(110, 1, kNodeBackward).Add(MakeLaunch(1, 115, 1, kNodeBackward));
  m.Add(MakeLaunch(2, 120, 2, 0)).Pop(200, 1, kNodeBackward).Pop(210, 1, kNodeStep);
  m.Push(300, 2, kNodeNccl).Add(MakeLaunch(3, 305, 2, kNodeNccl)).Pop(310, 2, kNodeNccl);
  m.Add(MakeLaunch(4, 400, 2, 0));
  m.Add(MakeKernel(1, 130, 150, 7, kGemm)).Add(MakeKernel(2, 140, 190, 8, kAllReduce));
  m.Add(MakeKernel(3, 320, 330, 8, kAllReduce)).Add(MakeKernel(4, 410, 414, 8, kAllReduce));
  m.Add(wire::Goodbye{1000, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  const Json& phases = process["phases"];
  CHECK(U(phases["backward_ns"]) == 20);
  CHECK(U(phases["communication_ns"]) == 50 + 10);
  CHECK(U(phases["other_ns"]) == 0);
  // Unattributed collectives stay unattributed: a phase term holds attributed time only.
  CHECK(U(process["coverage"]["unattributed"][0]["ns"]) == 4);
  CHECK(Pass(process, {"nccl:all_reduce"})["phase"] == "communication");
  CHECK(Pass(process, {"step", "backward"})["phase"] == "backward");
  const Json& row = process["steps"]["rows"][0];
  CHECK(U(row["backward_ns"]) == 20);
  CHECK(U(row["communication_ns"]) == 50);
}

TEST_CASE("coverage by phase counts unattributed kernels by the main thread's phase",
          "[unit][phases]") {
  SECTION("with inheritance every phase is fully covered") {
    const Json by_phase = ProcessReportOf(*TrainingTrace())["coverage"]["by_phase"];
    for (const char* phase : {"forward", "backward", "recompute", "optimizer", "loss"}) {
      INFO(phase);
      CHECK(by_phase[phase] == 1.0);
    }
  }
  SECTION("without it the worker's 50 ns count against backward") {
    AnalysisOptions options;
    options.inherit = false;
    const Json process = ProcessReportOf(*TrainingTrace(options), options);
    const Json& by_phase = process["coverage"]["by_phase"];
    CHECK(by_phase["backward"].get<double>() == Approx(20.0 / 70.0));
    CHECK(by_phase["forward"] == 1.0);
    CHECK(U(process["phases"]["backward_ns"]) == 20);
    CHECK(process["coverage"]["attributed_fraction"].get<double>() ==
          Approx((405.0 - 50.0 - 5.0) / 405.0));  // kernels only
    CheckReconciliation(process);
  }
  SECTION("a phase with no kernel time has a null fraction") {
    AnalysisOptions options;
    options.phase_rules = std::make_shared<const PhaseRules>(
        PhaseRules::Parse(R"({"phases": {"forward": ["forward"]}})", "test").value());
    const Json process = ProcessReportOf(*TrainingTrace(options), options);
    CHECK(process["coverage"]["by_phase"]["backward"].is_null());
    CHECK(process["coverage"]["by_phase"]["forward"] == 1.0);
    // Without backward patterns the nested forward is plain forward.
    CHECK(U(process["phases"]["forward_ns"]) == 100 + 80 + 40);
    CHECK(process["phases"]["recompute_ns"] == 0);
  }
  SECTION("the summary merges the numerators and denominators") {
    AnalysisOptions options;
    options.inherit = false;
    const Json report = ReportFor({TrainingTrace(options).get()}, options);
    CHECK(report["summary"]["coverage"]["by_phase"]["backward"].get<double>() ==
          Approx(20.0 / 70.0));
  }
}

TEST_CASE("steps: auto-detected rows with the measured terms", "[unit][steps]") {
  ProcessTrace trace;
  FeedTrainingTrace(trace);
  const Json steps = ProcessReportOf(trace)["steps"];
  REQUIRE(steps.is_object());
  CHECK(steps["range"] == "step");
  CHECK(steps["detected"] == true);
  CHECK(steps["instances"] == 2);
  CHECK(steps["skipped"] == 0);
  REQUIRE(steps["rows"].size() == 2);
  const Json& row0 = steps["rows"][0];
  CHECK(row0["index"] == 0);
  CHECK(row0["name"] == "step");
  CHECK(row0["start_ns"] == 100);
  CHECK(row0["end_ns"] == 500);
  CHECK(row0["host_ns"] == 400);
  CHECK(row0["forward_ns"] == 100);
  CHECK(row0["loss_ns"] == 20);
  CHECK(row0["recompute_ns"] == 40);
  CHECK(row0["backward_ns"] == 70);
  CHECK(row0["optimizer_ns"] == 10);
  CHECK(row0["other_ns"] == 10);
  CHECK(row0["unattributed_ns"] == 0);
  CHECK(row0["busy_ns"] == 160 + 90);  // 200-360 and 400-490
  CHECK(row0["gaps_ns"] == 400 - 250);
  const Json& row1 = steps["rows"][1];
  CHECK(row1["index"] == 1);
  CHECK(row1["host_ns"] == 200);
  CHECK(row1["forward_ns"] == 80);
  // c9 (70) is launched inside and runs past the end: all of it counts; c11 (10) falls back to
  // its graph launch's step.
  CHECK(row1["other_ns"] == 70 + 10);
  CHECK(row1["backward_ns"] == 0);
  CHECK(row1["unattributed_ns"] == 0);
  CHECK(row1["busy_ns"] == 80 + 20);  // 620-700 and 780-800 (busy is clipped to the step)
  CHECK(row1["gaps_ns"] == 100);
  const Json& summary = steps["summary"];  // lower medians of two rows: the smaller
  CHECK(summary["host_ns"] == 200);
  CHECK(summary["forward_ns"] == 80);
  CHECK(summary["other_ns"] == 10);
  CHECK(summary["busy_ns"] == 100);
  CHECK(summary["gaps_ns"] == 100);
  CHECK(summary["unattributed_ns"] == 0);
}

TEST_CASE("a report with phases, steps and launch statistics validates", "[unit][steps]") {
  ProcessTrace trace;
  FeedTrainingTrace(trace);
  const Json report = ReportFor({&trace});
  REQUIRE(report["processes"][0]["steps"].is_object());
  test_support::TempDir dir;
  const std::string path = dir.File("report.json");
  REQUIRE(WriteReportAtomically(Report{report, {}}, path).ok());
  const test_support::SchemaCheck check = test_support::ValidateReport(path);
  INFO(check.output);
  CHECK(check.exit_code == 0);
}

TEST_CASE("steps: --skip-steps drops rows but no totals", "[unit][steps]") {
  AnalysisOptions options;
  options.skip_steps = 1;
  const Json process = ProcessReportOf(*TrainingTrace(options), options);
  const Json& steps = process["steps"];
  CHECK(steps["skipped"] == 1);
  CHECK(steps["instances"] == 2);
  REQUIRE(steps["rows"].size() == 1);
  CHECK(steps["rows"][0]["index"] == 1);
  CHECK(steps["summary"]["host_ns"] == 200);
  CHECK(steps["summary"]["other_ns"] == 70 + 10);
  CHECK(U(process["phases"]["forward_ns"]) == 180);  // totals unaffected

  options.skip_steps = 5;
  const Json all_skipped = ProcessReportOf(*TrainingTrace(options), options)["steps"];
  CHECK(all_skipped["rows"].empty());
  CHECK(all_skipped["summary"]["host_ns"].is_null());
}

TEST_CASE("steps: an explicit --step, and no step range", "[unit][steps]") {
  AnalysisOptions options;
  options.step = "forward";  // any depth; attributed paths must start with step/forward
  const Json steps = ProcessReportOf(*TrainingTrace(options), options)["steps"];
  CHECK(steps["detected"] == false);
  CHECK(steps["range"] == "forward");
  REQUIRE(steps["rows"].size() == 3);  // step/forward twice and step/backward/forward
  CHECK(steps["rows"][0]["start_ns"] == 110);
  CHECK(steps["rows"][0]["forward_ns"] == 100);
  CHECK(steps["rows"][1]["start_ns"] == 145);
  CHECK(steps["rows"][1]["recompute_ns"] == 40);
  CHECK(steps["rows"][2]["forward_ns"] == 80);

  options.step = "epoch";
  const Json missing = ProcessReportOf(*TrainingTrace(options), options);
  CHECK(missing["steps"].is_null());
  CHECK_THAT(missing["steps_reason"].get<std::string>(), Catch::Contains("'epoch'"));

  ProcessTrace single;
  {
    Feeder feed(single);
    Message m;
    m.Add(MakeHello(101)).Add(CuptiOk()).Str(kStep, "train").Add(MakeNode(kNodeStep, 0, kStep));
    m.Push(10, 1, kNodeStep).Pop(20, 1, kNodeStep).Add(wire::Goodbye{30, 1, 0});
    REQUIRE(feed.Send(m).ok());
    single.Finish();
  }
  const Json none = ProcessReportOf(single);
  CHECK(none["steps"].is_null());
  CHECK_THAT(none["steps_reason"].get<std::string>(), Catch::Contains("two or more"));
}

TEST_CASE("steps: ProfilerStep#N instances are one step range", "[unit][steps]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(102)).Add(CuptiOk()).Str(kGemm, "_Z4gemmPfS_").Str(kStep, "data");
  m.Str(kProfilerStep1, "ProfilerStep#1").Str(kProfilerStep2, "ProfilerStep#2");
  m.Add(MakeNode(kNodeProfiler1, 0, kProfilerStep1))
      .Add(MakeNode(kNodeProfiler2, 0, kProfilerStep2));
  m.Add(MakeNode(kNodeStep, 0, kStep));
  // `data` has three instances, more than either ProfilerStep name, but is not step-like.
  for (uint64_t t : {0, 2, 4}) m.Push(t, 1, kNodeStep).Pop(t + 1, 1, kNodeStep);
  m.Push(10, 1, kNodeProfiler1)
      .Add(MakeLaunch(1, 11, 1, kNodeProfiler1))
      .Pop(20, 1, kNodeProfiler1);
  m.Push(20, 1, kNodeProfiler2)
      .Add(MakeLaunch(2, 21, 1, kNodeProfiler2))
      .Pop(40, 1, kNodeProfiler2);
  m.Add(MakeKernel(1, 12, 18, 7, kGemm)).Add(MakeKernel(2, 25, 45, 7, kGemm));
  m.Add(wire::Goodbye{50, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
  const Json steps = ProcessReportOf(trace)["steps"];
  REQUIRE(steps.is_object());
  CHECK(steps["range"] == "ProfilerStep#*");
  REQUIRE(steps["rows"].size() == 2);
  CHECK(steps["rows"][0]["name"] == "ProfilerStep#1");
  CHECK(steps["rows"][0]["other_ns"] == 6);
  CHECK(steps["rows"][1]["name"] == "ProfilerStep#2");
  CHECK(steps["rows"][1]["other_ns"] == 20);
  CHECK(steps["rows"][1]["busy_ns"] == 15);  // 25-40 of 25-45
  CHECK(steps["rows"][1]["gaps_ns"] == 5);
  // The pass tree has one node for the range, with both instances and both kernels; the
  // activities keep their instance's name.
  const Json process = ProcessReportOf(trace);
  const Json& pass = Pass(process, {"ProfilerStep#*"});
  CHECK(pass["instances"] == 2);
  CHECK(pass["host_ns"]["total"] == 10 + 20);
  CHECK(pass["device"]["kernels"] == 2);
  CHECK(pass["device"]["self_ns"] == 6 + 20);
  CHECK(FindPass(process["passes"], {"ProfilerStep#1"}) == nullptr);

  AnalysisOptions options;
  options.step = "ProfilerStep#7";  // any instance's name selects the whole range
  CHECK(ProcessReportOf(*FinishedTrace(m, options), options)["steps"]["rows"].size() == 2);
  options.step = "data";
  CHECK(ProcessReportOf(*FinishedTrace(m, options), options)["steps"]["rows"].size() == 3);
}

TEST_CASE("families report launch cost and launch-to-start latency", "[unit][families]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(103)).Add(CuptiOk()).Str(kGemm, "_Z4gemmPfS_").Str(kStep, "step");
  m.Add(MakeNode(kNodeStep, 0, kStep)).Push(50, 1, kNodeStep);
  m.Add(MakeLaunch(1, 100, 1, kNodeStep)).Add(wire::ApiExit{110, 1, 1});  // api 10
  m.Add(MakeLaunch(2, 120, 1, kNodeStep)).Add(wire::ApiExit{125, 2, 1});  // api 5
  m.Add(MakeGraphNode(500, 0, kNodeStep)).Add(MakeGraphNode(501, 0, kNodeStep));
  m.Add(MakeLaunch(3, 140, 1, kNodeStep, wire::ApiKind::kGraph)).Add(wire::ApiExit{170, 3, 1});
  m.Add(MakeLaunch(4, 300, 1, kNodeStep));  // no ApiExit: latency only
  m.Add(MakeKernel(1, 200, 210, 7, kGemm)).Add(MakeKernel(2, 130, 135, 7, kGemm));
  m.Add(MakeKernel(3, 180, 185, 7, kGemm, 500)).Add(MakeKernel(3, 200, 205, 9, kGemm, 501));
  m.Add(MakeKernel(4, 310, 320, 7, kGemm)).Pop(400, 1, kNodeStep).Add(wire::Goodbye{500, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  REQUIRE(process["families"].size() == 1);
  const Json& launch = process["families"][0]["launch"];
  // api: 10, 5 and the graph launch's 30 once: [5, 10, 30].
  CHECK(launch["api_ns"] == Json({{"count", 3},
                                  {"total", 45},
                                  {"mean", 15},
                                  {"min", 5},
                                  {"median", 10},
                                  {"max", 30},
                                  {"median_exact", true}}));
  // latency: 100, 10, 40, 60, 10 -> [10, 10, 40, 60, 100], mean 220 / 5.
  CHECK(launch["latency_ns"] == Json({{"count", 5},
                                      {"total", 220},
                                      {"mean", 44},
                                      {"min", 10},
                                      {"median", 40},
                                      {"max", 100},
                                      {"median_exact", true}}));
  const Json summary_launch = ReportFor({&trace})["summary"]["families"][0]["launch"];
  CHECK(summary_launch == launch);
}

TEST_CASE("launch latency is the exact signed difference of wire timestamps, clamped to int64",
          "[unit][families]") {
  // Hostile timestamps on either side of 2^63: casting each to int64 before subtracting would
  // overflow (the wire fuzzer's one UBSan finding). The true differences are -1 and 2^63 + 9.
  constexpr uint64_t kHalf = uint64_t{1} << 63;
  ProcessTrace trace;
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(105)).Add(CuptiOk()).Str(kGemm, "_Z4gemmPfS_");
  m.Add(MakeLaunch(1, kHalf, 1, 0)).Add(MakeKernel(1, kHalf - 1, kHalf + 9, 7, kGemm));
  m.Add(MakeLaunch(2, 1, 1, 0)).Add(MakeKernel(2, kHalf + 10, kHalf + 20, 7, kGemm));
  m.Add(wire::Goodbye{kHalf + 30, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  const Json& latency = process["families"][0]["launch"]["latency_ns"];
  CHECK(latency["count"] == 2);
  CHECK(latency["min"] == -1);
  CHECK(latency["max"] == std::numeric_limits<int64_t>::max());
}

TEST_CASE("families without seen launches have null launch statistics", "[unit][families]") {
  ProcessTrace trace;
  Feeder feed(trace);
  Message m;
  m.Add(MakeHello(104)).Add(CuptiOk()).Str(kGemm, "_Z4gemmPfS_");
  m.Add(MakeKernel(1, 10, 20, 7, kGemm)).Add(wire::Goodbye{30, 1, 0});
  REQUIRE(feed.Send(m).ok());
  trace.Finish();
  const Json process = ProcessReportOf(trace);
  const Json& launch = process["families"][0]["launch"];
  CHECK(launch["api_ns"].is_null());
  CHECK(launch["latency_ns"].is_null());
}

// The --activities lines of the trace `feed` makes, analysed with `options`.
std::vector<Json> ActivityLines(const std::function<void(ProcessTrace&)>& feed,
                                AnalysisOptions options = {}) {
  auto collector = std::make_shared<ActivityLineCollector>();
  options.observer = collector;
  ProcessTrace trace(options);
  feed(trace);
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.processes.push_back(trace.TakeAnalysis());
  BuildReport(inputs);
  const std::string& text = collector->text;
  std::vector<Json> lines;
  size_t start = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    lines.push_back(Json::parse(text.substr(start, end - start)));
    start = end + 1;
  }
  CHECK(start == text.size());  // every line ends with a newline
  return lines;
}

const Json& LineFor(const std::vector<Json>& lines, uint32_t correlation) {
  for (const Json& line : lines) {
    if (line["correlation_id"] == correlation) return line;
  }
  FAIL("no line for correlation " << correlation);
  throw std::logic_error("unreachable");
}

TEST_CASE("the activity export has one line per activity with its attribution",
          "[unit][activities]") {
  const std::vector<Json> lines = ActivityLines(FeedTrainingTrace);
  REQUIRE(lines.size() == 11);
  for (const Json& line : lines) {
    CHECK(line.size() == 16);
    for (const char* key : {"pid", "kind", "name", "correlation_id", "device", "stream", "start_ns",
                            "end_ns", "launch_ns", "thread", "path", "attribution", "reason",
                            "graph_node", "launch_path", "phase"}) {
      CHECK(line.contains(key));
    }
  }
  const Json& direct = LineFor(lines, 1);
  CHECK(direct["pid"] == 100);
  CHECK(direct["kind"] == "kernel");
  CHECK(direct["name"] == "gemm(float*, float*)");
  CHECK(direct["start_ns"] == 200);
  CHECK(direct["end_ns"] == 300);
  CHECK(direct["launch_ns"] == 115);
  CHECK(direct["thread"] == "1");
  CHECK(direct["path"] == Json({"step", "forward"}));
  CHECK(direct["attribution"] == "direct");
  CHECK(direct["reason"].is_null());
  CHECK(direct["graph_node"].is_null());
  CHECK(direct["launch_path"].is_null());
  CHECK(direct["phase"] == "forward");
  const Json& inherited = LineFor(lines, 4);
  CHECK(inherited["thread"] == "pt_autograd_0");
  CHECK(inherited["attribution"] == "inherited");
  CHECK(inherited["path"] == Json({"step", "backward"}));
  CHECK(inherited["phase"] == "backward");
  CHECK(inherited["stream"] == 8);
  CHECK(LineFor(lines, 3)["phase"] == "recompute");
  const Json& memcpy = LineFor(lines, 7);
  CHECK(memcpy["kind"] == "memcpy");
  CHECK(memcpy["name"].is_null());
  CHECK(memcpy["phase"].is_null());
  CHECK(memcpy["path"] == Json({"step"}));
  // A graph node whose creation was never seen falls back to its graph launch's range.
  const Json& before_window = LineFor(lines, 11);
  CHECK(before_window["attribution"] == "direct");
  CHECK(before_window["reason"].is_null());
  CHECK(before_window["path"] == Json({"step"}));
  CHECK(before_window["graph_node"] == 999);
  CHECK(before_window["launch_path"] == Json({"step"}));
  const Json& no_range = LineFor(lines, 12);
  CHECK(no_range["reason"] == "no_open_range");
  CHECK(no_range["launch_ns"] == 900);

  AnalysisOptions options;
  options.inherit = false;
  const std::vector<Json> without = ActivityLines(FeedTrainingTrace, options);
  const Json& not_inherited = LineFor(without, 4);
  CHECK(not_inherited["attribution"] == "none");
  CHECK(not_inherited["reason"] == "no_open_range");
  CHECK(not_inherited["phase"].is_null());
}

TEST_CASE("a graph node captured with no range open falls through to its graph launch",
          "[unit][activities]") {
  Message m;
  m.Add(MakeHello(105)).Add(CuptiOk()).Str(kGemm, "_Z4gemmPfS_").Str(kStep, "step");
  m.Str(kForward, "forward").Add(MakeNode(kNodeStep, 0, kStep));
  m.Add(MakeNode(kNodeForward, 0, kForward));
  m.Add(MakeGraphNode(500, 0, 0)).Add(MakeGraphNode(501, 0, kNodeForward));
  m.Push(10, 1, kNodeStep).Add(MakeLaunch(1, 20, 1, kNodeStep, wire::ApiKind::kGraph));
  m.Add(MakeKernel(1, 30, 40, 7, kGemm, 500)).Add(MakeKernel(1, 40, 45, 7, kGemm, 501));
  m.Pop(60, 1, kNodeStep).Add(wire::Goodbye{70, 1, 0});
  const std::vector<Json> lines = ActivityLines([&m](ProcessTrace& trace) {
    Feeder feed(trace);
    REQUIRE(feed.Send(m).ok());
    trace.Finish();
  });
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["attribution"] == "direct");
  CHECK(lines[0]["path"] == Json({"step"}));
  CHECK(lines[0]["launch_path"] == Json({"step"}));
  CHECK(lines[1]["attribution"] == "captured");
  CHECK(lines[1]["path"] == Json({"forward"}));
  CHECK(lines[1]["launch_path"] == Json({"step"}));
  CHECK(lines[1]["phase"] == "forward");
  const Json process = ProcessReportOf(*FinishedTrace(m));
  CHECK(U(Pass(process, {"step"})["attribution"]["direct_ns"]) == 10);
  CheckReconciliation(process);
}

}  // namespace
}  // namespace gpuattr::collector::testing
