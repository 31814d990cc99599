// Gate rules, verdicts (U test vs plain bound, absolute bounds, default deny, missing metrics),
// the outputs (table, markdown, JUnit, JSON) and report diffs, on small synthetic reports.
#include "gate/gate.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gate/diff.h"
#include "gate/rules.h"

namespace gpuattr::collector::testing {
namespace {

using Json = nlohmann::json;

// One process, passes step > forward (all forward time), step rows with the given forward
// values, one family, coverage and loss.
Json Report(const std::vector<int64_t>& forward_rows, double coverage, int64_t family_ns,
            const std::string& extra_pass = "") {
  int64_t forward_total = 0;
  Json rows = Json::array();
  for (int64_t f : forward_rows) {
    forward_total += f;
    rows.push_back({{"forward_ns", f},
                    {"backward_ns", 0},
                    {"recompute_ns", 0},
                    {"optimizer_ns", 0},
                    {"loss_ns", 0},
                    {"other_ns", 0}});
  }
  Json children = {{{"name", "forward"},
                    {"phase", "forward"},
                    {"children", Json::array()},
                    {"device", {{"self_ns", forward_total}, {"total_ns", forward_total}}}}};
  if (!extra_pass.empty()) {
    children.push_back({{"name", extra_pass},
                        {"phase", nullptr},
                        {"children", Json::array()},
                        {"device", {{"self_ns", 0}, {"total_ns", 0}}}});
  }
  return {{"schema_version", "gpuattr.report/1"},
          {"processes",
           {{{"pid", 1},
             {"rank", nullptr},
             {"passes",
              {{{"name", "step"},
                {"phase", nullptr},
                {"children", children},
                {"device", {{"self_ns", 0}, {"total_ns", forward_total}}}}}},
             {"phases",
              {{"forward_ns", forward_total},
               {"backward_ns", 0},
               {"recompute_ns", 0},
               {"optimizer_ns", 0},
               {"loss_ns", 0},
               {"other_ns", 0}}},
             {"steps", {{"rows", rows}}},
             {"devices", {{{"id", 0}, {"busy_ns", 100}, {"idle_ns", 10}, {"idle_fraction", 0.1}}}},
             {"loss", {{"dropped_records", 0}}}}}},
          {"summary",
           {{"coverage", {{"attributed_fraction", coverage}, {"threshold", 0.95}}},
            {"totals", {{"kernel_ns", family_ns}}},
            {"families", {{{"family", "cublas_gemm"}, {"total_ns", family_ns}}}}}}};
}

std::vector<int64_t> Steps(int64_t base, size_t n, int64_t spread) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < n; ++i) rows.push_back(base + static_cast<int64_t>(i % 7) * spread);
  return rows;
}

GateOutcome Evaluate(const Json& baseline, const Json& current, const GateRules& rules) {
  StatusOr<GateOutcome> outcome = EvaluateGate(LoadedReport::FromDocument(baseline),
                                               LoadedReport::FromDocument(current), rules);
  INFO(outcome.status().message());
  REQUIRE(outcome.ok());
  return *outcome;
}

const Check& Find(const GateOutcome& outcome, const std::string& metric) {
  for (const Check& check : outcome.checks) {
    if (check.metric == metric) return check;
  }
  FAIL("no check of " << metric);
  return outcome.checks.front();
}

GateRules Parse(const Json& document) {
  StatusOr<GateRules> rules = ParseGateRules(document, "test");
  INFO(rules.status().message());
  REQUIRE(rules.ok());
  return *rules;
}

TEST_CASE("rules files are checked field by field", "[unit][gate]") {
  const GateRules rules = Parse({{"schema_version", "gpuattr.gate/1"},
                                 {"alpha", 0.05},
                                 {"default_deny", true},
                                 {"rules",
                                  {{{"metric", "device.idle_fraction"}, {"max", 0.2}},
                                   {{"name", "fwd"},
                                    {"metric", "phases.forward_ns"},
                                    {"max_increase_pct", 3},
                                    {"alpha", 0.001}}}}});
  CHECK(rules.alpha == 0.05);
  CHECK(rules.default_deny);
  REQUIRE(rules.rules.size() == 2);
  CHECK(rules.rules[0].name == "device.idle_fraction");
  CHECK(*rules.rules[1].alpha == 0.001);
  const std::vector<std::pair<Json, std::string>> bad = {
      {Json::array(), "object"},
      {{{"rules", {{{"metric", "a"}}}}}, "needs a bound"},
      {{{"rules", {{{"metric", "a"}, {"max", 1}, {"maximum", 2}}}}}, "/rules/0/maximum"},
      {{{"rules", {{{"metric", "a..b"}, {"max", 1}}}}}, "/rules/0/metric"},
      {{{"rules", {{{"metric", "a"}, {"max_increase_pct", -1}}}}}, ">= 0"},
      {{{"alpha", 0.9}, {"rules", Json::array()}}, "alpha"},
      {{{"schema_version", "x"}, {"rules", Json::array()}}, "schema_version"},
      {{{"rules", {{{"metric", "a"}, {"min", true}}}}}, "/rules/0/min"}};
  for (const auto& [document, expected] : bad) {
    StatusOr<GateRules> rules_or = ParseGateRules(document, "test");
    INFO(document.dump());
    REQUIRE_FALSE(rules_or.ok());
    CHECK(rules_or.status().code() == StatusCode::kInvalidArgument);
    CHECK(rules_or.status().message().find(expected) != std::string::npos);
  }
}

