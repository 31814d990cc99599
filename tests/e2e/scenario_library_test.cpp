// End-to-end on the issue-3 scenario library (tests/scenarios/README.md): each scenario runs on the
// simulated GPU under `gpuattr run --activities`, and the report must agree with the contract of
// docs/attribution.md as derived from the simulator's truth (scenario_contract_check.h), then with
// what each scenario is about.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "scenario_contract_check.h"
#include "test_files.h"
#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::TempDir;

TEST_CASE("the GPU course block: fusion ratios from the families", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "gpu_course_block");
  CheckContract(run);
  const json& process = run.report["processes"][0];
  const json& truth = run.truth["processes"][0];

  // Group the truth's kernels by the range that launched them: linear, eager, fused.
  std::map<std::string, std::set<std::string>> names_by_group;
  std::map<std::string, uint64_t> truth_ns_by_name;
  std::map<std::string, uint64_t> truth_ns_by_group;
  for (const json& activity : truth["activities"]) {
    const std::string group = activity["range_path"][0].get<std::string>();
    const std::string name = Demangle(activity["name"].get<std::string>());
    names_by_group[group].insert(name);
    truth_ns_by_name[name] += Duration(activity);
    truth_ns_by_group[group] += Duration(activity);
  }
  REQUIRE(names_by_group.size() == 3);
  CHECK(names_by_group["eager"].size() == 4);  // mul, add (twice), gelu, clamp

  // Each family belongs to one group; its total is the truth's sum over its names.
  REQUIRE(process["families"].is_array());
  std::map<std::string, uint64_t> family_ns_by_group;
  for (const json& family : process["families"]) {
    INFO("family " << family.dump());
    std::set<std::string> groups;
    uint64_t truth_ns = 0;
    REQUIRE(family["names"].size() < 5);  // fewer than the cap: the list is complete
    for (const json& name : family["names"]) {
      for (const auto& [group, names] : names_by_group) {
        if (names.count(name.get<std::string>()) != 0) groups.insert(group);
      }
      truth_ns += truth_ns_by_name[name.get<std::string>()];
    }
    REQUIRE(groups.size() == 1);
    CHECK(family["total_ns"] == truth_ns);
    family_ns_by_group[*groups.begin()] += family["total_ns"].get<uint64_t>();
  }
  CHECK(family_ns_by_group == truth_ns_by_group);

  const double gemm = static_cast<double>(family_ns_by_group["linear"]);
  const double eager = static_cast<double>(family_ns_by_group["eager"]);
  const double fused = static_cast<double>(family_ns_by_group["fused"]);
  const double truth_gemm = static_cast<double>(truth_ns_by_group["linear"]);
  const double truth_eager = static_cast<double>(truth_ns_by_group["eager"]);
  const double truth_fused = static_cast<double>(truth_ns_by_group["fused"]);
  CHECK(Near(eager / fused, truth_eager / truth_fused));
  CHECK(Near((gemm + eager) / (gemm + fused),
             (truth_gemm + truth_eager) / (truth_gemm + truth_fused)));
  // The lesson's numbers: 1.512 / 0.410 and (6.24 + 1.512) / (6.24 + 0.410).
  CHECK(eager / fused == Approx(1.512 / 0.410).epsilon(1e-9));
  CHECK((gemm + eager) / (gemm + fused) == Approx(7.752 / 6.650).epsilon(1e-9));
}

TEST_CASE("a graph-replayed microstep: captured attribution and 0.16 % idle", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "graph_microstep");
  const auto expected = CheckContract(run);
  const json& process = run.report["processes"][0];
  const json& truth = run.truth["processes"][0];
  REQUIRE(truth["activities"].size() == 2 * 4948);
  for (const ContractActivity& a : expected[0].activities) REQUIRE(a.attribution == "captured");

  const ExpectedProcess device = ExpectFromTruth(run.truth)[0];
  const json& report_device = process["devices"][0];
  const double idle = static_cast<double>(device.devices.begin()->second.idle_ns) /
                      static_cast<double>(device.devices.begin()->second.span_ns);
  CheckFraction(report_device["idle_fraction"], idle);
  // The scenario's shape: the second replay is enqueued while the first runs. The scenario is on
  // the simulated clock, so that holds however slowly a loaded or sanitized machine submits.
  CHECK(idle > 0.0014);
  CHECK(idle < 0.0018);

  // The launch context: every captured nanosecond was launched inside train_step.
  for (const auto& [path, pass] : FlattenPasses(process)) {
    const uint64_t captured = pass["attribution"]["captured_ns"].get<uint64_t>();
    if (captured == 0) continue;
    INFO("pass " << json(path).dump());
    REQUIRE(pass["launch_contexts"].size() == 1);
    CHECK(pass["launch_contexts"][0]["path"] == json::array({"train_step"}));
    CHECK(pass["launch_contexts"][0]["ns"] == captured);
  }
}

