// RenderReportView on hand-built documents: filled and null fields, sorting and indentation of
// the pass tree, "n/a" for what was not measured, elision, --top, and hostile input.
#include "views/report_view.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

// The view of a report held in memory, split as LoadReport splits a file.
std::string View(const Json& report, const ReportViewOptions& options) {
  return RenderReportView(LoadedReport::FromDocument(report), options);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t CodePoints(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xc0) == 0x80 ? 0 : 1;
  return n;
}

// The first line containing `needle`, or "" (and a failed check).
std::string LineWith(const std::string& text, const std::string& needle) {
  for (const std::string& line : Lines(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  FAIL_CHECK("no line contains '" << needle << "' in:\n" << text);
  return "";
}

size_t LineIndex(const std::string& text, const std::string& needle) {
  const std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) return i;
  }
  FAIL_CHECK("no line contains '" << needle << "'");
  return lines.size();
}

void CheckWidth(const std::string& text) {
  for (const std::string& line : Lines(text)) {
    INFO(line);
    CHECK(CodePoints(line) <= kReportViewWidth);
  }
}

Json Pass(const std::string& name, Json path, Json self_ns, Json total_ns,
          Json children = Json::array()) {
  return {
      {"name", name},
      {"path", std::move(path)},
      {"instances", 2},
      {"host_ns", {{"total", 5000000}, {"min", 2000000}, {"median", 2000000}, {"max", 3000000}}},
      {"device", self_ns.is_null() ? Json(nullptr)
                                   : Json{{"self_ns", self_ns},
                                          {"total_ns", total_ns},
                                          {"busy_ns", self_ns},
                                          {"kernels", 4},
                                          {"activities", 4}}},
      {"attribution", self_ns.is_null()
                          ? Json(nullptr)
                          : Json{{"direct_ns", self_ns}, {"inherited_ns", 0}, {"captured_ns", 0}}},
      {"phase", nullptr},
      {"children", std::move(children)}};
}

// A process as `gpuattr run` writes it today: phases, steps and coverage by phase still null.
Json NullProcess() {
  return R"({
    "pid": 100, "rank": null, "exe": "/bin/app", "exit_status": 0, "status": "complete",
    "refusals": [],
    "loss": {"dropped_records": 0, "unmatched_launches": 0, "orphan_activities": 0, "lost_messages": 0},
    "totals": {"kernel_ns": 7000000, "memcpy_ns": 0, "memset_ns": 0, "kernels": 9, "launches": 9},
    "devices": [{"id": 0, "name": "dev", "first_start_ns": 1000000, "span_ns": 10000000,
                 "busy_ns": 7000000, "idle_ns": 3000000, "idle_fraction": 0.3, "streams": [],
                 "gaps": {"count": 1, "host_bound_ns": 3000000, "dependency_ns": 0,
                          "unclassified_ns": 0, "tail_ns": 500000,
                          "largest": [{"start_ns": 3000000, "end_ns": 6000000, "ns": 3000000,
                                       "class": "host_bound", "host_range": ["step", "dataloader"]}]}}],
    "passes": [],
    "families": [{"family": "gemm", "kernels": 9, "total_ns": 7000000, "mean_ns": 777777,
                  "min_ns": 1, "max_ns": 2, "share": 1.0, "names": [], "shapes": [], "launch": null}],
    "phases": null,
    "steps": null,
    "coverage": {"attributed_fraction": 0.5, "threshold": 0.95, "passed": false,
                 "by_phase": {"forward": null, "backward": null}, "unattributed": []}
  })"_json;
}

Json Report(Json processes) {
  return {{"schema_version", "gpuattr.report/1"},
          {"tool", {{"name", "gpuattr"}, {"version", "0.1.0"}}},
          {"capture",
           {{"mode", "run"},
            {"command", {"python", "train.py"}},
            {"host", "h"},
            {"started_at", "2025-01-01T00:00:00Z"},
            {"duration_ns", 12000000},
            {"clock", "CLOCK_MONOTONIC"}}},
          {"processes", std::move(processes)},
          {"summary",
           {{"processes", 1},
            {"totals", nullptr},
            {"coverage", nullptr},
            {"families", nullptr},
            {"ranks", Json::array()}}}};
}

