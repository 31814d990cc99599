// RestrictTruthToWindow on a small hand-written truth (window [450, 900]): which activities,
// ranges and marks stay, and how graph activities captured before the window are re-attributed.
#include "window_truth.h"

#include <catch2/catch.hpp>

#include "truth_compare.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;

json Range(const std::string& thread, const json& path, uint64_t start, const json& end,
           const std::string& kind = "push_pop") {
  return {{"thread", thread}, {"domain", nullptr}, {"path", path},
          {"kind", kind},     {"start_ns", start}, {"end_ns", end}};
}

json Kernel(const std::string& name, uint64_t launch, const std::string& thread,
            const std::string& attribution, const json& path) {
  return {{"kind", "kernel"},
          {"name", name},
          {"correlation_id", launch},
          {"device", 0},
          {"stream", 0},
          {"launch_ns", launch},
          {"start_ns", launch + 5},
          {"end_ns", launch + 15},
          {"thread", thread},
          {"range_path", path},
          {"attribution", attribution},
          {"graph_node", nullptr}};
}

// A graph node of `graph` captured on `capture_thread` under `capture_path`, launched by `thread`.
json Node(const std::string& name, int graph, uint64_t launch, const std::string& thread,
          const std::string& capture_thread, const json& capture_path) {
  json node = Kernel(name, launch, thread, "captured", capture_path);
  node["graph_node"] = 1000 + launch;
  node["graph_id"] = graph;
  node["capture_thread"] = capture_thread;
  return node;
}

// main: step [200, 400), step [500, 800) with step/fwd [510, 600), io (start/end) [600, 700),
// step [850, 1000); worker: bwd [300, 520), bwd from 880, never closed. main pushed first.
json Truth() {
  json ranges =
      json::array({Range("main", {"step"}, 200, 400), Range("worker", {"bwd"}, 300, 520),
                   Range("main", {"step"}, 500, 800), Range("main", {"step", "fwd"}, 510, 600),
                   Range("main", {"io"}, 600, 700, "start_end"), Range("main", {"step"}, 850, 1000),
                   Range("worker", {"bwd"}, 880, nullptr)});
  json activities = json::array({
      Kernel("before", 300, "main", "direct", {"step"}),
      Kernel("direct", 520, "main", "direct", {"step", "fwd"}),
      // Graph 1, first launched at 350: captured under main's step [200, 400), before.
      Node("g1_early", 1, 350, "main", "main", {"step"}),
      Node("g1", 1, 550, "main", "main", {"step"}),
      // Graph 2, first launched at 700: step [200, 400) or [500, 800)? Undecided.
      Node("g2", 2, 700, "main", "main", {"step"}),
      // Graph 3 under step/fwd [510, 600), first launched at 650: captured inside.
      Node("g3", 3, 650, "main", "main", {"step", "fwd"}),
      // Graphs 4-6 captured under worker's bwd [300, 520) before their first launches.
      Node("g4_early", 4, 310, "worker", "worker", {"bwd"}),
      Node("g4", 4, 460, "worker", "worker", {"bwd"}),
      Node("g5_early", 5, 320, "worker", "worker", {"bwd"}),
      Node("g5", 5, 820, "worker", "worker", {"bwd"}),
      Node("g6_early", 6, 330, "worker", "worker", {"bwd"}),
      Node("g6", 6, 860, "worker", "worker", {"bwd"}),
      Kernel("at_end", 900, "main", "direct", {"step"}),
      Kernel("after", 901, "main", "direct", {"step"}),
  });
  json marks = json::array({{{"thread", "main"}, {"name", "early"}, {"ns", 100}},
                            {{"thread", "main"}, {"name", "inside"}, {"ns", 460}}});
  json other = {{"pid", 43},
                {"rank", nullptr},
                {"activities", json::array()},
                {"ranges", json::array()},
                {"marks", json::array()}};
  return {{"processes", json::array({{{"pid", 42},
                                      {"rank", 0},
                                      {"name", "rank0"},
                                      {"exit_status", 0},
                                      {"activities", activities},
                                      {"ranges", ranges},
                                      {"marks", marks}},
                                     other})}};
}

