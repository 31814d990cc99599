// CompiledGraphJoin: launches inside a compiled graph's range placed where its kernel map says,
// generated kernels by name and order, extern ones by the calls between them; what the map
// cannot place stays on the graph's range, and launches elsewhere are left alone.
#include "analysis/compiled_graph_join.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_files.h"
#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

using Path = std::vector<std::string>;

constexpr uint32_t kTid = 7;
const std::string kForward = "torch.compile: g forward";
const std::string kBackward = "torch.compile: h backward";

std::string Quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "\"" : ",\"") + name + "\"";
  return out;
}

// A call of a map; its modules are the root's ('') and `modules`.
std::string Call(const std::string& kernel, bool generated, const std::string& phase,
                 const std::vector<std::string>& modules,
                 const std::vector<std::string>& fused = {}) {
  std::vector<std::string> chain = {""};
  chain.insert(chain.end(), modules.begin(), modules.end());
  return R"({"kernel":")" + kernel + R"(","generated":)" + (generated ? "true" : "false") +
         R"(,"phase":")" + phase + R"(","modules":[)" + Quoted(chain) + R"(],"fused":[)" +
         Quoted(fused) + "]}";
}

std::string MapLine(const std::string& range, const std::vector<std::string>& calls) {
  std::string out = R"({"format":"gpuattr.kernel_map/1","graph":"g","range":")" + range +
                    R"(","root_class":"Gpt","root":"nn.Module: Gpt_0","calls":[)";
  for (size_t i = 0; i < calls.size(); ++i) out += (i ? "," : "") + calls[i];
  return out + "]}\n";
}

class JoinFixture {
 public:
  JoinFixture() {
    test_support::WriteFile(
        dir.File("maps.jsonl"),
        MapLine(kForward, {Call("k_ln", true, "forward", {"blocks.0"}),
                           Call("extern_kernels.addmm", false, "forward",
                                {"blocks.0", "blocks.0.attn", "blocks.0.attn.qkv"}),
                           Call("torch.ops.aten._scaled_dot_product_flash_attention.default", false,
                                "forward", {"blocks.0", "blocks.0.attn"}),
                           Call("extern_kernels.addmm", false, "forward",
                                {"blocks.0", "blocks.0.attn", "blocks.0.attn.proj"}),
                           Call("k_ln", true, "forward", {"blocks.1"})}) +
            MapLine(kBackward, {Call("k_bwd", true, "backward", {"head"}, {"head", "ln_f"}),
                                Call("extern_kernels.mm", false, "backward", {"head"}),
                                Call("extern_kernels.mm", false, "recompute", {"head"})}));
    trace.Range(kTid, {"step"}, 0, 1000);
    trace.Range(kTid, {"step", kForward}, 100, 200);
    trace.Range(kTid, {"step", kForward}, 300, 400);
    trace.Range(kTid, {"step", kBackward}, 500, 600);
  }

  // The path the join places a kernel named `name` at, launched at `enter_ns` under `names`.
  Path Place(uint64_t enter_ns, const std::string& name, const Path& names) {
    const LaunchRecord launch = trace.Launch(enter_ns, kTid, names);
    const ActivityRecord kernel = trace.Kernel(enter_ns + 1, enter_ns + 2, name);
    return paths.Of(join.Place(launch.node, kernel, &launch));
  }

  test_support::TempDir dir;
  TraceFixture trace;
  PathNames paths{trace.data};
  CompiledGraphJoin join{trace.data, paths, dir.File("maps.jsonl")};
};

Path Under(const std::string& graph, const Path& below) {
  Path path = {"step", graph, "nn.Module: Gpt_0"};
  for (const std::string& name : below) path.push_back(name);
  return path;
}