// step > {forward (self 1 ms) > {layer (self 3 ms)}, backward (self 2 ms)}, the small one first.
Json TreeProcess() {
  Json process = NullProcess();
  Json layer = Pass("layer", {"step", "forward", "layer"}, 3000000, 3000000);
  Json forward = Pass("forward", {"step", "forward"}, 1000000, 4000000, Json::array({layer}));
  Json backward = Pass("backward", {"step", "backward"}, 2000000, 2000000);
  process["passes"] =
      Json::array({Pass("step", {"step"}, 0, 6000000, Json::array({forward, backward}))});
  return process;
}

}  // namespace

TEST_CASE("the pass tree is sorted by self time and indented by depth", "[report_view]") {
  const std::string text = View(Report({TreeProcess()}), {});
  CheckWidth(text);
  // backward (2 ms self) before forward (1 ms self), though forward came first in the file.
  CHECK(LineIndex(text, "  backward") < LineIndex(text, "  forward"));
  CHECK(LineIndex(text, "  forward") < LineIndex(text, "      layer"));
  const std::string step = LineWith(text, "step ");
  const std::string backward = LineWith(text, "backward ");
  const std::string layer = LineWith(text, "layer ");
  CHECK(step.rfind("  step", 0) == 0);
  CHECK(backward.rfind("    backward", 0) == 0);
  CHECK(layer.rfind("      layer", 0) == 0);
  // Self, total, busy, kernels, instances, host total, phase, split.
  CHECK_THAT(layer, Catch::Matches(
                        R"(\s+layer\s+3\.000\s+3\.000\s+3\.000\s+4\s+2\s+5\.000\s+n/a\s+d100)"));
  CHECK_THAT(step, Catch::Matches(R"(\s+step\s+0\.000\s+6\.000\s+0\.000\s+4\s+2\s+5\.000\s+n/a)"));
}

TEST_CASE("fields that are null today render n/a, never 0", "[report_view]") {
  Json process = NullProcess();
  process["passes"] = Json::array({Pass("nvtx_only", {"nvtx_only"}, nullptr, nullptr)});
  process["devices"] = nullptr;
  process["totals"] = {{"kernel_ns", nullptr},
                       {"memcpy_ns", nullptr},
                       {"memset_ns", nullptr},
                       {"kernels", nullptr},
                       {"launches", nullptr}};
  const std::string text = View(Report({process}), {});
  CheckWidth(text);
  CHECK_THAT(LineWith(text, "nvtx_only"),
             Catch::Matches(R"(\s+nvtx_only\s+n/a\s+n/a\s+n/a\s+n/a\s+2\s+5\.000\s+n/a)"));
  CHECK_THAT(text, Catch::Contains("phases: n/a"));
  CHECK_THAT(text, Catch::Contains("steps: n/a (no step range)"));
  process["steps_reason"] = "no top-level range has two instances";
  CHECK_THAT(View(Report({process}), {}),
             Catch::Contains("steps: n/a (no top-level range has two instances)"));
  CHECK_THAT(text, Catch::Contains("device time: not measured"));
  CHECK_THAT(text, Catch::Contains("by phase: backward n/a, forward n/a"));
  CHECK_THAT(text, Catch::Contains("totals: kernels n/a (n/a ms)"));
  CHECK_THAT(LineWith(text, "gemm"),
             Catch::Matches(R"(.*0\.778\s+n/a\s+n/a)"));  // launch still null
  CHECK_THAT(text, Catch::Contains(
                       "coverage: 50.00% of kernel time attributed (threshold 95.00%): FAILED"));
  CHECK_THAT(text, Catch::Contains("loss: none"));
}

