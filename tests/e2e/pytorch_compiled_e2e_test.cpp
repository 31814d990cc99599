// A torch.compile'd model on the simulated GPU (issue 42): tests/e2e/pytorch/train_compiled.py
// compiles a GPT-style model's forward and loss; every kernel Inductor generated and every extern
// GEMM its wrappers call launches on the simulated GPU (tests/simgpu/python/simgpu_compiled.py),
// and the script keeps the truth of each launch, with where in the module tree a compiled one
// belongs by Inductor's provenance tracking (compiled_truth.py). Each run gets Inductor's cache
// and gpuattr's kernel map cache of its own, so what it compiles is known.
// Registered for the torch 2 interpreters only, beside pytorch2_e2e_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pytorch_e2e_util.h"
#include "pytorch_module_truth.h"
#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadJson;
using test_support::TempDir;

bool GeneratedByInductor(const std::string& kernel) {
  return kernel.rfind("cpp_fused_", 0) == 0 || kernel.rfind("triton_", 0) == 0;
}

// The simulated-torch environment with Inductor's cache and gpuattr's map cache in `dir`.
std::map<std::string, std::string> CompiledEnvironment(const TempDir& dir,
                                                       const std::string& caches) {
  std::map<std::string, std::string> env = SimulatedTorchEnvironment();
  env["TORCHINDUCTOR_CACHE_DIR"] = dir.File(caches + "-inductor");
  env["GPUATTR_KERNEL_MAP_CACHE"] = dir.File(caches + "-maps");
  return env;
}

// `text` without the time and thread that begin each of torch's log lines
// (`W1207 06:30:01.041000 10627 torch/_logging/...`).
std::string WithoutLogPrefixes(const std::string& text) {
  static const std::regex kLogPrefix(R"((^|\n)[DIWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ )");
  return std::regex_replace(text, kLogPrefix, "$1");
}

// The activities of an --activities file by correlation id.
std::map<uint64_t, json> ActivitiesByCorrelation(const std::string& path) {
  std::map<uint64_t, json> activities;
  std::ifstream lines(path);
  for (std::string line; std::getline(lines, line);) {
    json activity = json::parse(line);
    if (!activity["correlation_id"].is_number()) continue;  // not a launch's
    const auto correlation = activity["correlation_id"].get<uint64_t>();
    activities[correlation] = std::move(activity);
  }
  return activities;
}

// The innermost module range of an exported activity's path; null when it has none.
json InnermostModule(const json& activity) {
  if (activity["path"].is_null()) return nullptr;
  json module = nullptr;
  for (const json& name : activity["path"]) {
    if (name.get<std::string>().rfind("nn.Module: ", 0) == 0) module = name;
  }
  return module;
}

// Each compiled launch of the truth (its `compiled`: graph, module, phase) as the exported
// activities place it: inside its graph's range, its innermost module and phase the truth's.
// Returns how many launches of each phase the truth has.
std::map<std::string, size_t> CheckCompiledLaunches(const json& truth,
                                                    const std::string& activities_path) {
  const std::map<uint64_t, json> activities = ActivitiesByCorrelation(activities_path);
  std::map<std::string, size_t> launches;
  for (const json& launch : truth["processes"][0]["activities"]) {
    const json& compiled = launch["compiled"];
    if (compiled.is_null()) continue;
    ++launches[compiled["phase"].get<std::string>()];
    INFO(launch["name"].get<std::string>()
         << " (correlation " << launch["correlation_id"] << "): " << compiled.dump());
    const auto found = activities.find(launch["correlation_id"].get<uint64_t>());
    REQUIRE(found != activities.end());
    const json& activity = found->second;
    INFO("report: " << activity["path"].dump() << ", " << activity["phase"].dump());
    const std::vector<std::string> path = activity["path"].is_null()
                                              ? std::vector<std::string>{}
                                              : activity["path"].get<std::vector<std::string>>();
    CHECK(std::count(path.begin(), path.end(), compiled["graph"].get<std::string>()) == 1);
    CHECK(InnermostModule(activity) == compiled["module"]);
    CHECK(activity["phase"] == compiled["phase"]);
  }
  return launches;
}

// train_compiled.py with `flags`, bare and under gpuattr run (the annotator on, exporting its
// activities), each with caches of its own in `dir`: both must print and warn alike, and every
// compiled launch be where the truth has it. Returns the bare run's stdout.
struct CompiledRun {
  std::string bare_out;
  json report;
  std::map<std::string, size_t> launches;  // the truth's compiled launches by phase
};