TEST_CASE("a relative bound fails only on a significant median shift past it", "[unit][gate]") {
  const Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000);
  const GateRules rules = DefaultGateRules(baseline);
  const std::string forward = "passes[\"step/forward\"].device.total_ns";

  const GateOutcome same = Evaluate(baseline, Report(Steps(1000, 20, 10), 1.0, 5000), rules);
  CHECK(same.Passed());
  CHECK(Find(same, forward).method.find("Mann-Whitney") != std::string::npos);

  const GateOutcome slow = Evaluate(baseline, Report(Steps(1100, 20, 10), 1.0, 5000), rules);
  CHECK_FALSE(slow.Passed());
  const Check& regressed = Find(slow, forward);
  CHECK_FALSE(regressed.passed);
  CHECK(*regressed.p_value < 0.01);
  CHECK(regressed.why.find("regression") != std::string::npos);

  // A 3 % shift is significant but within the 5 % bound: pass.
  const GateOutcome small = Evaluate(baseline, Report(Steps(1030, 20, 10), 1.0, 5000), rules);
  CHECK(Find(small, forward).passed);
  CHECK(*Find(small, forward).p_value < 0.01);

  // One step 10x slower moves the total 45 % but not the median: noise, not a regression.
  std::vector<int64_t> outlier = Steps(1000, 20, 10);
  outlier[5] *= 10;
  const GateOutcome spike = Evaluate(baseline, Report(outlier, 1.0, 5000), rules);
  CHECK(Find(spike, forward).passed);
}

TEST_CASE("without per-step values the plain bound decides, and says so", "[unit][gate]") {
  const Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000);
  const GateOutcome outcome =
      Evaluate(baseline, Report(Steps(1000, 20, 10), 1.0, 5300), DefaultGateRules(baseline));
  const Check& family = Find(outcome, "families[\"cublas_gemm\"].total_ns");
  CHECK_FALSE(family.passed);
  CHECK(family.method == "plain bound");
  CHECK(family.why.find("plain bound without a noise test") != std::string::npos);
  // Two steps each: the U test can never reach alpha, so the plain bound decides.
  const Json tiny = Report({1000, 1000}, 1.0, 5000);
  const GateOutcome few = Evaluate(tiny, Report({1200, 1200}, 1.0, 5000), DefaultGateRules(tiny));
  const Check& forward = Find(few, "passes[\"step/forward\"].device.total_ns");
  CHECK_FALSE(forward.passed);
  CHECK(forward.why.find("too few step rows") != std::string::npos);
}

TEST_CASE("absolute bounds, coverage threshold, missing metrics and default deny", "[unit][gate]") {
  const Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000);
  const GateOutcome low =
      Evaluate(baseline, Report(Steps(1000, 20, 10), 0.8, 5000), DefaultGateRules(baseline));
  CHECK_FALSE(Find(low, "coverage.attributed_fraction").passed);
  CHECK(Find(low, "coverage.attributed_fraction").bound == ">= 0.95 (coverage.threshold)");

  const GateRules missing = Parse(
      {{"rules",
        {{{"metric", "passes[\"step/nothing\"].device.total_ns"}, {"max_increase_pct", 5}}}}});
  StatusOr<GateOutcome> refused = EvaluateGate(LoadedReport::FromDocument(baseline),
                                               LoadedReport::FromDocument(baseline), missing);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kNotFound);
  CHECK(refused.status().message().find("passes[\"step/nothing\"].device.total_ns") !=
        std::string::npos);

  // A new pass: a note by default, with its time, a failure under default_deny.
  const Json with_extra = Report(Steps(1000, 20, 10), 1.0, 5000, "extra");
  const GateOutcome noted = Evaluate(baseline, with_extra, DefaultGateRules(baseline));
  CHECK(noted.Passed());
  REQUIRE(noted.notes.size() == 1);
  CHECK(noted.notes[0] ==
        "new pass (not in the baseline): passes[\"step/extra\"], which has 0.000 ms");
  GateRules deny = Parse(
      {{"default_deny", true},
       {"rules",
        {{{"metric", "passes[\"step/forward\"].device.total_ns"}, {"max_increase_pct", 5}}}}});
  const GateOutcome denied = Evaluate(baseline, with_extra, deny);
  CHECK(denied.Failures() == 3);  // step and cublas_gemm uncovered, step/extra new
  CHECK_FALSE(Find(denied, "passes[\"step/extra\"]").passed);
}