TEST_CASE("filled phases, steps, coverage by phase and launch statistics render", "[report_view]") {
  Json process = TreeProcess();
  process["phases"] = {{"forward_ns", 4000000},  {"backward_ns", 2000000},
                       {"recompute_ns", 500000}, {"optimizer_ns", 250000},
                       {"loss_ns", 125000},      {"communication_ns", 60000},
                       {"other_ns", 0},          {"recompute_fraction", 0.125}};
  Json row = {{"index", 0},
              {"name", "step"},
              {"start_ns", 0},
              {"end_ns", 9000000},
              {"host_ns", 9000000},
              {"forward_ns", 4000000},
              {"backward_ns", 2000000},
              {"recompute_ns", 500000},
              {"optimizer_ns", 250000},
              {"loss_ns", 125000},
              {"communication_ns", 60000},
              {"other_ns", 0},
              {"unattributed_ns", 0},
              {"busy_ns", 6875000},
              {"gaps_ns", 2125000}};
  Json second = row;
  second["index"] = 1;
  second["host_ns"] = 11000000;
  Json summary = row;
  summary.erase("index");
  summary["host_ns"] = 10000000;
  process["steps"] = {{"range", "step"}, {"detected", true},      {"instances", 4},
                      {"skipped", 2},    {"rows", {row, second}}, {"summary", summary}};
  process["coverage"]["by_phase"] = {{"forward", 1.0}, {"backward", 0.25}};
  process["coverage"]["unattributed"] = {
      {{"reason", "no_open_range"}, {"ns", 1500000}, {"activities", 3}}};
  process["families"][0]["launch"] = {
      {"api_ns", {{"count", 9}, {"mean", 5000}, {"min", 4000}, {"median", 4200}, {"max", 9000}}},
      {"latency_ns",
       {{"count", 9}, {"mean", 15000}, {"min", 9000}, {"median", 12000}, {"max", 30000}}}};
  process["loss"]["dropped_records"] = 3;
  process["devices"][0]["categories"] = {{"compute_ns", 6000000},
                                         {"communication_ns", 2000000},
                                         {"memory_ns", 250000},
                                         {"communication_hidden_ns", 1500000},
                                         {"communication_exposed_ns", 500000}};
  process["devices"][0]["streams"] = {
      {{"id", 7}, {"busy_ns", 6000000}, {"idle_ns", 4000000}, {"activities", 12}}};
  process["refusals"] = {
      {{"code", "cupti_subscriber_conflict"},
       {"cause", "another CUPTI subscriber (Nsight Systems?) holds the callback API"},
       {"remedy", "run without the other profiler"}}};
  const std::string text = View(Report({process}), {});
  CheckWidth(text);
  CHECK_THAT(LineWith(text, "phases (ms)"),
             Catch::Matches(R"(\s+phases \(ms\)\s+forward\s+backward\s+recompute\s+optimizer\s+)"
                            R"(loss\s+comm\s+other\s+r)"));
  CHECK_THAT(Lines(text)[LineIndex(text, "phases (ms)") + 1],
             Catch::Matches(
                 R"(\s+4\.000\s+2\.000\s+0\.500\s+0\.250\s+0\.125\s+0\.060\s+0\.000\s+0\.125)"));
  CHECK_THAT(text, Catch::Contains(
                       "steps (ms): range 'step' (auto-detected), 4 instances, 2 skipped, 2 rows"));
  CHECK_THAT(text, Catch::Contains("host: the step as instrumented, under gpuattr"));
  CHECK_THAT(
      LineWith(text, "  0 "),
      Catch::Matches(
          R"(\s+0\s+9\.000\s+4\.000\s+2\.000\s+0\.500\s+0\.125\s+0\.250\s+0\.060\s+0\.000\s+0\.000\s+)"
          R"(6\.875\s+2\.125)"));
  CHECK_THAT(LineWith(text, "  1 "), Catch::StartsWith("  1") && Catch::Contains("11.000"));
  CHECK_THAT(LineWith(text, "  median "),
             Catch::Matches(R"(\s+median\s+10\.000\s+4\.000.*2\.125)"));
  CHECK_THAT(text, Catch::Contains("by phase: backward 25.00%, forward 100.00%"));
  CHECK_THAT(LineWith(text, "no_open_range"), Catch::Matches(R"(\s+no_open_range\s+1\.500\s+3)"));
  CHECK_THAT(LineWith(text, "gemm"),
             Catch::Matches(R"(\s+gemm\s+9\s+7\.000\s+100\.00%\s+0\.778\s+4\.2\s+12\.0)"));
  CHECK_THAT(text, Catch::Contains("loss: dropped_records 3\n"));
  CHECK_THAT(text, Catch::Contains("    compute 6.000 ms, communication 2.000 ms (hidden 1.500, "
                                   "exposed 0.500), memory 0.250 ms\n"));
  CHECK_THAT(LineWith(text, "    7 "), Catch::Matches(R"(\s+7\s+6\.000\s+4\.000\s+12)"));
  CHECK_THAT(text,
             Catch::Contains("refused (cupti_subscriber_conflict): another CUPTI subscriber"));
  CHECK_THAT(text, Catch::Contains("remedy: run without the other profiler"));
  CHECK_THAT(LineWith(text, "step/dataloader"),
             Catch::Matches(R"(\s+step/dataloader\s+3\.000\s+2\.000\s+host_bound)"));
  CHECK_THAT(text,
             Catch::Contains(
                 "host_bound 3.000 ms, dependency 0.000 ms, unclassified 0.000 ms; tail 0.500 ms"));
}

