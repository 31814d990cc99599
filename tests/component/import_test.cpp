// `gpuattr import` on the real traces in ../shared/traces (PyTorch profiler / Kineto, recorded on
// A100 and MI300X GPUs by other projects): the report must reproduce the reference values of
// ../shared/traces/README.md exactly, validate against the schema, and show the attribution the
// traces imply. Also the exit status on inputs that are not traces.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "import_run.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::test {
namespace {

using nlohmann::json;
using test_support::TempDir;

const char* const kCheckpointedTrace = GPUATTR_SOURCE_DIR "/tests/data/pytorch_checkpointed.json";

struct Reference {
  std::string file;
  uint32_t device;
  int kernels;
  int memcpys;
  int memsets;
  uint64_t span_ns;
  uint64_t busy_ns;
  uint64_t idle_ns;
  std::map<uint32_t, uint64_t> stream_busy_ns;
};

// ../shared/traces/README.md, "Reference values", verbatim.
const std::vector<Reference> kReferences = {
    {"hta_2rank_sampled/sampled_rank-0.json.gz",
     0,
     1154,
     40,
     10,
     1222847000,
     547656000,
     675191000,
     {{203, 106140000}, {23, 7860000}, {25, 867000}, {7, 202918000}, {84, 290059000}}},
    {"hta_2rank_sampled/sampled_rank-1.json.gz",
     1,
     1104,
     40,
     10,
     1231186000,
     580050000,
     651136000,
     {{203, 104907000}, {23, 8496000}, {25, 12117000}, {7, 267864000}, {84, 274146000}}},
    {"hta_a100_alexnet_small/benchmark_result_2869224_1695835535_trace.json.gz",
     0,
     79,
     16,
     3,
     12920244000,
     66141000,
     12854103000,
     {{20, 1070000}, {7, 65133000}}},
    {"hta_a100_ddp_nccl/nccl_data.json.gz",
     0,
     2700,
     960,
     114,
     660551005,
     157500014,
     503050991,
     {{40, 46876493}, {7, 118309345}}},
    {"tracelens_mi300x_vllm_graph/graph_execution.json.gz",
     2,
     425,
     9,
     0,
     10743181,
     10717708,
     25473,
     {{0, 10717708}}},
};

TEST_CASE("gpuattr import reproduces the reference values of every shared trace",
          "[import][traces]") {
  for (const Reference& reference : kReferences) {
    INFO(reference.file);
    TempDir dir;
    const ImportRun run = Import(dir, {kTraces + reference.file});
    INFO(run.process.err);
    REQUIRE(run.process.exit_code == 0);
    const test_support::SchemaCheck schema = test_support::ValidateReport(dir.File("report.json"));
    INFO(schema.output);
    CHECK(schema.valid);
    CHECK(run.report["capture"]["mode"] == "import");
    CHECK(run.report["capture"]["source"]["format"] == "kineto");
    REQUIRE(run.report["processes"].size() == 1);
    const json& process = run.report["processes"][0];
    CHECK(process["totals"]["kernels"] == reference.kernels);
    CHECK(process["totals"]["memcpys"] == reference.memcpys);
    CHECK(process["totals"]["memsets"] == reference.memsets);
    REQUIRE(process["devices"].size() == 1);
    const json& device = process["devices"][0];
    CHECK(device["id"] == reference.device);
    CHECK(device["span_ns"] == reference.span_ns);
    CHECK(device["busy_ns"] == reference.busy_ns);
    CHECK(device["idle_ns"] == reference.idle_ns);
    std::map<uint32_t, uint64_t> streams;
    for (const json& stream : device["streams"]) {
      streams[stream["id"].get<uint32_t>()] = stream["busy_ns"].get<uint64_t>();
    }
    CHECK(streams == reference.stream_busy_ns);
    // Every activity is in the export, attributed or with a reason: none is dropped.
    CHECK(run.activities.size() ==
          static_cast<size_t>(reference.kernels + reference.memcpys + reference.memsets));
  }
}

TEST_CASE("gpuattr import: the two sampled ranks make one report with ranks 0 and 1",
          "[import][traces]") {
  TempDir dir;
  const ImportRun run = Import(dir, {kTraces + "hta_2rank_sampled/sampled_rank-1.json.gz",
                                     kTraces + "hta_2rank_sampled/sampled_rank-0.json.gz"});
  REQUIRE(run.process.exit_code == 0);
  CHECK(test_support::ValidateReport(dir.File("report.json")).valid);
  const json& processes = run.report["processes"];
  REQUIRE(processes.size() == 2);
  CHECK(processes[0]["rank"] == 0);
  CHECK(processes[0]["pid"] == 4037);
  CHECK(processes[1]["rank"] == 1);
  CHECK(processes[1]["pid"] == 4045);
  CHECK(processes[0]["totals"]["kernels"] == 1154);
  CHECK(processes[1]["totals"]["kernels"] == 1104);
  CHECK(processes[0]["devices"][0]["id"] == 0);
  CHECK(processes[1]["devices"][0]["id"] == 1);
}

TEST_CASE("gpuattr import: the MI300X graph launch's 421 kernels belong to its annotation",
          "[import][traces]") {
  TempDir dir;
  const ImportRun run =
      Import(dir, {kTraces + "tracelens_mi300x_vllm_graph/graph_execution.json.gz"});
  REQUIRE(run.process.exit_code == 0);
  std::map<uint64_t, std::vector<json>> by_correlation;
  for (const json& activity : run.activities) {
    if (activity["kind"] == "kernel") {
      by_correlation[activity["correlation_id"].get<uint64_t>()].push_back(activity);
    }
  }
  const std::vector<json>* graph = nullptr;
  for (const auto& [correlation, kernels] : by_correlation) {
    if (kernels.size() > 1) {
      CHECK(graph == nullptr);  // exactly one graph launch
      graph = &kernels;
    }
  }
  REQUIRE(graph != nullptr);
  CHECK(graph->size() == 421);
  for (const json& kernel : *graph) {
    REQUIRE(kernel["path"].size() == 1);
    CHECK(kernel["path"][0].get<std::string>().rfind("execute_32_context_0", 0) == 0);
    CHECK(kernel["attribution"] == "direct");
    CHECK(kernel["launch_ns"] == (*graph)[0]["launch_ns"]);
  }
}

TEST_CASE("gpuattr import: the DDP trace's pass tree shows its annotations and coverage",
          "[import][traces]") {
  TempDir dir;
  const std::string trace = kTraces + "hta_a100_ddp_nccl/nccl_data.json.gz";
  const ImportRun run = Import(dir, {trace});
  REQUIRE(run.process.exit_code == 0);
  const json& process = run.report["processes"][0];
  std::map<std::string, const json*> top;
  for (const json& node : process["passes"]) top[node["name"].get<std::string>()] = &node;
  REQUIRE(top.count("nccl:all_reduce") == 1);
  CHECK((*top["nccl:all_reduce"])["device"]["kernels"] == 15);
  // ProfilerStep#4, #5 and #6 are one pass.
  REQUIRE(top.count("ProfilerStep#*") == 1);
  CHECK((*top["ProfilerStep#*"])["instances"] == 3);
  std::vector<std::string> children;
  for (const json& child : (*top["ProfilerStep#*"])["children"]) {
    children.push_back(child["name"].get<std::string>());
  }
  CHECK(std::count(children.begin(), children.end(), "## forward ##") == 1);
  CHECK(std::count(children.begin(), children.end(), "## backward ##") == 1);
  CHECK(std::count(children.begin(), children.end(), "## optimizer ##") == 1);
  CHECK(process["coverage"]["attributed_fraction"] == 1.0);
  CHECK(process["coverage"]["by_phase"]["forward"] == 1.0);

  // The backward pass runs on autograd threads with no range open: attributed by inheritance,
  // and unattributed with its reason once inheritance is off.
  TempDir no_inherit_dir;
  const ImportRun strict = Import(no_inherit_dir, {trace}, {"--no-inherit"});
  REQUIRE(strict.process.exit_code == 0);
  const json& coverage = strict.report["processes"][0]["coverage"];
  CHECK(coverage["attributed_fraction"] < 1.0);
  REQUIRE(coverage["unattributed"].size() >= 1);
  CHECK(coverage["unattributed"][0]["reason"] == "no_open_range");
  CHECK(coverage["unattributed"][0]["activities"] > 0);
}

TEST_CASE("gpuattr import: phases, categories and stream idle equal an independent computation",
          "[import][traces][phases]") {
  for (const char* file :
       {"hta_2rank_sampled/sampled_rank-0.json.gz", "hta_2rank_sampled/sampled_rank-1.json.gz",
        "hta_a100_alexnet_small/benchmark_result_2869224_1695835535_trace.json.gz",
        "hta_a100_ddp_nccl/nccl_data.json.gz", "hta_a100_trace_diff_control/control.json.gz",
        "tracelens_h100_bert_small/gaunernst_bert-small-uncased__1016001.json.gz",
        "tracelens_mi300x_norm_layer/normalization_layer_test.json.gz",
        "tracelens_mi300x_vllm_graph/graph_execution.json.gz",
        // Ours, synthetic: modules, checkpoint recompute, flows and sequence numbers.
        kCheckpointedTrace}) {
    INFO(file);
    const std::string path = file[0] == '/' ? std::string(file) : kTraces + file;
    TempDir dir;
    const ImportRun run = Import(dir, {path});
    REQUIRE(run.process.exit_code == 0);
    const json reference = ReferencePhases(path);
    REQUIRE(run.report["processes"].size() == reference.size());
    for (const json& process : run.report["processes"]) {
      const json& expected =
          reference.at(std::to_string(process["pid"].get<uint64_t>())).at("phases");
      uint64_t sum = 0;
      for (const std::string& term : kPhaseTerms) {
        INFO(term);
        CHECK(process["phases"][term] == expected[term]);
        sum += process["phases"][term].get<uint64_t>();
      }
      uint64_t unattributed = 0;
      for (const json& entry : process["coverage"]["unattributed"]) {
        unattributed += entry["ns"].get<uint64_t>();
      }
      CHECK(unattributed == expected["unattributed_ns"]);
      const json& totals = process["totals"];
      CHECK(sum + unattributed == totals["kernel_ns"].get<uint64_t>() +
                                      totals["memcpy_ns"].get<uint64_t>() +
                                      totals["memset_ns"].get<uint64_t>());
      const json& want_steps =
          reference.at(std::to_string(process["pid"].get<uint64_t>())).at("steps");
      if (process["steps"].is_object() && process["steps"]["range"] == "ProfilerStep#*") {
        const json& rows = process["steps"]["rows"];
        REQUIRE(rows.size() == want_steps.size());
        for (size_t i = 0; i < rows.size(); ++i) {
          for (const char* term : {"compute_busy_ns", "communication_busy_ns", "memory_busy_ns",
                                   "communication_hidden_ns", "communication_exposed_ns"}) {
            INFO("step row " << i << " " << term);
            CHECK(rows[i][term] == want_steps[i][term]);
          }
        }
      }
      const json& devices =
          reference.at(std::to_string(process["pid"].get<uint64_t>())).at("devices");
      REQUIRE(process["devices"].size() == devices.size());
      for (const json& device : process["devices"]) {
        const json& want = devices.at(std::to_string(device["id"].get<uint64_t>()));
        for (const char* term : {"compute_ns", "communication_ns", "memory_ns",
                                 "communication_hidden_ns", "communication_exposed_ns"}) {
          INFO(term);
          CHECK(device["categories"][term] == want[term]);
        }
        const json no_copies = json::object();
        const json& copies = want.contains("copies") ? want["copies"] : no_copies;
        REQUIRE(device["copies"].size() == copies.size());
        for (const json& copy : device["copies"]) {
          const std::string key = copy["direction"].get<std::string>() + "/" +
                                  copy["src_kind"].get<std::string>() + "/" +
                                  copy["dst_kind"].get<std::string>();
          INFO(key);
          CHECK(copy["copies"] == copies.at(key)["copies"]);
          CHECK(copy["ns"] == copies.at(key)["ns"]);
          CHECK(copy["bytes"].get<uint64_t>() == copies.at(key)["bytes"].get<uint64_t>());
        }
        REQUIRE(device["streams"].size() == want["streams"].size());
        for (const json& stream : device["streams"]) {
          CHECK(stream["idle_ns"] ==
                want["streams"].at(std::to_string(stream["id"].get<uint64_t>())));
        }
      }
    }
  }
}

// The step rows hold the backward the autograd threads launched while each ProfilerStep was open
// on the main thread (the README's "backward per step"), and all of the communication, which
// DDP's reducer launches from its own thread under nccl:* ranges outside the steps' paths.
void CheckStepBackward(const json& process, const std::vector<uint64_t>& backward) {
  const json& rows = process["steps"]["rows"];
  REQUIRE(rows.size() == backward.size());
  uint64_t communication = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(rows[i]["backward_ns"] == backward[i]);
    communication += rows[i]["communication_ns"].get<uint64_t>();
  }
  CHECK(communication == process["phases"]["communication_ns"]);
}