// The baseline with a second family, `fused` ns long, beside cublas_gemm.
Json WithFamily(Json report, const std::string& name, int64_t ns) {
  report["summary"]["families"].push_back(
      {{"family", name}, {"total_ns", ns}, {"mean_ns", ns / 2}, {"kernels", 2}});
  report["summary"]["totals"]["kernel_ns"] =
      report["summary"]["totals"]["kernel_ns"].get<int64_t>() + ns;
  return report;
}

TEST_CASE("a family or pass on one side only is a change judged by the rules, never bad input",
          "[unit][gate]") {
  const Json fused = Report(Steps(1000, 20, 10), 1.0, 5000);  // after a fusion: cublas_gemm only
  const Json unfused = WithFamily(fused, "triton_poi_add", 800);

  // The family vanished: its total is 0 now, within an increase bound; the check says so.
  const GateOutcome vanished = Evaluate(unfused, fused, DefaultGateRules(unfused));
  CHECK(vanished.Passed());
  const Check& gone = Find(vanished, "families[\"triton_poi_add\"].total_ns");
  CHECK(gone.passed);
  CHECK(gone.value == 0.0);
  CHECK(gone.baseline == 800.0);
  CHECK(gone.why.find("the family \"triton_poi_add\" vanished: it is not in the current report") !=
        std::string::npos);
  // The totals judge the change: 5800 -> 5000 ns of kernels.
  CHECK(Find(vanished, "totals.kernel_ns").passed);

  // A new family under the defaults is a note with its time; the totals fail on the growth.
  const GateOutcome grown = Evaluate(fused, unfused, DefaultGateRules(fused));
  CHECK_FALSE(Find(grown, "totals.kernel_ns").passed);
  CHECK(grown.Failures() == 1);
  REQUIRE(grown.notes.size() == 1);
  CHECK(grown.notes[0] ==
        "new family (not in the baseline): families[\"triton_poi_add\"], which has 0.001 ms");

  // A rule that names the family: new is a move up from 0 (a failure), its mean not applicable.
  const GateRules named =
      Parse({{"rules",
              {{{"metric", "families[\"triton_poi_add\"].total_ns"}, {"max_increase_pct", 5}},
               {{"metric", "families[\"triton_poi_add\"].mean_ns"}, {"max", 1000}}}}});
  const GateOutcome appeared = Evaluate(fused, unfused, named);
  CHECK_FALSE(Find(appeared, "families[\"triton_poi_add\"].total_ns").passed);
  CHECK(Find(appeared, "families[\"triton_poi_add\"].total_ns").why.find("is new") !=
        std::string::npos);
  const GateOutcome without_mean = Evaluate(unfused, fused, named);
  const Check& mean = Find(without_mean, "families[\"triton_poi_add\"].mean_ns");
  CHECK_FALSE(mean.applicable);
  CHECK_FALSE(mean.value);

  // A vanished pass no rule judged is a note with the time it had.
  const Json with_extra = Report(Steps(1000, 20, 10), 1.0, 5000, "extra");
  const GateRules family_only = Parse(
      {{"rules", {{{"metric", "families[\"cublas_gemm\"].total_ns"}, {"max_increase_pct", 5}}}}});
  const GateOutcome pass_gone = Evaluate(with_extra, fused, family_only);
  REQUIRE(pass_gone.notes.size() == 1);
  CHECK(pass_gone.notes[0] ==
        "vanished pass (not in the current report): passes[\"step/extra\"], which had 0.000 ms");

  // In neither report: a name the rules got wrong, which no gate may pass over.
  const GateRules typo = Parse(
      {{"rules", {{{"metric", "families[\"cublas_gem\"].total_ns"}, {"max_increase_pct", 5}}}}});
  StatusOr<GateOutcome> refused =
      EvaluateGate(LoadedReport::FromDocument(fused), LoadedReport::FromDocument(unfused), typo);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kNotFound);
  CHECK(refused.status().message().find("is in neither report") != std::string::npos);
}