CompiledRun RunCompiled(const TempDir& dir, const std::vector<std::string>& flags) {
  auto command = [&](const std::string& truth) {
    std::vector<std::string> argv = {kPython, PYTORCH_COMPILED_SCRIPT, "--truth", dir.File(truth)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  };
  CompiledRun run;
  const ProcessResult bare =
      test_support::RunProcess(command("bare_truth.json"), CompiledEnvironment(dir, "bare"), 280);
  INFO("bare stderr: " << bare.err);
  REQUIRE(ExitStatus(bare) == 0);
  CHECK(bare.out.find("wrappers on the simulated GPU: ") != std::string::npos);
  const ProcessResult traced =
      RunUnderGpuattr({"--activities", dir.File("activities.jsonl")}, command("truth.json"),
                      dir.File("report.json"), CompiledEnvironment(dir, "annotated"));
  INFO("traced stderr: " << traced.err);
  REQUIRE(ExitStatus(traced) == 0);
  // The losses, dynamo's graph breaks, recompiles and unimplemented, the wrappers hooked; and
  // torch's warnings, whose log lines each name their time and process.
  CHECK(traced.out == bare.out);
  CHECK(WithoutLogPrefixes(traced.err) == WithoutLogPrefixes(bare.err));
  REQUIRE(SchemaValid(dir.File("report.json")));
  run.bare_out = bare.out;
  run.report = ReadJson(dir.File("report.json"));
  run.launches =
      CheckCompiledLaunches(ReadJson(dir.File("truth.json")), dir.File("activities.jsonl"));
  CHECK(run.report["processes"][0]["coverage"]["attributed_fraction"].get<double>() >= 0.95);
  return run;
}

// Every Linear of both blocks' attention and MLP has a row with forward and backward time.
void CheckEveryLinear(const json& report) {
  const std::map<std::string, ModuleTerms> rows = ModuleRowsOf(report);
  for (const char* block : {"blocks.0", "blocks.1"}) {
    for (const char* linear : {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"}) {
      const std::string module = std::string("nn.Module: ") + block + "." + linear;
      INFO(module);
      REQUIRE(rows.count(module) == 1);
      CHECK(rows.at(module).forward_ns > 0);
      CHECK(rows.at(module).backward_ns > 0);
    }
  }
}

constexpr char kNoBreakOrRecompile[] =
    "\"graph_break\": {}, \"recompiles\": {}, \"unimplemented\": {}";

TEST_CASE(
    "a compiled model on the simulated GPU: Inductor's kernels and the extern GEMMs as the truth "
    "has them, and no graph break or recompile of gpuattr's",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  const CompiledRun run = RunCompiled(dir, {});
  CHECK(run.bare_out.find(kNoBreakOrRecompile) != std::string::npos);
  CHECK(run.bare_out.find("wrappers on the simulated GPU: 2") != std::string::npos);  // fwd, bwd
  // 2 steps of 19 forward and 36 backward calls, one launch each.
  CHECK(run.launches == std::map<std::string, size_t>{{"backward", 72}, {"forward", 38}});
  CheckEveryLinear(run.report);

  auto command = [&](const std::string& truth) {
    return std::vector<std::string>{kPython, PYTORCH_COMPILED_SCRIPT, "--truth", dir.File(truth)};
  };
  {
    INFO("without the annotator, every launch is where the truth has it");
    const ProcessResult traced =
        RunUnderGpuattr({"--pytorch", "off"}, command("off_truth.json"), dir.File("off.json"),
                        CompiledEnvironment(dir, "off"));
    INFO("traced stderr: " << traced.err);
    REQUIRE(ExitStatus(traced) == 0);
    CHECK(traced.out == run.bare_out);
    REQUIRE(SchemaValid(dir.File("off.json")));
    const json truth = ReadJson(dir.File("off_truth.json"));
    size_t generated = 0;
    for (const json& activity : truth["processes"][0]["activities"]) {
      generated += GeneratedByInductor(activity["name"].get<std::string>()) ? 1 : 0;
    }
    CHECK(generated > 0);
    CheckAgainstTruth(ReadJson(dir.File("off.json")), truth);
  }
  {
    INFO("a second run loads both graphs from Inductor's cache: gpuattr's maps place them alike");
    const ProcessResult cached =
        RunUnderGpuattr({"--kernel-maps", dir.File("kept.jsonl")}, command("cached_truth.json"),
                        dir.File("cached.json"), CompiledEnvironment(dir, "annotated"));
    REQUIRE(ExitStatus(cached) == 0);
    CHECK(cached.out == run.bare_out);
    CHECK(ModuleRowsOf(ReadJson(dir.File("cached.json"))) == ModuleRowsOf(run.report));
    // --kernel-maps kept both graphs' maps, each also named as torch.profiler names its calls.
    std::set<std::string> graph_ranges, named_ranges;
    std::istringstream kept(test_support::ReadFile(dir.File("kept.jsonl")));
    for (std::string line; std::getline(kept, line);) {
      const json map = json::parse(line);
      (map.contains("profiler_range") ? named_ranges : graph_ranges).insert(map["range"]);
      if (map.contains("profiler_range")) {
        CHECK(map["profiler_range"].get<std::string>().starts_with("## Call CompiledFxGraph f"));
      }
    }
    CHECK(graph_ranges.size() == 2);
    CHECK(named_ranges == graph_ranges);
  }
}

TEST_CASE(
    "the same model eager and compiled: the same module rows, and time both ways for every module "
    "that has it eagerly, its own or fused",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  const CompiledRun compiled = RunCompiled(dir, {});
  const ProcessResult eager = RunUnderGpuattr(
      {}, {kPython, PYTORCH_COMPILED_SCRIPT, "--truth", dir.File("eager_truth.json"), "--eager"},
      dir.File("eager.json"), CompiledEnvironment(dir, "eager"));
  INFO("eager stderr: " << eager.err);
  REQUIRE(ExitStatus(eager) == 0);
  REQUIRE(SchemaValid(dir.File("eager.json")));
  const json eager_report = ReadJson(dir.File("eager.json"));
  std::map<std::string, json> compiled_rows;
  for (const json& row : compiled.report["processes"][0]["modules"]) {
    compiled_rows[row["module"].get<std::string>()] = row;
  }
  std::set<std::string> eager_modules;
  for (const json& row : eager_report["processes"][0]["modules"]) {
    const std::string module = row["module"].get<std::string>();
    eager_modules.insert(module);
    INFO(module);
    REQUIRE(compiled_rows.count(module) == 1);
    const json& twin = compiled_rows.at(module);
    for (const char* phase : {"forward_ns", "backward_ns"}) {
      INFO(phase);
      if (row[phase].get<uint64_t>() == 0) continue;
      CHECK(twin[phase].get<uint64_t>() + twin["fused"][phase].get<uint64_t>() > 0);
    }
  }
  std::set<std::string> compiled_modules;
  for (const auto& [module, row] : compiled_rows) compiled_modules.insert(module);
  CHECK(compiled_modules == eager_modules);
}

TEST_CASE(
    "compiled selective activation checkpointing: the partitioner's recomputation is recompute, "
    "kernel by kernel as the truth has it",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  const CompiledRun run = RunCompiled(dir, {"--selective-checkpoint"});
  CHECK(run.bare_out.find(kNoBreakOrRecompile) != std::string::npos);
  CHECK(run.launches.count("recompute: untagged") == 0);
  REQUIRE(run.launches.count("recompute") == 1);
  CHECK(run.launches.at("recompute") > 0);
  uint64_t recompute_ns = 0;
  for (const auto& [module, terms] : ModuleRowsOf(run.report)) recompute_ns += terms.recompute_ns;
  CHECK(recompute_ns > 0);
  CheckEveryLinear(run.report);
}

TEST_CASE(
    "a compiled model with a graph break: attributed by module on both sides of the break, with "
    "the graph breaks of a bare run",
    "[e2e]") {
  RequireTorch();
  if (InductorCannotRunUnderThisShim()) return;
  TempDir dir;
  const CompiledRun run = RunCompiled(dir, {"--graph-break"});
  CHECK(run.bare_out.find("\"graph_break\": {}") == std::string::npos);  // the break counted
  CHECK(run.bare_out.find("\"recompiles\": {}") != std::string::npos);
  const std::map<std::string, ModuleTerms> rows = ModuleRowsOf(run.report);
  REQUIRE(rows.count("nn.Module: embed") == 1);  // before the break
  CHECK(rows.at("nn.Module: embed").forward_ns > 0);
  CHECK(rows.at("nn.Module: embed").backward_ns > 0);
  CheckEveryLinear(run.report);  // after it
}

}  // namespace
}  // namespace gpuattr::e2e