TEST_CASE("a graph call's launches go to their calls' modules, in call order",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  const Path graph = {"step", kForward};
  CHECK(f.Place(110, "k_ln", graph) == Under(kForward, {"nn.Module: blocks.0"}));
  CHECK(f.Place(120, "sm90_xmma_gemm_f32f32", graph) ==
        Under(kForward,
              {"nn.Module: blocks.0", "nn.Module: blocks.0.attn", "nn.Module: blocks.0.attn.qkv"}));
  CHECK(f.Place(130, "flash_fwd_kernel", graph) ==
        Under(kForward, {"nn.Module: blocks.0", "nn.Module: blocks.0.attn"}));
  CHECK(f.Place(140, "sm90_xmma_gemm_f32f32", graph) ==
        Under(kForward, {"nn.Module: blocks.0", "nn.Module: blocks.0.attn",
                         "nn.Module: blocks.0.attn.proj"}));
  // The name recurs: its second launch is its second call's.
  CHECK(f.Place(150, "k_ln", graph) == Under(kForward, {"nn.Module: blocks.1"}));
  // One launch more than the map has calls of its name: named by its graph, never guessed.
  CHECK(f.Place(160, "k_ln", graph) == graph);
  // The next call of the graph starts over.
  CHECK(f.Place(310, "k_ln", graph) == Under(kForward, {"nn.Module: blocks.0"}));
  CHECK(f.join.placed() == 6);
  CHECK(f.join.unplaced() == 1);
}

TEST_CASE("an imported trace's graph call, named as torch.profiler names it, finds its map",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  const std::string profiler_range = "## Call CompiledFxGraph fxg ##";
  test_support::WriteFile(f.dir.File("maps.jsonl"),
                          test_support::ReadFile(f.dir.File("maps.jsonl")) +
                              R"({"format":"gpuattr.kernel_map/1","graph":"g","range":")" +
                              kForward + R"(","profiler_range":")" + profiler_range + "\"}\n");
  f.trace.Range(kTid, {"step", profiler_range}, 700, 800);
  f.trace.Range(kTid, {"step", "## Call CompiledFxGraph other ##"}, 850, 900);
  const Path graph = {"step", profiler_range};
  CHECK(f.Place(710, "k_ln", graph) == Under(profiler_range, {"nn.Module: blocks.0"}));
  CHECK(f.Place(720, "sm90_xmma_gemm_f32f32", graph) ==
        Under(profiler_range,
              {"nn.Module: blocks.0", "nn.Module: blocks.0.attn", "nn.Module: blocks.0.attn.qkv"}));
  // A graph the maps do not name: its launches stay on its call's range.
  const Path unnamed = {"step", "## Call CompiledFxGraph other ##"};
  CHECK(f.Place(860, "k_ln", unnamed) == unnamed);
  CHECK(f.join.unplaced() == 1);
}

TEST_CASE("an extern launch the names cannot single out goes to the calls' common module",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  const Path graph = {"step", kForward};
  CHECK(f.Place(110, "k_ln", graph) == Under(kForward, {"nn.Module: blocks.0"}));
  // Not a GEMM, not attention: any of the three extern calls that follow.
  CHECK(f.Place(115, "void at::native::copy_kernel", graph) ==
        Under(kForward, {"nn.Module: blocks.0", "nn.Module: blocks.0.attn"}));
  // A third GEMM where two GEMM calls lie: either of them.
  f.Place(120, "sm90_gemm", graph);
  f.Place(125, "sm90_gemm", graph);
  CHECK(f.Place(128, "sm90_gemm", graph) ==
        Under(kForward, {"nn.Module: blocks.0", "nn.Module: blocks.0.attn"}));
}

TEST_CASE("backward calls end in the backward leaf, recomputed ones below it, and mixed ones stay",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  const Path graph = {"step", kBackward};
  CHECK(f.Place(510, "k_bwd", graph) == Under(kBackward, {"nn.Module: head", "backward"}));
  // It fuses the head's ops and ln_f's: both listed, named as modules are.
  CHECK(f.join.fused_modules() == Path{"nn.Module: head", "nn.Module: ln_f"});
  CHECK(f.Place(520, "some_kernel", graph) == graph);  // a backward mm's, or a recomputed one's
  CHECK(f.join.fused_modules().empty());
  // GEMMs are told apart by their order: a backward one, then a recomputed one.
  CHECK(f.Place(530, "sm90_gemm", graph) == Under(kBackward, {"nn.Module: head", "backward"}));
  CHECK(f.Place(540, "sm90_gemm", graph) ==
        Path{"step", kBackward, "backward", "recompute", "nn.Module: Gpt_0", "nn.Module: head"});
}