TEST_CASE("top N limits each tree level, the families and the steps, saying how many more",
          "[report_view]") {
  Json process = NullProcess();
  Json children = Json::array();
  for (int i = 1; i <= 5; ++i) {
    children.push_back(
        Pass("child" + std::to_string(i), {"root", "child"}, i * 1000000, i * 1000000));
  }
  process["passes"] = Json::array({Pass("root", {"root"}, 0, 15000000, children)});
  Json family = process["families"][0];
  for (int i = 0; i < 3; ++i) process["families"].push_back(family);
  process["families"][3]["total_ns"] = 1000000;
  Json rows = Json::array();
  for (int i = 0; i < 4; ++i) rows.push_back({{"index", 10 + i}, {"host_ns", 1000000 * (i + 1)}});
  process["steps"] = {{"range", "iteration"}, {"rows", rows}, {"summary", {{"host_ns", 2000000}}}};
  ReportViewOptions options;
  options.top = 2;
  const std::string text = View(Report({process}), options);
  CheckWidth(text);
  CHECK_THAT(text, Catch::Contains("child5") && Catch::Contains("child4"));
  CHECK_THAT(text, !Catch::Contains("child3") && !Catch::Contains("child1"));
  CHECK_THAT(LineWith(text, "… 3 more"), Catch::Equals("    … 3 more (self 6.000 ms)"));
  CHECK_THAT(text, Catch::Contains("  … 2 more (8.000 ms)"));  // families: 7 + 1 ms left out
  CHECK_THAT(text, Catch::Contains("\n  10 ") && Catch::Contains("\n  11 "));
  CHECK_THAT(text, !Catch::Contains("\n  12 ") && Catch::Contains("\n  … 2 more\n"));
  CHECK_THAT(LineWith(text, "  median "), Catch::StartsWith("  median  2.000  n/a"));
}

