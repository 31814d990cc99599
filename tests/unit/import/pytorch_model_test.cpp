// The PyTorch model of imported Kineto traces (collector/import/pytorch_model.h,
// docs/attribution.md §PyTorch) on a small synthetic trace of a checkpointed model: modules
// nest into the pass tree, backward lands under the module whose forward created it (by a
// fwdbwd flow or by sequence number), AccumulateGrad is backward_unlinked, the recomputed
// forward inside backward is recompute, and the module table and the step row add up.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "import_test_util.h"
#include "test_files.h"
#include "views/report_view.h"

namespace gpuattr::collector::testing {
namespace {

using nlohmann::json;
using test_support::TempDir;

// tests/data/pytorch_checkpointed.json (also checked against tests/component/
// pytorch_phase_reference.py by import_test.cpp). Main thread 10, autograd thread 20, stream 7
// (stream 8: NCCL); times in µs. Net_0 holds Linear_0 and the
// checkpointed Block_0 (Linear_1); MSELoss_0 follows. Backward on thread 20: MseLossBackward0
// (sequence 7, no flow), AddmmBackward0 of Linear_1 (fwdbwd flow 1; it recomputes Linear_1 under
// checkpoint.py's recompute_fn), AddmmBackward0 of Linear_0 (sequence 5, no flow), and
// AccumulateGrad (no sequence), whose DDP hook launches an all-reduce. ProfilerStep#2 is idle.
const std::string kCheckpointed =
    std::string(GPUATTR_SOURCE_DIR) + "/tests/data/pytorch_checkpointed.json";

const std::string kStep = "ProfilerStep#*";
const std::string kBackwardContext = "## backward ##";

// The pass node at `path` (names from the root), or null.
const json* PassAt(const json& passes, const std::vector<std::string>& path) {
  const json* level = &passes;
  const json* found = nullptr;
  for (const std::string& name : path) {
    found = nullptr;
    for (const json& node : *level) {
      if (node["name"] == name) found = &node;
    }
    if (found == nullptr) return nullptr;
    level = &(*found)["children"];
  }
  return found;
}

uint64_t SelfNs(const json& passes, const std::vector<std::string>& path) {
  const json* node = PassAt(passes, path);
  INFO("no pass node at " << json(path).dump());
  REQUIRE(node != nullptr);
  return (*node)["device"]["self_ns"].get<uint64_t>();
}

Imported ImportCheckpointed(const std::string& ranges = "annotations") {
  return ImportPaths({kCheckpointed}, ranges);
}

TEST_CASE("PyTorch model: backward by module, unlinked remainder, recompute and communication",
          "[import][pytorch]") {
  const Imported imported = ImportCheckpointed();
  const json& source = imported.report["capture"]["source"]["pytorch"];
  CHECK(source["module_ranges"] == 6);
  CHECK(source["recompute_frames"] == 1);
  CHECK(source["backward_ops"] == 4);
  CHECK(source["linked_by_flow"] == 1);
  CHECK(source["linked_by_sequence"] == 2);
  CHECK(source["unlinked"] == 1);

  const json& process = imported.report["processes"].at(0);
  const json& phases = process["phases"];
  CHECK(phases["forward_ns"] == 10000 + 20000);
  CHECK(phases["loss_ns"] == 5000);
  CHECK(phases["backward_ns"] == 3000 + 10000 + 8000 + 2000);
  CHECK(phases["recompute_ns"] == 20000);
  CHECK(phases["communication_ns"] == 50000);
  CHECK(phases["other_ns"] == 0);
  CHECK(phases["recompute_fraction"].get<double>() == Approx(20000.0 / 30000.0));

  // Forward and backward of a module share its node; the recomputed Linear_1 nests under the
  // backward that recomputed it.
  const json& passes = process["passes"];
  const std::vector<std::string> linear_1 = {kStep, "nn.Module: Net_0", "nn.Module: Block_0",
                                             "nn.Module: Linear_1"};
  CHECK(SelfNs(passes, linear_1) == 20000);
  std::vector<std::string> linear_1_backward = linear_1;
  linear_1_backward.push_back("backward");
  CHECK(SelfNs(passes, linear_1_backward) == 10000);
  std::vector<std::string> recomputed = linear_1_backward;
  recomputed.push_back("torch/utils/checkpoint.py(1129): recompute_fn");
  recomputed.push_back("nn.Module: Linear_1");
  CHECK(SelfNs(passes, recomputed) == 20000);
  CHECK((*PassAt(passes, recomputed))["phase"] == "recompute");
  CHECK(SelfNs(passes, {kStep, "nn.Module: Net_0", "nn.Module: Linear_0", "backward"}) == 8000);
  CHECK(SelfNs(passes, {kStep, "nn.Module: MSELoss_0", "backward"}) == 3000);
  // AccumulateGrad has no forward op; its DDP hook's all-reduce is communication, still here.
  const std::vector<std::string> unlinked = {kStep, kBackwardContext, "backward_unlinked"};
  CHECK(SelfNs(passes, unlinked) == 2000 + 50000);
  CHECK((*PassAt(passes, unlinked))["phase"] == "backward");
  // Context copies are no instances: two steps, one `## backward ##`, one Net_0; the backward
  // leaf is one instance per backward op.
  CHECK((*PassAt(passes, {kStep}))["instances"] == 2);
  CHECK((*PassAt(passes, {kStep, kBackwardContext}))["instances"] == 1);
  CHECK((*PassAt(passes, {kStep, "nn.Module: Net_0"}))["instances"] == 1);
  CHECK((*PassAt(passes, linear_1_backward))["instances"] == 1);

  // The module table: one row per module, its terms the device time attributed to it itself
  // (forward, its backward, its recompute), its calls those of its forward and recompute nodes.
  std::map<std::string, json> modules;
  for (const json& row : process["modules"]) modules[row["module"].get<std::string>()] = row;
  REQUIRE(modules.size() == 5);  // Net_0 and Block_0 run, with no device time of their own
  CHECK(modules.at("nn.Module: Net_0")["calls"] == 1);
  CHECK(modules.at("nn.Module: Block_0")["forward_ns"] == 0);
  const json& linear_1_row = modules.at("nn.Module: Linear_1");
  CHECK(linear_1_row["path"] ==
        json({"nn.Module: Net_0", "nn.Module: Block_0", "nn.Module: Linear_1"}));
  CHECK(linear_1_row["calls"] == 1);
  CHECK(linear_1_row["recompute_calls"] == 1);
  CHECK(linear_1_row["forward_ns"] == 20000);
  CHECK(linear_1_row["backward_ns"] == 10000);
  CHECK(linear_1_row["recompute_ns"] == 20000);
  CHECK(linear_1_row["recompute_fraction"].get<double>() == Approx(1.0));
  const json& linear_0_row = modules.at("nn.Module: Linear_0");
  CHECK(linear_0_row["forward_ns"] == 10000);
  CHECK(linear_0_row["backward_ns"] == 8000);
  CHECK(linear_0_row["recompute_fraction"].get<double>() == 0.0);
  const json& loss_row = modules.at("nn.Module: MSELoss_0");
  CHECK(loss_row["loss_ns"] == 5000);
  CHECK(loss_row["backward_ns"] == 3000);
  CHECK(loss_row["recompute_fraction"].is_null());

  // The step row holds every thread's work while ProfilerStep#1 was open.
  const json& rows = process["steps"]["rows"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[1]["recompute_fraction"].is_null());
  CHECK(rows[0]["backward_ns"] == phases["backward_ns"]);
  CHECK(rows[0]["recompute_ns"] == 20000);
  CHECK(rows[0]["communication_ns"] == 50000);
  CHECK(rows[0]["recompute_fraction"].get<double>() == Approx(20000.0 / 30000.0));
}

TEST_CASE("PyTorch model: gpuattr report lists the modules with their backward and r",
          "[import][pytorch]") {
  const Imported imported = ImportCheckpointed();
  const std::string view =
      RenderReportView(LoadedReport::FromDocument(imported.report), ReportViewOptions{});
  const size_t table = view.find("modules (nn.Module) by device time");
  REQUIRE(table != std::string::npos);
  const std::string rows = view.substr(table, view.find("\n\n", table) - table);
  CHECK(rows.find("Linear_1       1    0.020     0.010      0.020") != std::string::npos);
  CHECK(rows.find("1.000") != std::string::npos);
  CHECK(rows.find("Linear_0") != std::string::npos);
  CHECK(rows.find("MSELoss_0") != std::string::npos);
}

TEST_CASE("PyTorch model: with --ranges ops the backward op nests under the model's ranges",
          "[import][pytorch]") {
  const Imported imported = ImportCheckpointed("ops");
  const json& process = imported.report["processes"].at(0);
  CHECK(process["phases"]["backward_ns"] == 23000);
  CHECK(process["phases"]["recompute_ns"] == 20000);
  // The forward op (aten::linear) is not on the backward's path: its module is.
  CHECK(SelfNs(process["passes"], {kStep, "nn.Module: Net_0", "nn.Module: Linear_0", "backward",
                                   "autograd::engine::evaluate_function: AddmmBackward0"}) == 8000);
}

TEST_CASE("PyTorch model: --no-modules leaves backward as the main thread's context",
          "[import][pytorch]") {
  TempDir dir;
  ImportOptions options;
  options.files = {kCheckpointed};
  options.modules = false;
  options.output = dir.File("report.json");
  StatusOr<ImportResult> result = WriteImport(options, /*write_report=*/true);
  REQUIRE(result.ok());
  const json report = json::parse(test_support::ReadFile(options.output));
  const json& source = report["capture"]["source"];
  CHECK(source["pytorch"]["module_ranges"] == 0);
  CHECK(source["pytorch"]["backward_ops"] == 0);
  CHECK(source["unused_events"]["fwdbwd"] == 2);
  const json& process = report["processes"].at(0);
  CHECK(process["modules"] == json::array());
  // Inherited from `## backward ##` on the main thread, except the recompute frame's kernel.
  CHECK(process["phases"]["backward_ns"] == 23000);
  CHECK(process["phases"]["recompute_ns"] == 20000);
  CHECK(process["phases"]["forward_ns"] == 0);
}

}  // namespace
}  // namespace gpuattr::collector::testing