TEST_CASE("activation checkpointing: recompute inside backward is measured", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "activation_checkpointing");
  const auto expected = CheckContract(run);
  CHECK(expected[0].phase_ns.at("recompute") > 0);
  const json& phases = run.report["processes"][0]["phases"];
  CHECK(phases["recompute_fraction"].get<double>() > 0.5);
}

TEST_CASE("autograd threads: backward inherited from the main thread, and --no-inherit",
          "[e2e][library]") {
  TempDir inherit_dir;
  const Run inherit = RunLibraryScenario(inherit_dir, "autograd_threads");
  const auto with = CheckContract(inherit);
  uint64_t inherited = 0;
  for (const ContractActivity& a : with[0].activities) {
    if (a.attribution == "inherited") {
      ++inherited;
      CHECK(a.path == Path{"step", "backward"});
    }
  }
  CHECK(inherited == 3 * 4);

  TempDir no_inherit_dir;
  const Run no_inherit = RunLibraryScenario(no_inherit_dir, "autograd_threads", {"--no-inherit"});
  ContractOptions options;
  options.inherit = false;
  CheckContract(no_inherit, options);
  CHECK(no_inherit.report["capture"]["inherit"] == false);
  const json& on = inherit.report["processes"][0]["coverage"];
  const json& off = no_inherit.report["processes"][0]["coverage"];
  CHECK(off["attributed_fraction"].get<double>() < on["attributed_fraction"].get<double>());
  CHECK(on["by_phase"]["backward"] == 1.0);
  CHECK(off["by_phase"]["backward"].get<double>() < 0.1);
  CHECK(off["by_phase"]["forward"] == on["by_phase"]["forward"]);
}

TEST_CASE(
    "DDP's reducer on autograd's thread: work between and after its evaluate ops is backward, "
    "a pin-memory thread's is not",
    "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "ddp_reducer_thread");
  CheckContract(run);
  // What the scenario says each thread did, from the truth alone: the autograd thread's work
  // after its first evaluate op of the step, outside its ranges or in one naming no phase (2
  // bucket copies, the division in `aten::div_`, the copy back), is backward, like its evaluate
  // ops' kernels; its memset before the first one and the pin-memory thread's copy are the
  // step's (other); the all-reduces are communication.
  const std::string evaluate = "autograd::engine::evaluate_function: AddmmBackward0";
  uint64_t evaluate_ns = 0;
  uint64_t reducer_ns = 0;
  uint64_t reducer_activities = 0;
  uint64_t before_first_op_ns = 0;
  uint64_t pin_memory_ns = 0;
  for (const json& a : run.truth["processes"][0]["activities"]) {
    const json& path = a["range_path"];
    if (a["thread"] == "pin_memory") {
      pin_memory_ns += Duration(a);
    } else if (a["thread"] != "autograd" || path == json::array({"nccl:all_reduce"})) {
      continue;
    } else if (path == json::array({evaluate})) {
      evaluate_ns += Duration(a);
    } else if (a["kind"] == "memset") {
      before_first_op_ns += Duration(a);
    } else {
      CHECK((a["attribution"] == "inherited" || path == json::array({"aten::div_"})));
      reducer_ns += Duration(a);
      ++reducer_activities;
    }
  }
  CHECK(reducer_activities == 3 * 4);
  REQUIRE(reducer_ns > 0);
  REQUIRE(before_first_op_ns > 0);
  REQUIRE(pin_memory_ns > 0);
  const json& phases = run.report["processes"][0]["phases"];
  CHECK(phases["backward_ns"] == evaluate_ns + reducer_ns);
  CHECK(phases["other_ns"] == before_first_op_ns + pin_memory_ns);
  uint64_t step_backward_ns = 0;
  for (const json& row : run.report["processes"][0]["steps"]["rows"]) {
    step_backward_ns += row["backward_ns"].get<uint64_t>();
  }
  CHECK(step_backward_ns == evaluate_ns + reducer_ns);

  // Without inheritance the reducer's range-less work has no path, so no phase; the division's
  // own range still makes it backward.
  TempDir no_inherit_dir;
  const Run no_inherit = RunLibraryScenario(no_inherit_dir, "ddp_reducer_thread", {"--no-inherit"});
  ContractOptions options;
  options.inherit = false;
  CheckContract(no_inherit, options);
  uint64_t division_ns = 0;
  uint64_t no_inherit_evaluate_ns = 0;
  for (const json& a : no_inherit.truth["processes"][0]["activities"]) {
    if (a["range_path"] == json::array({"aten::div_"})) division_ns += Duration(a);
    if (a["range_path"] == json::array({evaluate})) no_inherit_evaluate_ns += Duration(a);
  }
  REQUIRE(division_ns > 0);
  CHECK(no_inherit.report["processes"][0]["phases"]["backward_ns"] ==
        no_inherit_evaluate_ns + division_ns);
}