TEST_CASE(
    "long pass names are kept whole on lines of their own, other long names are elided in the "
    "middle, and every line fits 100 columns",
    "[report_view]") {
  const std::string head(60, 'h');
  const std::string tail(60, 't');
  Json process = TreeProcess();
  process["passes"][0]["children"][1]["name"] = head + "ÄÖÜ" + tail;
  process["families"][0]["family"] = "void at::native::" + head + tail + "<float>";
  process["exe"] = "/very/long/" + head + "/" + tail + "/exe";
  const std::string text = View(Report({process}), {});
  CheckWidth(text);
  // The pass name: 123 characters on two lines under its indentation, no ellipsis, its cells
  // on the next line.
  const std::string first = LineWith(text, "    hhhhh");
  CHECK_THAT(first, Catch::Matches(R"(    h{60}ÄÖÜt+)"));
  const size_t at = text.find(first);
  const std::string rest = text.substr(at + first.size() + 1);
  const std::string second = rest.substr(0, rest.find('\n'));
  CHECK_THAT(second, Catch::Matches(R"(    t+)"));
  CHECK(first.size() - 4 + second.size() - 4 == 123 + 3);  // ÄÖÜ: two bytes each
  CHECK_THAT(rest.substr(second.size() + 1, rest.find('\n', second.size() + 1) - second.size() - 1),
             Catch::Matches(R"(\s+[0-9].*)"));
  CHECK_THAT(first + second, !Catch::Contains("…"));
  CHECK_THAT(LineWith(text, "void at::native"), Catch::Contains("…"));
  CHECK_THAT(LineWith(text, "process 100"), Catch::EndsWith("/exe"));
}

TEST_CASE("an imported report names its format and files where a run names its command",
          "[report_view]") {
  Json report = Report({TreeProcess()});
  report["capture"]["mode"] = "import";
  report["capture"]["command"] = Json::array();
  report["capture"]["source"] = {{"format", "kineto"},
                                 {"files", {"rank0.json.gz", "rank1.json.gz"}}};
  CHECK_THAT(View(report, {}),
             Catch::Contains("capture import: kineto: rank0.json.gz rank1.json.gz"));
}

TEST_CASE("a pid option renders only that process", "[report_view]") {
  Json other = NullProcess();
  other["pid"] = 200;
  ReportViewOptions options;
  options.pid = 200;
  const std::string text = View(Report({NullProcess(), other}), options);
  CHECK_THAT(text, Catch::Contains("process 200") && !Catch::Contains("process 100"));
}

TEST_CASE("the report's advice is rendered after the processes, and without any", "[report_view]") {
  Json report = Report(Json::array());
  report["advice"] = {{{"code", "no_ranges"},
                       {"cause", "No process of this capture has an NVTX range."},
                       {"remedy", "PyTorch: run it under gpuattr run."}}};
  using Catch::Contains;
  const std::string without_processes = View(report, {});
  CHECK_THAT(without_processes, Contains("no traced process"));
  CHECK_THAT(without_processes,
             Contains("advice (no_ranges): No process of this capture has an NVTX range."));
  CHECK_THAT(without_processes, Contains("  remedy: PyTorch: run it under gpuattr run."));
  report["processes"] = {TreeProcess()};
  const std::string with_process = View(report, {});
  CHECK(with_process.find("advice (no_ranges)") > with_process.find("process "));
  report.erase("advice");  // a report written before advice existed
  CHECK_THAT(View(report, {}), !Contains("advice"));
}