const json& ByName(const json& process, const std::string& name) {
  for (const json& activity : process["activities"]) {
    if (activity["name"] == name) return activity;
  }
  FAIL("no activity " << name);
  throw std::logic_error("unreachable");
}

TEST_CASE("window truth keeps the window's launches and re-attributes earlier captures",
          "[unit][window_truth]") {
  const json restricted = RestrictTruthToWindow(Truth(), 42, 450, 900);
  REQUIRE(restricted["processes"].size() == 1);
  const json& process = restricted["processes"][0];
  CHECK(process["pid"] == 42);
  CHECK(process["rank"] == 0);
  CHECK(process["name"] == "rank0");

  std::vector<std::string> names;
  for (const json& activity : process["activities"]) names.push_back(activity["name"]);
  CHECK(names == std::vector<std::string>{"direct", "g1", "g2", "g3", "g4", "g5", "g6", "at_end"});

  CHECK(ByName(process, "direct")["attribution"] == "direct");
  // g1 @550: main's innermost range is step/fwd.
  CHECK(ByName(process, "g1")["attribution"] == "direct");
  CHECK(ByName(process, "g1")["range_path"] == json({"step", "fwd"}));
  CHECK(ByName(process, "g1")["graph_node"] == 1550);
  CHECK(ByName(process, "g2")["attribution"] == "captured");  // undecided: left as it was
  CHECK(ByName(process, "g3")["attribution"] == "captured");
  CHECK(ByName(process, "g3")["range_path"] == json({"step", "fwd"}));
  // g4 @460: the worker's bwd [300, 520) is open.
  CHECK(ByName(process, "g4")["attribution"] == "direct");
  CHECK(ByName(process, "g4")["range_path"] == json({"bwd"}));
  // g5 @820: nothing open on the worker nor on main (step ended at 800).
  CHECK(ByName(process, "g5")["attribution"] == "none");
  CHECK(ByName(process, "g5")["range_path"] == json::array());
  // g6 @860: the worker has nothing open; main (the main thread) has step [850, 1000).
  CHECK(ByName(process, "g6")["attribution"] == "inherited");
  CHECK(ByName(process, "g6")["range_path"] == json({"step"}));
  CHECK(process["ambiguous_captures"] == 1);

  REQUIRE(process["ranges"].size() == 3);
  CHECK(process["ranges"][0]["start_ns"] == 500);
  CHECK(process["ranges"][1]["path"] == json({"step", "fwd"}));
  CHECK(process["ranges"][2]["kind"] == "start_end");
  REQUIRE(process["marks"].size() == 1);
  CHECK(process["marks"][0]["name"] == "inside");

  // The expectation derived from it: each activity lasts 10 ns.
  const auto expected = ExpectFromTruth(restricted);
  REQUIRE(expected.size() == 1);
  CHECK(expected[0].kernels == 8);
  CHECK(expected[0].unattributed_ns == 10);                               // g5
  CHECK(expected[0].passes.at({"step", "fwd"}).self_ns == 10 + 10 + 10);  // direct, g1, g3
  CHECK(expected[0].passes.at({"step", "fwd"}).ns_by_attribution.at("captured") == 10);
  CHECK(expected[0].passes.at({"step"}).self_ns == 10 + 10 + 10);  // g2, g6, at_end
  CHECK(expected[0].passes.at({"bwd"}).ns_by_attribution.at("direct") == 10);
}

TEST_CASE("window truth of a pid it does not hold has no processes", "[unit][window_truth]") {
  CHECK(RestrictTruthToWindow(Truth(), 7, 0, 1000)["processes"].empty());
}

}  // namespace
}  // namespace gpuattr::e2e