TEST_CASE("a metric neither report measured is not applicable, one the current lost fails",
          "[unit][gate]") {
  Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000);
  Json unmeasured = baseline;
  unmeasured["processes"][0]["loss"]["dropped_records"] = nullptr;  // an import: not measured
  const GateRules rules = Parse(
      {{"rules",
        {{{"metric", "loss.dropped_records"}, {"max", 0}},
         {{"metric", "passes[\"step/forward\"].device.total_ns"}, {"max_increase_pct", 5}}}}});

  const GateOutcome both = Evaluate(unmeasured, unmeasured, rules);
  CHECK(both.Passed());
  CHECK(both.NotApplicable() == 1);
  const Check& not_applicable = Find(both, "loss.dropped_records");
  CHECK_FALSE(not_applicable.applicable);
  CHECK(not_applicable.method == "not applicable");
  CHECK(not_applicable.why.find("neither report measured it") != std::string::npos);
  CHECK_FALSE(not_applicable.value);
  CHECK(RenderGateTable(both).find("1 not applicable") != std::string::npos);
  CHECK(RenderGateJunit(both).find("skipped=\"1\"") != std::string::npos);
  CHECK(RenderGateJunit(both).find("<skipped message=\"not applicable: ") != std::string::npos);
  CHECK(GateOutcomeJson(both)["checks_not_applicable"] == 1);
  CHECK(GateOutcomeJson(both)["checks"][0]["verdict"] == "not_applicable");

  // Measured in the baseline, null now: a failure that says what was lost.
  const GateOutcome lost = Evaluate(baseline, unmeasured, rules);
  CHECK(lost.Failures() == 1);
  const Check& failed = Find(lost, "loss.dropped_records");
  CHECK_FALSE(failed.passed);
  CHECK(failed.applicable);
  CHECK(failed.why.find("measured in the baseline, but null (not measured) in the current") !=
        std::string::npos);
  CHECK(failed.baseline == 0.0);
  CHECK_FALSE(failed.value);

  // Null in the baseline only: an absolute bound still judges the current value.
  const GateOutcome gained = Evaluate(unmeasured, baseline, rules);
  CHECK(gained.Passed());
  CHECK(Find(gained, "loss.dropped_records").applicable);
  CHECK(Find(gained, "loss.dropped_records").method == "absolute");
}

TEST_CASE("outputs: table, markdown, JUnit and JSON agree on the counts", "[unit][gate]") {
  const Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000);
  Json current = Report(Steps(1100, 20, 10), 0.8, 5000);
  current["summary"]["families"][0]["family"] = "cublas_gemm";
  const GateOutcome outcome = Evaluate(baseline, current, DefaultGateRules(baseline));
  REQUIRE(outcome.Failures() == 4);  // coverage, step, step/forward, the forward phase
  const std::string table = RenderGateTable(outcome);
  CHECK(table.find("gpuattr gate: FAIL") != std::string::npos);
  const std::string junit = RenderGateJunit(outcome);
  CHECK(junit.find("tests=\"" + std::to_string(outcome.checks.size()) + "\" failures=\"4\"") !=
        std::string::npos);
  size_t failures = 0;
  for (size_t at = junit.find("<failure "); at != std::string::npos;
       at = junit.find("<failure ", at + 1)) {
    ++failures;
  }
  CHECK(failures == 4);
  CHECK(junit.find("passes[&quot;step/forward&quot;]") != std::string::npos);
  const std::string markdown = RenderGateMarkdown(outcome);
  CHECK(markdown.find("## gpuattr gate: **FAIL**") != std::string::npos);
  CHECK(markdown.find("| **FAIL** |") != std::string::npos);
  // Failed checks come first in the markdown, whatever their order in the outcome.
  const size_t first_row = markdown.find("|---|");
  REQUIRE(first_row != std::string::npos);
  const size_t last_fail = markdown.rfind("| **FAIL** |");
  const size_t first_pass = markdown.find("| pass |");
  REQUIRE(first_pass != std::string::npos);
  CHECK(last_fail < first_pass);
  // ... and the outcome itself has a passed check before a failed one, so the order was made.
  const auto first_passed = std::find_if(outcome.checks.begin(), outcome.checks.end(),
                                         [](const Check& check) { return check.passed; });
  CHECK(std::any_of(first_passed, outcome.checks.end(),
                    [](const Check& check) { return !check.passed; }));
  const Json json = GateOutcomeJson(outcome);
  CHECK(json["verdict"] == "fail");
  CHECK(json["checks_failed"] == 4);
}

