// FamilyFold: kernels grouped by family, example names, shapes, and the launch statistics' one
// sample per distinct launch.
#include "analysis/family_fold.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

TEST_CASE("kernels of one family fold together with their names and shapes",
          "[unit][family_fold]") {
  TraceFixture trace;
  trace.data.shapes = {{}, {{2, 1, 1}, {64, 1, 1}, 0}};
  PathNames paths(trace.data);
  FamilyFold fold(trace.data, paths, FamilyRules::Default());
  ActivityRecord a = trace.Kernel(0, 100, "_Z4gemmILi1EEvPf");    // void gemm<1>(float*)
  ActivityRecord b = trace.Kernel(100, 130, "_Z4gemmILi2EEvPf");  // void gemm<2>(float*)
  b.shape = 1;
  ActivityRecord c = trace.Kernel(200, 210, "_Z4copyPf");
  fold.Fold(a, nullptr);
  fold.Fold(b, nullptr);
  fold.Fold(b, nullptr);
  fold.Fold(c, nullptr);
  CHECK(fold.NamesOf(a.name_string).demangled == "void gemm<1>(float*)");
  CHECK(fold.NamesOf(a.name_string).family == "gemm");
  CHECK(fold.LeafFamily(c) == "copy");
  CHECK(fold.LeafFamily(trace.Copy(0, 1)) == "[memcpy]");

  const std::vector<FamilyStats> families = fold.Finish();
  REQUIRE(families.size() == 2);
  const FamilyStats& gemm = families[0];  // largest total first
  CHECK(gemm.family == "gemm");
  CHECK(gemm.kernels == 3);
  CHECK(gemm.total_ns == 160);
  CHECK(gemm.min_ns == 30);
  CHECK(gemm.max_ns == 100);
  CHECK(gemm.names == std::vector<std::string>{"void gemm<1>(float*)", "void gemm<2>(float*)"});
  REQUIRE(gemm.shapes.size() == 2);
  CHECK(gemm.shapes[0].shape == trace.data.shapes[1]);  // most kernels first
  CHECK(gemm.shapes[0].kernels == 2);
  CHECK(gemm.launch_api.count == 0);  // no launch seen
  CHECK(families[1].family == "copy");
}

TEST_CASE("a graph launch gives each family one api sample until it leaves the join",
          "[unit][family_fold]") {
  TraceFixture trace;
  PathNames paths(trace.data);
  FamilyFold fold(trace.data, paths, FamilyRules::Default());
  const LaunchRecord graph = trace.Launch(1000, 1, {}, 1040);
  ActivityRecord node = trace.Kernel(1100, 1200, "_Z1kv");
  node.correlation_id = 5;
  node.graph_node_id = 1;
  fold.Fold(node, &graph);
  node.graph_node_id = 2;
  fold.Fold(node, &graph);
  fold.ForgetLaunch(5);
  fold.Fold(node, &graph);  // the same correlation id again, after the launch left
  const LaunchRecord no_exit = trace.Launch(2000, 1);
  ActivityRecord plain = trace.Kernel(1950, 2100, "_Z1kv");
  fold.Fold(plain, &no_exit);
  const std::vector<FamilyStats> families = fold.Finish();
  REQUIRE(families.size() == 1);
  const FamilyStats& k = families[0];
  CHECK(k.launch_api.count == 2);
  CHECK(k.launch_api.total == 80);
  CHECK(k.launch_latency.count == 4);  // one per kernel with a launch
  CHECK(k.launch_latency.min == -50);  // started before its launch's timestamp
  CHECK(k.launch_latency.max == 100);
}

}  // namespace
}  // namespace gpuattr::collector::testing