TEST_CASE("hostile documents render without throwing", "[report_view]") {
  SECTION("wrong types everywhere") {
    const Json report = R"({
      "schema_version": "gpuattr.report/1", "tool": 5, "capture": [], "summary": "x",
      "diagnostics": {"rejected_connections": 2, "rejected_messages": "many"},
      "processes": [7, {"pid": "abc", "passes": {"a": 1}, "families": [3, {"family": 4}],
                        "devices": [{"gaps": {"largest": [1, {"ns": "big"}]}}],
                        "steps": {"rows": [null, {"index": "a"}], "summary": 3},
                        "coverage": {"by_phase": [], "unattributed": [1]},
                        "loss": [], "refusals": [{"cause": 1}],
                        "phases": {"forward_ns": "1"}}]
    })"_json;
    std::string text;
    REQUIRE_NOTHROW(text = View(report, {}));
    CheckWidth(text);
    CHECK_THAT(text, Catch::Contains("process n/a") && Catch::Contains("passes: n/a"));
    CHECK_THAT(text, Catch::Contains("collector diagnostics: rejected_connections 2"));
    CHECK_THAT(Lines(text)[LineIndex(text, "phases (ms)") + 1],
               Catch::Matches(R"(\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a)"));
  }
  SECTION("not an object at all") {
    for (const Json& report : {Json(nullptr), Json(3), Json::array({1, 2}), Json("s")}) {
      std::string text;
      REQUIRE_NOTHROW(text = View(report, {}));
      CHECK_THAT(text, Catch::Contains("processes: n/a"));
    }
  }
  SECTION("control characters never reach the terminal") {
    Json process = TreeProcess();
    process["passes"][0]["name"] = "evil\x1b[2J\x07name\xc2\x9b";
    const std::string text = View(Report({process}), {});
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\x07') == std::string::npos);
    CHECK(text.find("\xc2\x9b") == std::string::npos);
    CHECK_THAT(text, Catch::Contains("evil?[2J?name?"));
  }
  SECTION("a pass tree deeper than the view shows") {
    Json node = Pass("leaf", {"x"}, 1, 1);
    for (size_t depth = 0; depth < kReportViewMaxDepth + 10; ++depth) {
      node = Pass("n" + std::to_string(depth), {"x"}, 1, 1, Json::array({node}));
    }
    Json process = NullProcess();
    process["passes"] = Json::array({node});
    const std::string text = View(Report({process}), {});
    CheckWidth(text);
    CHECK_THAT(text, Catch::Contains("… deeper levels not shown"));
    CHECK_THAT(text, !Catch::Contains("leaf"));
  }
}

}  // namespace gpuattr::collector