TEST_CASE("launches outside a mapped graph's range are left where they are",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  CHECK(f.Place(50, "k_ln", {"step"}) == Path{"step"});
  f.trace.Range(kTid, {"step", "torch.compile: unmapped forward"}, 700, 800);
  CHECK(f.Place(710, "k_ln", {"step", "torch.compile: unmapped forward"}) ==
        Path{"step", "torch.compile: unmapped forward"});
  // No maps at all: nothing moves.
  const LaunchRecord launch = f.trace.Launch(110, kTid, {"step", kForward});
  CompiledGraphJoin none(f.trace.data, f.paths, "");
  const ActivityRecord kernel = f.trace.Kernel(111, 112, "k_ln");
  CHECK(none.Place(launch.node, kernel, &launch) == launch.node);
}

TEST_CASE("a graph's modules are named below the module range its call runs in",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  // A compiled block: the same graph serves each block, named by the call around it.
  const Path in_block = {"step", "nn.Module: Gpt_0", "nn.Module: blocks.3", kForward};
  f.trace.Range(kTid, in_block, 700, 800);
  CHECK(f.Place(710, "k_ln", in_block) == Path{"step", "nn.Module: Gpt_0", "nn.Module: blocks.3",
                                               kForward, "nn.Module: blocks.3.blocks.0"});
  // The compiled root's own call (torch.compile(model)): its range is the root's.
  const Path in_root = {"step", "nn.Module: Gpt_1", kForward};
  f.trace.Range(kTid, in_root, 900, 1000);
  CHECK(f.Place(910, "k_ln", in_root) ==
        Path{"step", "nn.Module: Gpt_1", kForward, "nn.Module: blocks.0"});
}

TEST_CASE("a CUDA graph captured inside a graph's range: each replay places its kernels anew",
          "[unit][compiled_graph_join]") {
  JoinFixture f;
  // The capture-time node of every replayed kernel is the graph's range (the wrapper's call was
  // captured inside it); the replays are graph launches from outside any range.
  const uint32_t captured = f.trace.Node({"step", kForward});
  auto replay = [&](uint64_t launch_ns) {
    const LaunchRecord graph_launch = f.trace.Launch(launch_ns, kTid);
    Path placed;
    for (const char* kernel : {"k_ln", "sm90_gemm", "k_ln"}) {
      ActivityRecord activity = f.trace.Kernel(launch_ns + 1, launch_ns + 2, kernel);
      activity.graph_node_id = 42;
      placed.push_back(f.paths.Of(f.join.Place(captured, activity, &graph_launch)).back());
    }
    return placed;
  };
  const Path each = {"nn.Module: blocks.0", "nn.Module: blocks.0.attn.qkv", "nn.Module: blocks.1"};
  CHECK(replay(2000) == each);
  CHECK(replay(3000) == each);
}

TEST_CASE("a directory of maps is read at its process's file", "[unit][compiled_graph_join]") {
  JoinFixture f;
  f.trace.data.hello = wire::Hello{};
  f.trace.data.hello->pid = 4242;
  test_support::WriteFile(f.dir.File("4242.jsonl"),
                          test_support::ReadFile(f.dir.File("maps.jsonl")));
  CompiledGraphJoin by_pid(f.trace.data, f.paths, f.dir.path());
  const LaunchRecord launch = f.trace.Launch(110, kTid, {"step", kForward});
  const ActivityRecord kernel = f.trace.Kernel(111, 112, "k_ln");
  CHECK(f.paths.Of(by_pid.Place(launch.node, kernel, &launch)) ==
        Under(kForward, {"nn.Module: blocks.0"}));
}

}  // namespace
}  // namespace gpuattr::collector::testing