// ../shared/traces/README.md, "PyTorch phase reference values", made by another script with the
// host context of every op. nccl_data agrees term for term. control draws one boundary
// differently (docs/attribution.md §Imported traces): its loss ops are cpu_op events, which are
// not ranges without --ranges ops, so their time is forward here.
TEST_CASE("gpuattr import: the DDP traces' phase terms agree with the README's reference values",
          "[import][traces][phases]") {
  TempDir dir;
  const ImportRun nccl = Import(dir, {kTraces + "hta_a100_ddp_nccl/nccl_data.json.gz"});
  REQUIRE(nccl.process.exit_code == 0);
  // baseTimeNanoseconds + the earliest event (µs 4458676388068.751): the trace's own start.
  CHECK(nccl.report["capture"]["started_at"] == "2024-05-23T00:15:22.388068751Z");
  CHECK(nccl.report["capture"]["clock"] == "CLOCK_REALTIME");
  CHECK(nccl.report["capture"]["host"] == nullptr);
  const json& phases = nccl.report["processes"][0]["phases"];
  CHECK(phases["forward_ns"] == 38653688);
  CHECK(phases["backward_ns"] == 77577379);
  CHECK(phases["recompute_ns"] == 0);
  CHECK(phases["communication_ns"] == 46876493);
  CHECK(phases["optimizer_ns"] == 2078278);
  CHECK(phases["loss_ns"] == 0);
  CHECK(phases["other_ns"] == 0);
  const json& categories = nccl.report["processes"][0]["devices"][0]["categories"];
  CHECK(categories["compute_ns"] == 115655847);
  CHECK(categories["communication_ns"] == 46876493);
  CheckStepBackward(nccl.report["processes"][0], {25801995, 25726744, 26048640});

  TempDir control_dir;
  const ImportRun control =
      Import(control_dir, {kTraces + "hta_a100_trace_diff_control/control.json.gz"});
  REQUIRE(control.process.exit_code == 0);
  const json& terms = control.report["processes"][0]["phases"];
  CHECK(terms["forward_ns"] == 92602000 + 551000);
  CHECK(terms["backward_ns"] == 177967000);
  CHECK(terms["communication_ns"] == 163535000);
  CHECK(terms["optimizer_ns"] == 7642000);
  CHECK(terms["other_ns"] == 59270000);
  const json& device = control.report["processes"][0]["devices"][0]["categories"];
  CHECK(device["compute_ns"] == 281336000);
  CHECK(device["communication_ns"] == 163535000);
  CheckStepBackward(control.report["processes"][0],
                    {29059000, 29496000, 30041000, 30068000, 29644000, 29659000});
}

