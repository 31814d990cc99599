// KernelMaps: the annotator's map lines parsed, what is not a map refused and counted, a growing
// file read in complete lines; and the paths a call's phase gives.
#include "analysis/kernel_maps.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_files.h"

namespace gpuattr::collector::testing {
namespace {

using Path = std::vector<std::string>;

const char kForwardMap[] =
    R"({"format":"gpuattr.kernel_map/1","graph":"cabc","range":"torch.compile: cabc forward",)"
    R"("root_class":"Gpt","root":"nn.Module: Gpt_0",)"
    R"("calls":[{"kernel":"k_0","generated":true,"phase":"forward","modules":["","blocks.0"],)"
    R"("fused":["blocks.0.act","blocks.0.ln"]},)"
    R"({"kernel":"extern_kernels.mm","generated":false,"phase":null,"modules":[]},)"
    R"({"kernel":"k_0","generated":true,"phase":"forward","modules":[""]}]})";

TEST_CASE("a map line: its calls in order, generated kernels indexed by name",
          "[unit][kernel_maps]") {
  KernelMaps maps;
  REQUIRE(maps.AddLine(kForwardMap));
  CHECK(maps.Find("torch.compile: cabc") == nullptr);
  const GraphMap* map = maps.Find("torch.compile: cabc forward");
  REQUIRE(map != nullptr);
  REQUIRE(map->calls.size() == 3);
  CHECK((map->root_class == "Gpt" && map->root == "nn.Module: Gpt_0"));
  CHECK(map->calls[0].phase == Phase::kForward);
  CHECK(map->calls[0].modules == Path{"", "blocks.0"});
  CHECK(map->calls[0].fused == Path{"blocks.0.act", "blocks.0.ln"});
  CHECK(map->calls[1].fused.empty());
  CHECK_FALSE(map->calls[1].generated);
  CHECK_FALSE(map->calls[1].phase);
  CHECK(map->generated_calls.at("k_0") == std::vector<uint32_t>{0, 2});
  CHECK(map->generated_calls.count("extern_kernels.mm") == 0);
  CHECK(maps.rejected_lines() == 0);
}

TEST_CASE("a graph named as torch.profiler names its calls finds the same map",
          "[unit][kernel_maps]") {
  const std::string profiler_range = "## Call CompiledFxGraph fxg ##";
  KernelMaps maps;
  CHECK(maps.AddLine(
      R"({"format":"gpuattr.kernel_map/1","graph":"cabc","range":"torch.compile: cabc forward",)"
      R"("profiler_range":")" +
      profiler_range + "\"}"));
  CHECK(maps.Find(profiler_range) == nullptr);  // named before its map came: found once it has
  REQUIRE(maps.AddLine(kForwardMap));
  CHECK(maps.Find(profiler_range) == maps.Find("torch.compile: cabc forward"));
  CHECK(maps.Find("## Call CompiledFxGraph other ##") == nullptr);
  CHECK(maps.graph_count() == 1);
  const std::string head =
      R"({"format":"gpuattr.kernel_map/1","graph":"g","range":"torch.compile: g forward",)";
  for (const std::string& line :
       {head + R"("profiler_range":"torch.compile: x"})", head + R"("profiler_range":7})",
        head + R"("profiler_range":"## Call CompiledFxGraph y ##","calls":[]})",
        std::string(R"({"format":"gpuattr.kernel_map/1","range":"g forward",)") +
            R"("profiler_range":"## Call CompiledFxGraph y ##"})"}) {
    INFO(line);
    CHECK_FALSE(maps.AddLine(line));
  }
  CHECK(maps.rejected_lines() == 4);
  CHECK(maps.Find("## Call CompiledFxGraph y ##") == nullptr);
}

TEST_CASE("what is not a map is refused and counted", "[unit][kernel_maps]") {
  const std::string head =
      R"({"format":"gpuattr.kernel_map/1","graph":"g","range":"torch.compile: g forward",)";
  const std::vector<std::string> lines = {
      "not json",
      "[]",
      R"({"format":"gpuattr.kernel_map/2","range":"torch.compile: g","calls":[]})",
      R"({"format":"gpuattr.kernel_map/1","range":"g forward","calls":[]})",
      head + R"("calls":{}})",
      head + R"("calls":[{"kernel":"k","generated":1}]})",
      head + R"("calls":[{"kernel":"","generated":true}]})",
      head + R"("calls":[{"kernel":"k","generated":true,"phase":"sideways"}]})",
      head + R"("calls":[{"kernel":"k","generated":true,"modules":"a"}]})",
      head + R"("calls":[{"kernel":"k","generated":true,"modules":[")" +
          std::string(KernelMaps::kMaxNameBytes + 1, 'x') + R"("]}]})",
      head + R"("root":7,"calls":[]})",
      head + R"("calls":[{"kernel":"k","generated":true,"fused":[1]}]})",
  };
  KernelMaps maps;
  for (const std::string& line : lines) {
    INFO(line.substr(0, 120));
    CHECK_FALSE(maps.AddLine(line));
  }
  CHECK(maps.rejected_lines() == lines.size());
  CHECK(maps.graph_count() == 0);
}

TEST_CASE("a growing file is read in complete lines, each once", "[unit][kernel_maps]") {
  test_support::TempDir dir;
  const std::string path = dir.File("1.jsonl");
  KernelMaps maps;
  CHECK(maps.ReadNewLines(path).ok());  // nothing compiled yet: no file
  std::string second = kForwardMap;
  second.replace(second.find("cabc forward"), 12, "cdef forward");
  test_support::WriteFile(path, std::string(kForwardMap) + "\n" + second.substr(0, 40));
  REQUIRE(maps.ReadNewLines(path).ok());
  CHECK(maps.graph_count() == 1);
  test_support::WriteFile(path, std::string(kForwardMap) + "\n" + second + "\n");
  REQUIRE(maps.ReadNewLines(path).ok());
  CHECK(maps.graph_count() == 2);
  CHECK(maps.Find("torch.compile: cdef forward") != nullptr);
  CHECK(maps.rejected_lines() == 0);  // neither the half line nor the first line twice
}

TEST_CASE("a call's path below its graph's range, by phase", "[unit][kernel_maps]") {
  const Path modules = {"nn.Module: Gpt_0", "nn.Module: fc"};
  CHECK(CompiledCallPath(Phase::kForward, modules) == modules);
  CHECK(CompiledCallPath(Phase::kBackward, modules) ==
        Path{"nn.Module: Gpt_0", "nn.Module: fc", "backward"});
  CHECK(CompiledCallPath(Phase::kRecompute, modules) ==
        Path{"backward", "recompute", "nn.Module: Gpt_0", "nn.Module: fc"});
  CHECK(CompiledCallPath(std::nullopt, modules).empty());
}

}  // namespace
}  // namespace gpuattr::collector::testing
