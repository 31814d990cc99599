// PathNames: names and passes of path nodes, the passes shared by the nodes of every step, and
// when the caches restart (a name read while undefined, a redefinition) and when they do not.
#include "analysis/path_names.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "trace_fixture.h"

namespace gpuattr::collector::testing {
namespace {

using Path = std::vector<std::string>;

TEST_CASE("the nodes of every numbered step share one pass, ProfilerStep#*", "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t first = trace.Node({"ProfilerStep#1", "nn.Module: Net_0", "backward"});
  const uint32_t second = trace.Node({"ProfilerStep#2", "nn.Module: Net_0", "backward"});
  const uint32_t other = trace.Node({"ProfilerStep#2x", "nn.Module: Net_0"});
  PathNames paths(trace.data);
  CHECK(paths.Of(second) == Path{"ProfilerStep#2", "nn.Module: Net_0", "backward"});
  CHECK(paths.PassIdOf(first) == paths.PassIdOf(second));
  CHECK(paths.PassOf(first) == Path{"ProfilerStep#*", "nn.Module: Net_0", "backward"});
  CHECK(paths.PassOf(other) == Path{"ProfilerStep#2x", "nn.Module: Net_0"});
  // Every prefix is a pass of its own: the root's (0), the step's, Net_0's, backward's, and
  // the two of the unnumbered name.
  CHECK(paths.pass_count() == 6);
  CHECK(paths.PassIdOf(0) == 0);
  CHECK(paths.PassPath(0).empty());
}

TEST_CASE("names defined before their first use never restart the caches", "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t forward = trace.Node({"step", "forward"});
  PathNames paths(trace.data);
  paths.Refresh();
  const uint32_t pass = paths.PassIdOf(forward);
  trace.Node({"step", "backward"});  // new definitions, none of them read before
  CHECK_FALSE(paths.Refresh());
  CHECK(paths.PassIdOf(forward) == pass);
}

TEST_CASE("a name read while undefined is read again once defined", "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t node = trace.Node({"step"});
  trace.data.path_nodes[node].name_string = 99;  // not defined yet
  PathNames paths(trace.data);
  CHECK(paths.Of(node) == Path{"<unknown:99>"});
  CHECK(paths.PassOf(node) == Path{"<unknown:99>"});
  trace.data.strings[99] = "ProfilerStep#3";
  ++trace.data.definitions;
  CHECK(paths.Refresh());
  CHECK(paths.Of(node) == Path{"ProfilerStep#3"});
  CHECK(paths.PassOf(node) == Path{"ProfilerStep#*"});
}

TEST_CASE("a redefined name restarts the caches", "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t node = trace.Node({"forward"});
  PathNames paths(trace.data);
  CHECK(paths.PassOf(node) == Path{"forward"});
  trace.data.strings[trace.Str("forward")] = "backward";
  ++trace.data.definitions;
  ++trace.data.redefinitions;
  CHECK(paths.Refresh());
  CHECK(paths.PassOf(node) == Path{"backward"});
  CHECK_FALSE(paths.Refresh());
}

TEST_CASE("a parent cycle ends the walk", "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t a = trace.Node({"a"});
  const uint32_t b = trace.Node({"a", "b"});
  trace.data.path_nodes[a].parent = b;  // a -> b -> a
  PathNames paths(trace.data);
  CHECK(paths.Of(a) == Path{"b", "a"});
  CHECK(paths.PassOf(a) == Path{"b", "a"});
}

TEST_CASE("derived nodes extend a trace's paths, share passes, and outlive a refresh",
          "[unit][path_names]") {
  TraceFixture trace;
  const uint32_t first = trace.Node({"ProfilerStep#1", "torch.compile: g forward"});
  const uint32_t second = trace.Node({"ProfilerStep#2", "torch.compile: g forward"});
  PathNames paths(trace.data);
  const uint32_t module = paths.DerivedChild(first, "nn.Module: fc");
  CHECK(paths.IsDerived(module));
  CHECK_FALSE(paths.IsDerived(first));
  CHECK_FALSE(paths.IsDerived(PathNames::kLastDerivedNode - 5));  // not made: a trace's id
  CHECK(paths.DerivedChild(first, "nn.Module: fc") == module);    // made once
  const uint32_t leaf = paths.DerivedChild(module, "backward");
  CHECK(paths.Of(leaf) ==
        Path{"ProfilerStep#1", "torch.compile: g forward", "nn.Module: fc", "backward"});
  const uint32_t other_step = paths.DerivedChild(second, "nn.Module: fc");
  CHECK(paths.PassIdOf(other_step) == paths.PassIdOf(module));
  CHECK(paths.PassOf(leaf) ==
        Path{"ProfilerStep#*", "torch.compile: g forward", "nn.Module: fc", "backward"});
  trace.data.strings[trace.Str("torch.compile: g forward")] = "renamed";
  ++trace.data.definitions;
  ++trace.data.redefinitions;
  CHECK(paths.Refresh());
  CHECK(paths.Of(leaf) == Path{"ProfilerStep#1", "renamed", "nn.Module: fc", "backward"});
}

TEST_CASE("a malformed trace's node with an id up among derived ones is the trace's",
          "[unit][path_names]") {
  TraceFixture trace;
  trace.data.path_nodes[PathNames::kLastDerivedNode] = {0, trace.Str("high"), 0};
  ++trace.data.definitions;
  PathNames paths(trace.data);
  CHECK(paths.Of(PathNames::kLastDerivedNode) == Path{"high"});
  CHECK(paths.PassOf(PathNames::kLastDerivedNode) == Path{"high"});
}

}  // namespace
}  // namespace gpuattr::collector::testing