TEST_CASE("communication overlap: busy is the union of the streams", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "comm_overlap");
  CheckContract(run);
  const ExpectedProcess truth = ExpectFromTruth(run.truth)[0];
  const uint64_t sum = truth.kernel_ns + truth.memcpy_ns + truth.memset_ns;
  const json& device = run.report["processes"][0]["devices"][0];
  CHECK(device["busy_ns"].get<uint64_t>() < sum);
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> by_stream;
  // The truth's activities by category: NCCL kernels, other kernels, copies and sets.
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> by_category;
  uint64_t all_reduce_ns = 0;
  for (const json& a : run.truth["processes"][0]["activities"]) {
    by_stream[a["stream"].get<uint64_t>()].emplace_back(a["start_ns"], a["end_ns"]);
    const bool nccl = a["kind"] == "kernel" && a["name"].get<std::string>().rfind("nccl", 0) == 0;
    const std::string category = a["kind"] != "kernel" ? "memory"
                                 : nccl                ? "communication"
                                                       : "compute";
    by_category[category].emplace_back(a["start_ns"], a["end_ns"]);
    if (nccl) all_reduce_ns += a["end_ns"].get<uint64_t>() - a["start_ns"].get<uint64_t>();
  }
  REQUIRE(device["streams"].size() == 2);
  for (const json& stream : device["streams"]) {
    INFO("stream " << stream["id"]);
    const auto& intervals = by_stream[stream["id"].get<uint64_t>()];
    CHECK(stream["busy_ns"] == UnionLength(intervals));
    uint64_t first = intervals.front().first;
    uint64_t last = 0;
    for (const auto& [start, end] : intervals) {
      first = std::min(first, start);
      last = std::max(last, end);
    }
    CHECK(stream["idle_ns"] == last - first - UnionLength(intervals));
  }
  // Compute, communication and the overlap of the two (docs/attribution.md §Compute,
  // communication and memory), from the truth's intervals.
  const json& categories = device["categories"];
  const uint64_t compute = UnionLength(by_category["compute"]);
  const uint64_t communication = UnionLength(by_category["communication"]);
  auto both = by_category["compute"];
  both.insert(both.end(), by_category["communication"].begin(), by_category["communication"].end());
  const uint64_t hidden = compute + communication - UnionLength(both);
  CHECK(communication > 0);
  CHECK(hidden > 0);  // the scenario overlaps its all-reduce with compute
  CHECK(categories["compute_ns"] == compute);
  CHECK(categories["communication_ns"] == communication);
  CHECK(categories["memory_ns"] == UnionLength(by_category["memory"]));
  CHECK(categories["communication_hidden_ns"] == hidden);
  CHECK(categories["communication_exposed_ns"] == communication - hidden);
  // Every all-reduce here is attributed: all of it is the communication phase term.
  CHECK(run.report["processes"][0]["phases"]["communication_ns"] == all_reduce_ns);
}

TEST_CASE("a data-loader-bound loop: host-bound gaps inside dataloader", "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "dataloader_bound");
  const auto expected = CheckContract(run);
  const ContractDevice& device = expected[0].devices.begin()->second;
  CHECK(device.host_bound_ns > 10'000'000);
  const json& largest = run.report["processes"][0]["devices"][0]["gaps"]["largest"];
  REQUIRE(largest.size() >= 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(largest[i]["class"] == "host_bound");
    CHECK(largest[i]["host_range"].back() == "dataloader");
  }
}

TEST_CASE("warm-up steps: --skip-steps 2 drops them from the rows and the summary",
          "[e2e][library]") {
  TempDir dir;
  const Run run = RunLibraryScenario(dir, "warmup_steps", {"--skip-steps", "2"});
  const auto expected = CheckContract(run, {}, 2);
  REQUIRE(expected[0].steps);
  const auto& rows = expected[0].steps->rows;
  REQUIRE(rows.size() == 7);
  for (size_t i = 2; i < rows.size(); ++i) {
    CHECK(rows[0].busy_ns > rows[i].busy_ns);  // the scenario's premise: warm-up is slow
    CHECK(rows[1].busy_ns > rows[i].busy_ns);
  }
  const json& summary = run.report["processes"][0]["steps"]["summary"];
  std::vector<uint64_t> all;
  for (const ContractStepRow& row : rows) all.push_back(row.busy_ns);
  const auto [all_lower, all_upper] = MedianBounds(all);
  REQUIRE(all_lower == all_upper);
  CHECK(summary["busy_ns"] != all_lower);
}
}  // namespace
}  // namespace gpuattr::e2e