// The README's reference values for the with_modules traces. The README's `other` holds the
// activities no range encloses (0.021545 ms on normalization_layer_test), which are unattributed
// here. Backward is the autograd thread's, and by module: every module of the model has a row
// with both forward and backward time, and only AccumulateGrad is unlinked.
TEST_CASE("gpuattr import: the module traces' phase terms agree with the README's reference values",
          "[import][traces][phases]") {
  TempDir dir;
  const ImportRun norm =
      Import(dir, {kTraces + "tracelens_mi300x_norm_layer/normalization_layer_test.json.gz"});
  REQUIRE(norm.process.exit_code == 0);
  const json& process = norm.report["processes"][0];
  const json& phases = process["phases"];
  CHECK(phases["forward_ns"] == 425048);
  CHECK(phases["backward_ns"] == 522534);
  CHECK(phases["recompute_ns"] == 0);
  CHECK(phases["loss_ns"] == 49505);
  CHECK(phases["other_ns"] == 0);
  uint64_t unattributed = 0;
  for (const json& entry : process["coverage"]["unattributed"])
    unattributed += entry["ns"].get<uint64_t>();
  CHECK(unattributed == 21545);
  const json& pytorch = norm.report["capture"]["source"]["pytorch"];
  CHECK(pytorch["module_ranges"] == 36);
  CHECK(pytorch["linked_by_flow"] == 51);
  CHECK(pytorch["unlinked"] == 27);  // 9 parameters' AccumulateGrad in each of 3 iterations
  // Net_0's ten norm layers, MSELoss_0, and Net_0 itself, which launches nothing of its own.
  REQUIRE(process["modules"].size() == 12);
  uint64_t module_backward = 0;
  for (const json& row : process["modules"]) {
    INFO(row["path"].dump());
    CHECK(row["calls"] == 3);
    if (row["module"] == "nn.Module: Net_0") {
      CHECK(row["forward_ns"] == 0);
      CHECK(row["backward_ns"] == 0);
      continue;
    }
    CHECK((row["forward_ns"].get<uint64_t>() + row["loss_ns"].get<uint64_t>()) > 0);
    CHECK(row["backward_ns"] > 0);
    module_backward += row["backward_ns"].get<uint64_t>();
  }
  uint64_t unlinked = 0;
  for (const json& root : process["passes"]) {
    if (root["name"] == "backward_unlinked") unlinked = root["device"]["total_ns"];
  }
  CHECK(unlinked > 0);
  CHECK(module_backward + unlinked == 522534);

  TempDir bert_dir;
  const ImportRun bert =
      Import(bert_dir,
             {kTraces + "tracelens_h100_bert_small/gaunernst_bert-small-uncased__1016001.json.gz"});
  REQUIRE(bert.process.exit_code == 0);
  CHECK(bert.report["processes"][0]["phases"]["forward_ns"] == 309437);
  CHECK(bert.report["processes"][0]["phases"]["backward_ns"] == 0);
  CHECK(bert.report["processes"][0]["modules"].size() > 1);
}

TEST_CASE("gpuattr import: inputs that are not traces exit 3 with a message", "[import]") {
  TempDir dir;
  const std::string real = test_support::ReadFile(
      kTraces + "hta_a100_alexnet_small/benchmark_result_2869224_1695835535_trace.json.gz");
  REQUIRE(real.size() > 1000);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.File(name), std::ios::binary) << bytes;
    return dir.File(name);
  };
  const std::vector<std::string> bad = {
      write("truncated.json.gz", real.substr(0, real.size() / 2)),
      write("not_json.json", "this is not json"),
      write("wrong_schema.json", R"({"schema": "something else", "events": []})"),
      write("deep.json", R"({"traceEvents": [{"a": )" + std::string(1 << 20, '[')),
      write("empty.json", ""),
      dir.File("missing.json"),
  };
  for (const std::string& path : bad) {
    INFO(path);
    TempDir out;
    const ImportRun run = Import(out, {path});
    CHECK(run.process.exited);
    CHECK(run.process.exit_code == 3);
    CHECK(run.process.err.find("gpuattr import: ") != std::string::npos);
    CHECK(test_support::ReadFile(out.File("report.json")).empty());
  }
}

}  // namespace
}  // namespace gpuattr::test