namespace gpuattr::collector {
namespace {

// TreeProcess with the FLOP counter's work: `layer` holds FLOPs with an unknown op under it.
Json WorkProcess(Json mfu, Json achieved_refusal) {
  Json process = TreeProcess();
  Json& step = process["passes"][0];
  auto work = [](uint64_t flops, uint64_t total, uint64_t unknown, Json achieved) {
    return Json{{"flops", flops},
                {"flops_total", total},
                {"bytes_estimate", 2 * flops},
                {"bytes_estimate_total", 2 * total},
                {"unknown_ops", unknown},
                {"unknown_ops_total", unknown},
                {"achieved_flops_per_s", std::move(achieved)},
                {"arithmetic_intensity_hypothesis", flops ? Json(0.5) : Json(nullptr)}};
  };
  step["work"] = work(0, 3'000'000'000, 1, nullptr);
  Json& forward = step["children"][0];
  forward["work"] = work(0, 3'000'000'000, 1, nullptr);
  forward["children"][0]["work"] = work(3'000'000'000, 3'000'000'000, 1,
                                        achieved_refusal.is_null() ? Json(1e12) : Json(nullptr));
  step["children"][1]["work"] = work(0, 0, 0, nullptr);
  process["work"] = {
      {"counter", "counting (rules: flop_rules.json)"},
      {"refusal", nullptr},
      {"flops", 3'000'000'000},
      {"bytes_estimate", 6'000'000'000},
      {"arithmetic_intensity_hypothesis", 0.5},
      {"unattributed_flops", 0},
      {"flops_by_dtype", {{"bfloat16", 3'000'000'000}}},
      {"ops",
       {{"counted",
         {{{"op", "aten::mm"},
           {"calls", 2},
           {"flops", 3'000'000'000},
           {"bytes_estimate", 6'000'000'000}}}},
        {"free", {{{"op", "aten::view"}, {"calls", 5}}}},
        {"unknown", {{{"op", "aten::erfinv"}, {"calls", 1}}}},
        {"unknown_remedy", "Add a rule with --flop-rules FILE."}}},
      {"achieved", {{"gate_passed", achieved_refusal.is_null()}, {"refusal", achieved_refusal}}},
      {"mfu", std::move(mfu)}};
  const Json row = {{"index", 0},
                    {"name", "step"},
                    {"flops", 1'500'000'000},
                    {"bytes_estimate", 3'000'000'000},
                    {"unknown_ops", 2}};
  process["steps"] = {{"range", "step"}, {"detected", true},           {"instances", 1},
                      {"skipped", 0},    {"rows", Json::array({row})}, {"summary", row}};
  return process;
}

Json Refusal(const std::string& code) {
  return {{"code", code}, {"cause", "because " + code}, {"remedy", "do " + code}};
}

TEST_CASE(
    "FLOPs render per pass with achieved FLOP/s, intensity as a hypothesis, MFU and the "
    "unknown ledger",
    "[report_view]") {
  const Json mfu = {{"value", 0.4},
                    {"step_flops", 1'500'000'000},
                    {"clean_step_ns", 4'000'000},
                    {"clean_step_source", "clean_run"},
                    {"clean_steps_timed", 5},
                    {"instrumented_step_ns", 4'400'000},
                    {"dtype", "bfloat16"},
                    {"peak_flops_per_s", 989.4e12},
                    {"peak_source", "NVIDIA H200 SXM, bfloat16: datasheet"},
                    {"refusal", nullptr}};
  const std::string text = View(Report(Json::array({WorkProcess(mfu, nullptr)})), {});
  CHECK(LineWith(text, "FLOPs: counting (rules: flop_rules.json)").size() > 0);
  CHECK(LineWith(text, "3 GFLOP counted").find("(a hypothesis)") != std::string::npos);
  CHECK(LineWith(text, "MFU 40.00% = step 1.5 GFLOP").find("4.000 ms clean_run, 5 steps") !=
        std::string::npos);
  CHECK(text.find("instrumented step 4.400 ms") != std::string::npos);
  CHECK(LineWith(text, "unknown (FLOPs marked + are lower bounds)").find("aten::erfinv x1") !=
        std::string::npos);
  const std::string layer = Lines(text)[LineIndex(text, "pass (FLOPs") + 3];
  CHECK(layer.find("      layer ") == 0);
  CHECK(layer.find("3 GFLOP+") != std::string::npos);
  CHECK(layer.find("1 TFLOP/s") != std::string::npos);
  CHECK(layer.find("0.500") != std::string::npos);
  CHECK(text.find("a hypothesis from the traffic estimate") != std::string::npos);
  // FLOPs per step: the rows, then their median.
  CHECK_THAT(Lines(text)[LineIndex(text, "unknown ops") + 1],
             Catch::Matches(R"(\s+0\s+1\.5 GFLOP\s+3 GB\s+2)"));
  CheckWidth(text);
}

TEST_CASE("FLOP figures that are null render their refusal's code, cause and remedy",
          "[report_view]") {
  const Json mfu = {{"value", nullptr},
                    {"step_flops", 1'500'000'000},
                    {"clean_step_ns", nullptr},
                    {"clean_step_source", nullptr},
                    {"instrumented_step_ns", 4'400'000},
                    {"peak_flops_per_s", nullptr},
                    {"peak_source", nullptr},
                    {"refusal", Refusal("mfu_denominator_invalid")}};
  const std::string text = View(
      Report(Json::array({WorkProcess(mfu, Refusal("kernel_utilization_requires_device_join"))})),
      {});
  CHECK(
      LineWith(text, "achieved FLOP/s: refused (kernel_utilization_requires_device_join)").size() >
      0);
  CHECK(text.find("remedy: do kernel_utilization_requires_device_join") != std::string::npos);
  CHECK(LineWith(text, "MFU: refused (mfu_denominator_invalid)").size() > 0);
  CHECK(LineWith(text, "instrumented step 4.400 ms, never a denominator").size() > 0);
  CHECK(Lines(text)[LineIndex(text, "pass (FLOPs") + 3].find("n/a") != std::string::npos);

  Json not_counted = TreeProcess();
  not_counted["work"] = {{"counter", nullptr}, {"refusal", Refusal("flops_not_counted")}};
  const std::string refused = View(Report(Json::array({not_counted})), {});
  CHECK(LineWith(refused, "FLOPs: refused (flops_not_counted)").size() > 0);
  CHECK(LineWith(refused, "remedy: do flops_not_counted").size() > 0);
  CHECK(View(Report(Json::array({TreeProcess()})), {}).find("FLOPs") == std::string::npos);
}

}  // namespace
}  // namespace gpuattr::collector
