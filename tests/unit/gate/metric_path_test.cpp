// Metric paths: parsing and the canonical spelling, resolution against a report (scopes, pass
// paths, families, device maxima, summed loss), per-step values, and refusals that name the path.
#include "gate/metric_path.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace gpuattr::collector::testing {
namespace {

using Json = nlohmann::json;

Json Row(int64_t forward, int64_t backward) {
  return {{"forward_ns", forward}, {"backward_ns", backward},
          {"recompute_ns", 0},     {"optimizer_ns", 0},
          {"loss_ns", 0},          {"other_ns", 0},
          {"host_ns", 1000},       {"busy_ns", forward + backward}};
}

// One process: step > forward (60) and step > backward (40 + a child `bwd_inner` in backward
// phase with 0 and a child `fwd_in_bwd` with forward phase 10); two step rows.
Json Process(uint64_t pid, uint64_t rank) {
  const Json forward = {{"name", "forward"},
                        {"phase", "forward"},
                        {"children", Json::array()},
                        {"device", {{"self_ns", 60}, {"total_ns", 60}}}};
  const Json inner = {{"name", "fwd_in_bwd"},
                      {"phase", "forward"},
                      {"children", Json::array()},
                      {"device", {{"self_ns", 10}, {"total_ns", 10}}}};
  const Json backward = {{"name", "backward"},
                         {"phase", "backward"},
                         {"children", {inner}},
                         {"device", {{"self_ns", 40}, {"total_ns", 50}}}};
  const Json step = {{"name", "step"},
                     {"phase", nullptr},
                     {"children", {forward, backward}},
                     {"device", {{"self_ns", 0}, {"total_ns", 110}}}};
  return {{"pid", pid},
          {"rank", rank},
          {"passes", {step}},
          {"phases",
           {{"forward_ns", 70},
            {"backward_ns", 40},
            {"recompute_ns", 0},
            {"optimizer_ns", 0},
            {"loss_ns", 0},
            {"other_ns", 0}}},
          {"steps", {{"rows", {Row(30, 20), Row(40, 20)}}, {"summary", {{"forward_ns", 30}}}}},
          {"devices", {{{"id", 0}, {"idle_fraction", 0.25}}, {{"id", 1}, {"idle_fraction", 0.5}}}},
          {"loss", {{"dropped_records", 2}}}};
}

Json Report(int processes) {
  Json report = {{"schema_version", "gpuattr.report/1"},
                 {"processes", Json::array()},
                 {"summary",
                  {{"coverage", {{"attributed_fraction", 0.9}, {"threshold", 0.95}}},
                   {"families", {{{"family", "cublas_gemm"}, {"total_ns", 80}}}}}}};
  for (int i = 0; i < processes; ++i) {
    report["processes"].push_back(
        Process(100 + static_cast<uint64_t>(i), static_cast<uint64_t>(i)));
  }
  return report;
}

MetricValue Resolve(const Json& report, const std::string& text) {
  StatusOr<MetricPath> path = ParseMetricPath(text);
  REQUIRE(path.ok());
  StatusOr<MetricValue> value = ResolveMetric(LoadedReport::FromDocument(report), *path);
  INFO(value.status().message());
  REQUIRE(value.ok());
  return *value;
}

Status Refusal(const Json& report, const std::string& text) {
  StatusOr<MetricPath> path = ParseMetricPath(text);
  REQUIRE(path.ok());
  StatusOr<MetricValue> value = ResolveMetric(LoadedReport::FromDocument(report), *path);
  REQUIRE_FALSE(value.ok());
  return value.status();
}

TEST_CASE("metric paths parse and print canonically", "[unit][gate]") {
  for (const char* text : {"coverage.attributed_fraction", "devices[0].idle_fraction",
                           "passes[\"step/forward\"].device.total_ns",
                           "families[\"gemm<a|b>\"].total_ns", "process[rank=3].phases.forward_ns",
                           "process[pid=42].loss.dropped_records", "summary.coverage.threshold",
                           "passes[[\"a/b\",\"c\"]].device.self_ns", "families[*].total_ns"}) {
    StatusOr<MetricPath> path = ParseMetricPath(text);
    INFO(text);
    REQUIRE(path.ok());
    CHECK(FormatMetricPath(*path) == text);
  }
  // A bare name is accepted and printed quoted.
  CHECK(FormatMetricPath(*ParseMetricPath("passes[step/forward].device.total_ns")) ==
        "passes[\"step/forward\"].device.total_ns");
  for (const char* bad : {"", "a..b", "a[", "process[rank=x].a", "a[*].b[*]", "a.b c",
                          "passes[\"unterminated].x", "a[[1]]"}) {
    INFO(bad);
    const StatusOr<MetricPath> path = ParseMetricPath(bad);
    REQUIRE_FALSE(path.ok());
    CHECK(path.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("metric paths resolve in the summary, the only process, or a scoped one",
          "[unit][gate]") {
  const Json one = Report(1);
  CHECK(Resolve(one, "coverage.attributed_fraction").value == 0.9);
  CHECK(Resolve(one, "families[\"cublas_gemm\"].total_ns").value == 80);
  CHECK(Resolve(one, "passes[\"step/backward/fwd_in_bwd\"].device.total_ns").value == 10);
  CHECK(Resolve(one, "devices[1].idle_fraction").value == 0.5);
  CHECK(Resolve(one, "device.idle_fraction").value == 0.5);  // the maximum over devices
  CHECK(Resolve(one, "loss.dropped_records").value == 2);
  const Json two = Report(2);
  CHECK(Resolve(two, "loss.dropped_records").value == 4);  // summed over processes
  CHECK(Resolve(two, "process[rank=1].phases.forward_ns").value == 70);
  CHECK(Resolve(two, "process[pid=100].passes[step].device.total_ns").value == 110);
  const Status ambiguous = Refusal(two, "phases.forward_ns");
  CHECK(ambiguous.code() == StatusCode::kNotFound);
  CHECK(ambiguous.message().find("ambiguous") != std::string::npos);
  // A pass or family that is not there resolves as absent: its amounts are 0, measured; its
  // other fields are not measured. A field a present one lacks is still not found.
  const MetricValue absent = Resolve(one, "passes[\"step/nothing\"].device.total_ns");
  CHECK(absent.absent == "pass [\"step\",\"nothing\"]");
  CHECK(absent.measured);
  CHECK(absent.value == 0);
  const MetricValue no_mean = Resolve(one, "families[\"triton_poi\"].mean_ns");
  CHECK(no_mean.absent == "family \"triton_poi\"");
  CHECK_FALSE(no_mean.measured);
  const Status no_field = Refusal(one, "passes[\"step/backward\"].device.nothing_ns");
  CHECK(no_field.message().find("no field 'nothing_ns'") != std::string::npos);
  // A null (not measured) resolves, marked as such: the gate judges it (gate_test.cpp).
  Json nulled = one;
  nulled["processes"][0]["loss"]["dropped_records"] = nullptr;
  const MetricValue unmeasured = Resolve(nulled, "loss.dropped_records");
  CHECK_FALSE(unmeasured.measured);
  CHECK(unmeasured.not_measured == "null");
  CHECK(Resolve(one, "loss.dropped_records").measured);
  Json two_nulled = two;
  two_nulled["processes"][1]["loss"]["dropped_records"] = nullptr;
  CHECK(Resolve(two_nulled, "loss.dropped_records").not_measured == "null in a process");
  nulled["summary"]["coverage"]["attributed_fraction"] = nullptr;
  CHECK(Resolve(nulled, "coverage.attributed_fraction").not_measured == "null");
  nulled["summary"]["coverage"]["attributed_fraction"] = "0.9";
  CHECK(Refusal(nulled, "coverage.attributed_fraction").message().find("not a number") !=
        std::string::npos);
  CHECK(Refusal(one, "process[rank=7].phases.forward_ns").message().find("rank 7") !=
        std::string::npos);
  CHECK(Refusal(Json::array(), "coverage.threshold").code() == StatusCode::kNotFound);
}

TEST_CASE("per-step values come from the step rows when they hold the metric", "[unit][gate]") {
  const Json one = Report(1);
  CHECK(*Resolve(one, "phases.backward_ns").per_step == std::vector<double>{20, 20});
  CHECK(*Resolve(one, "steps.summary.forward_ns").per_step == std::vector<double>{30, 40});
  // step holds all forward and backward time: its rows are forward + backward.
  CHECK(*Resolve(one, "passes[step].device.total_ns").per_step == std::vector<double>{50, 60});
  // backward (self) holds all backward time; its total also holds forward time shared with
  // `forward`: no per-step values, and the note says why.
  CHECK(*Resolve(one, "passes[\"step/backward\"].device.self_ns").per_step ==
        std::vector<double>{20, 20});
  const MetricValue shared = Resolve(one, "passes[\"step/forward\"].device.total_ns");
  CHECK_FALSE(shared.per_step.has_value());
  CHECK(shared.per_step_note.find("shares its phases") != std::string::npos);
  CHECK_FALSE(Resolve(one, "families[cublas_gemm].total_ns").per_step.has_value());
  Json no_steps = one;
  no_steps["processes"][0]["steps"] = nullptr;
  no_steps["processes"][0]["steps_reason"] = "no step range";
  CHECK(Resolve(no_steps, "phases.forward_ns").per_step_note.find("no step rows") !=
        std::string::npos);
}

TEST_CASE("wildcards expand over every pass node and every family", "[unit][gate]") {
  const Json one = Report(1);
  StatusOr<std::vector<MetricPath>> passes = ExpandWildcard(
      LoadedReport::FromDocument(one), *ParseMetricPath("passes[*].device.total_ns"));
  REQUIRE(passes.ok());
  std::vector<std::string> names;
  for (const MetricPath& p : *passes) names.push_back(FormatMetricPath(p));
  CHECK(names == std::vector<std::string>{"passes[\"step\"].device.total_ns",
                                          "passes[\"step/forward\"].device.total_ns",
                                          "passes[\"step/backward\"].device.total_ns",
                                          "passes[\"step/backward/fwd_in_bwd\"].device.total_ns"});
  StatusOr<std::vector<MetricPath>> families =
      ExpandWildcard(LoadedReport::FromDocument(one), *ParseMetricPath("families[*].total_ns"));
  REQUIRE(families.ok());
  REQUIRE(families->size() == 1);
  CHECK(FormatMetricPath((*families)[0]) == "families[\"cublas_gemm\"].total_ns");
}

TEST_CASE("a path into the step rows reads them from their columns", "[unit][gate]") {
  // LoadReport keeps step rows in columns (report/step_row_columns.h), not in the document.
  const Json one = Report(1);
  CHECK(Resolve(one, "steps.rows[1].busy_ns").value == 60);
  CHECK(Resolve(one, "steps.rows[0].forward_ns").value == 30);
  CHECK_THAT(Refusal(one, "steps.rows[2].busy_ns").message(),
             Catch::Contains("steps.rows[2].busy_ns is missing: no element [2]"));
  CHECK_THAT(Refusal(one, "steps.rows[0].nothing").message(),
             Catch::Contains("no field 'nothing'"));
  // Rows share their names, so [*] expands them by index.
  StatusOr<std::vector<MetricPath>> rows =
      ExpandWildcard(LoadedReport::FromDocument(one), *ParseMetricPath("steps.rows[*].busy_ns"));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK(FormatMetricPath((*rows)[1]) == "steps.rows[1].busy_ns");
}

}  // namespace
}  // namespace gpuattr::collector::testing