TEST_CASE("JUnit carries the gate's time and timestamp when they were measured", "[unit][gate]") {
  const Json report = Report(Steps(1000, 20, 10), 1.0, 5000);
  GateOutcome outcome = Evaluate(report, report, DefaultGateRules(report));
  const std::string unmeasured = RenderGateJunit(outcome);
  CHECK(unmeasured.find("time=") == std::string::npos);  // never a made-up 0
  CHECK(unmeasured.find("timestamp=") == std::string::npos);
  outcome.started_realtime_ns = 1700000000123456789u;  // 2023-11-14T22:13:20.123 UTC
  outcome.duration_ns = 1500000000u;
  const std::string junit = RenderGateJunit(outcome);
  CHECK(junit.find("<testsuites name=\"gpuattr gate\" tests=\"") != std::string::npos);
  CHECK(junit.find("errors=\"0\" time=\"1.500\">") != std::string::npos);
  CHECK(junit.find("time=\"1.500\" timestamp=\"2023-11-14T22:13:20\" skipped=\"0\">") !=
        std::string::npos);
}

TEST_CASE("hostile names cannot break the markdown table or the XML", "[unit][gate]") {
  GateOutcome outcome;
  Check check;
  check.rule = "r|<b>&\x01";
  check.metric = "families[\"a|`b`<c>\"].total_ns";
  check.passed = false;
  check.why = "x\ny</failure>";
  outcome.checks.push_back(check);
  const std::string markdown = RenderGateMarkdown(outcome);
  CHECK(markdown.find("r\\|&lt;b&gt;&amp;?") != std::string::npos);
  CHECK(markdown.find("a\\|'b'<c>") != std::string::npos);  // in a code span
  const std::string junit = RenderGateJunit(outcome);
  CHECK(junit.find("</failure></failure>") == std::string::npos);
  CHECK(junit.find("y&lt;/failure&gt;") != std::string::npos);
  CHECK(junit.find('\x01') == std::string::npos);
}

TEST_CASE("diff: passes and families sorted by absolute change, new and vanished listed",
          "[unit][gate]") {
  const Json baseline = Report(Steps(1000, 20, 10), 1.0, 5000, "gone");
  Json current = Report(Steps(1200, 20, 10), 0.9, 4000, "fresh");
  current["summary"]["families"].push_back({{"family", "nccl_AllReduce"}, {"total_ns", 7}});
  const Json diff = DiffReports(baseline, current);
  const Json& process = diff["processes"][0];
  CHECK(process["matched_by"] == "only process");
  CHECK(process["passes"][0]["path"] == Json({"step"}));
  CHECK(process["passes"][0]["total_ns"]["delta"] == 4000.0);
  CHECK(process["passes"][0]["total_ns"]["delta_pct"] ==
        Approx(4000.0 / 20570 * 100));  // rows sum to 20570
  CHECK(process["new_passes"] == Json::array({Json::array({"step", "fresh"})}));
  CHECK(process["vanished_passes"] == Json::array({Json::array({"step", "gone"})}));
  CHECK(diff["families"][0]["family"] == "cublas_gemm");
  CHECK(diff["new_families"] == Json({"nccl_AllReduce"}));
  // On the side that lacks it, a family's or pass's amounts are 0: the change is its time.
  const Json& fresh_family = diff["families"][1];
  CHECK(fresh_family["family"] == "nccl_AllReduce");
  CHECK(fresh_family["total_ns"] ==
        Json({{"baseline", 0.0}, {"current", 7.0}, {"delta", 7.0}, {"delta_pct", nullptr}}));
  for (const Json& pass : process["passes"]) {
    if (pass["path"] == Json({"step", "gone"})) CHECK(pass["total_ns"]["current"] == 0.0);
    if (pass["path"] == Json({"step", "fresh"})) CHECK(pass["total_ns"]["baseline"] == 0.0);
  }
  CHECK(diff["coverage"]["delta"].get<double>() == Approx(-0.1));
  CHECK(process["devices"][0]["busy_ns"]["delta"] == 0.0);
  const std::string view = RenderDiff(diff, 10);
  CHECK(view.find("New passes: step/fresh") != std::string::npos);
  CHECK(view.find("Vanished families") == std::string::npos);
  // Untrusted input: anything at all renders.
  CHECK_NOTHROW(RenderDiff(DiffReports(Json::array(), Json("x")), 5));
}

}  // namespace
}  // namespace gpuattr::collector::testing
