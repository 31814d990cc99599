// The picture exports' pure parts (collector/export/): folded stacks and speedscope from a pass
// tree, the Chrome trace writer fed observer calls directly, and the HTML page's embedding of
// the report (no URL, no early </script>, the report round-trips).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "export/chrome_trace.h"
#include "export/folded_stacks.h"
#include "export/html_report.h"
#include "test_files.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

PassNode Pass(std::vector<std::string> path, std::vector<std::pair<std::string, uint64_t>> families,
              std::vector<PassNode> children = {}) {
  PassNode node;
  node.name = path.back();
  node.path = std::move(path);
  node.self_by_family = std::move(families);
  for (const auto& [family, ns] : node.self_by_family) node.self_ns += ns;
  node.total_ns = node.self_ns;
  for (const PassNode& child : children) node.total_ns += child.total_ns;
  node.children = std::move(children);
  return node;
}

std::vector<PassNode> Tree() {
  return {Pass({"step"}, {{"[memcpy]", 7}},
               {Pass({"step", "fwd;bwd"}, {{"gemm", 100}, {"gelu", 20}, {"idle", 0}}),
                Pass({"step", "opt"}, {{"adam", 5}})})};
}

TEST_CASE("Folded stacks put the family last, skip zero weights and escape the separator",
          "[export][folded]") {
  const FoldedProcess process = FoldPasses(42, -1, Tree(), {});
  CHECK(process.label == "pid 42");
  REQUIRE(process.stacks.size() == 4);
  CHECK(RenderFolded({process}) ==
        "step;[memcpy] 7\n"
        "step;fwd:bwd;gemm 100\n"
        "step;fwd:bwd;gelu 20\n"
        "step;opt;adam 5\n");
  uint64_t sum = 0;
  for (const FoldedStack& stack : process.stacks) sum += stack.ns;
  CHECK(sum == Tree()[0].total_ns);
}

TEST_CASE("Unattributed time is a stack per reason, so no flame graph is empty without a word",
          "[export][folded]") {
  const std::vector<Unattributed> unattributed = {{"launch_not_seen", 30, 30, 3},
                                                  {"outside_any_range", 0, 0, 0}};
  CHECK(RenderFolded({FoldPasses(42, -1, {}, unattributed)}) ==
        "[unattributed: launch_not_seen] 30\n");
  const FoldedProcess both = FoldPasses(42, -1, Tree(), unattributed);
  REQUIRE(both.stacks.size() == 5);
  CHECK(both.stacks.back().frames == std::vector<std::string>{"[unattributed: launch_not_seen]"});
}

TEST_CASE("Folded stacks of several processes start with a frame naming each", "[export][folded]") {
  const std::string text =
      RenderFolded({FoldPasses(42, 0, Tree(), {}), FoldPasses(43, 1, Tree(), {})});
  CHECK(text.find("rank 0 (pid 42);step;opt;adam 5\n") != std::string::npos);
  CHECK(text.find("rank 1 (pid 43);step;fwd:bwd;gemm 100\n") != std::string::npos);
}

TEST_CASE("The speedscope profile holds one sampled profile per process with shared frames",
          "[export][speedscope]") {
  const Json document = Json::parse(RenderSpeedscope(
      {FoldPasses(42, 0, Tree(), {}), FoldPasses(43, -1, Tree(), {})}, "gpuattr test"));
  CHECK(document["exporter"] == "gpuattr test");
  REQUIRE(document["profiles"].size() == 2);
  const Json& frames = document["shared"]["frames"];
  CHECK(frames.size() == 7);  // step, [memcpy], fwd;bwd, gemm, gelu, opt, adam
  for (const Json& profile : document["profiles"]) {
    CHECK(profile["unit"] == "nanoseconds");
    CHECK(profile["endValue"] == 132);
    REQUIRE(profile["samples"].size() == 4);
    std::vector<std::string> names;
    for (const Json& index : profile["samples"][1])
      names.push_back(frames[index.get<size_t>()]["name"]);
    CHECK(names == std::vector<std::string>{"step", "fwd;bwd", "gemm"});
    CHECK(profile["weights"] == Json::array({7, 100, 20, 5}));
  }
  CHECK(document["profiles"][1]["name"] == "device time, pid 43");
}

TEST_CASE("The Chrome trace writer writes exact times, tracks, metadata and one flow per activity",
          "[export][timeline]") {
  test_support::TempDir dir;
  const std::string path = dir.File("trace.json");
  auto writer = ChromeTraceWriter::Create(path, "gpuattr test", ExistingFile::kReplace);
  REQUIRE(writer.ok());

  TraceData data;
  wire::Hello hello{};
  hello.pid = 7;
  hello.rank = 2;
  data.hello = hello;
  data.strings[1] = "main";
  data.thread_names[70] = 1;
  data.main_tid = 70;

  (*writer)->RangeClosed(7, HostRange{1000, 2000005, 70, 3}, {"step", "forward"});
  LaunchRecord launch;
  launch.enter_ns = 1500;
  launch.exit_ns = 1700;
  launch.tid = 70;
  launch.kind = static_cast<uint8_t>(wire::ApiKind::kKernel);
  launch.matched = true;
  ActivityRecord activity;
  activity.start_ns = 3005;
  activity.end_ns = 4010;
  activity.correlation_id = 9;
  activity.device = 1;
  activity.stream = 13;
  const std::string name = "gemm_kernel(float*)";
  const std::string family = "gemm";
  const std::vector<std::string> attributed = {"step", "forward"};
  ObservedActivity observed;
  observed.pid = 7;
  observed.activity = &activity;
  observed.launch = &launch;
  observed.kernel_name = &name;
  observed.family = &family;
  observed.path = &attributed;
  observed.attribution = AttributionKind::kDirect;
  (*writer)->ActivityReleased(observed);
  (*writer)->LaunchDone(7, 9, launch);
  (*writer)->ProcessFinished(data, ProcessAnalysis{});
  REQUIRE((*writer)->Commit().ok());

  const std::string text = test_support::ReadFile(path);
  CHECK(text.find("\"ts\":1.000,\"dur\":1999.005") != std::string::npos);  // the range
  CHECK(text.find("\"ts\":3.005,\"dur\":1.005") != std::string::npos);     // the kernel
  CHECK(text.find("\"ts\":1.500,\"dur\":0.200") != std::string::npos);     // the launch call
  const Json trace = Json::parse(text, nullptr, false);
  REQUIRE_FALSE(trace.is_discarded());
  CHECK(trace["displayTimeUnit"] == "ns");
  std::map<std::string, Json> by_phase;
  std::map<std::string, std::string> names;
  for (const Json& event : trace["traceEvents"]) {
    by_phase[event["ph"].get<std::string>() +
             (event["ph"] == "X" ? event["cat"].get<std::string>() +
                                       (event["args"].contains("kind") ? "/kind" : "")
                                 : "")] = event;
    if (event["ph"] == "M" && event["args"].contains("name")) {
      names[event["name"].get<std::string>() + ":" + std::to_string(event["tid"].get<uint64_t>())] =
          event["args"]["name"];
    }
  }
  // Viewers add pids and tids to names themselves; the stream leads its track's name.
  CHECK(names["process_name:0"] == "process rank 2");
  CHECK(names["thread_name:70"] == "main");
  CHECK(names["thread_name:" + std::to_string(kDeviceTrackTidBase)] == "stream 13 (GPU 1)");
  const Json& kernel = by_phase["Xgpu/kind"];
  CHECK(kernel["tid"] == kDeviceTrackTidBase);
  CHECK(kernel["name"] == name);
  CHECK(kernel["args"]["kind"] == "kernel");
  CHECK(kernel["args"]["family"] == "gemm");
  CHECK(kernel["args"]["path"] == Json(attributed));
  // The flow starts at the launch call's start and ends at the kernel's start, the flow and both
  // slices of one category (how Chrome DevTools pairs and binds flow events).
  CHECK(by_phase["s"]["tid"] == 70);
  CHECK(text.find("{\"ph\":\"s\",\"cat\":\"gpu\",\"name\":\"launch\",\"id\":1,"
                  "\"pid\":7,\"tid\":70,\"ts\":1.500}") != std::string::npos);
  CHECK(by_phase["f"]["tid"] == kDeviceTrackTidBase);
  CHECK(by_phase["f"]["bp"] == "e");
  CHECK(by_phase["f"]["cat"] == "gpu");
  CHECK(by_phase["Xgpu"]["cat"] == kernel["cat"]);
  CHECK(text.find("\"tid\":" + std::to_string(kDeviceTrackTidBase) + ",\"ts\":3.005}") !=
        std::string::npos);
  CHECK(by_phase["f"]["id"] == by_phase["s"]["id"]);
  CHECK(by_phase["Xgpu"]["name"] == "launch kernel");
}

TEST_CASE("Process sort indices put every rank first and fit in int32", "[export][timeline]") {
  test_support::TempDir dir;
  const std::string path = dir.File("trace.json");
  auto writer = ChromeTraceWriter::Create(path, "gpuattr test", ExistingFile::kReplace);
  REQUIRE(writer.ok());
  for (const auto& [pid, rank] : {std::pair<uint32_t, int32_t>{4194303, -1}, {12, 3}, {5, -1}}) {
    TraceData data;
    wire::Hello hello{};
    hello.pid = pid;
    hello.rank = rank;
    data.hello = hello;
    (*writer)->ProcessFinished(data, ProcessAnalysis{});
  }
  REQUIRE((*writer)->Commit().ok());
  const Json trace = Json::parse(test_support::ReadFile(path), nullptr, false);
  REQUIRE_FALSE(trace.is_discarded());
  std::map<uint64_t, int64_t> sort_index;  // by pid
  for (const Json& event : trace["traceEvents"]) {
    if (event["name"] == "process_sort_index") {
      sort_index[event["pid"].get<uint64_t>()] = event["args"]["sort_index"].get<int64_t>();
    }
  }
  REQUIRE(sort_index.size() == 3);
  CHECK(sort_index[12] == 3);
  CHECK(sort_index[5] > sort_index[12]);
  CHECK(sort_index[4194303] > sort_index[5]);
  for (const auto& [pid, index] : sort_index) CHECK(index <= INT32_MAX);
}

// The report a page embeds (its report-data script element), parsed.
Json EmbeddedReport(const std::string& page) {
  const std::string open = "<script id=\"report-data\" type=\"application/json\">";
  const size_t start = page.find(open);
  REQUIRE(start != std::string::npos);
  const size_t end = page.find("</script>", start);
  REQUIRE(end != std::string::npos);
  return Json::parse(page.substr(start + open.size(), end - start - open.size()), nullptr, false);
}

TEST_CASE("The HTML report written from a loaded report embeds its document, rows and all",
          "[export][html]") {
  // Two processes with step rows (one named with quotes, backslashes, spaces and a closing
  // script tag: the minifier keeps a string's spaces and the escaping is needed), as LoadReport
  // holds them: rows in columns, written into the page one at a time.
  const Json report = {
      {"schema_version", "gpuattr.report/1"},
      {"processes",
       {{{"pid", 7},
         {"steps",
          {{"range", "step"},
           {"rows", {{{"index", 0}, {"name", "a \" \\\" </script> b"}, {"busy_ns", 5}}}}}}},
        {{"pid", 8},
         {"steps",
          {{"range", "step"},
           {"rows", {{{"index", 0}, {"busy_ns", 1}}, {{"index", 1}, {"busy_ns", 2}}}}}}}}}};
  const LoadedReport loaded = LoadedReport::FromDocument(report);
  test_support::TempDir dir;
  REQUIRE(WriteHtmlReport(loaded, std::nullopt, dir.File("all.html")).ok());
  const std::string page = test_support::ReadFile(dir.File("all.html"));
  CHECK(page == RenderHtmlReport(report));  // the rows' DOM's page, byte for byte
  CHECK(EmbeddedReport(page) == report);
  // --pid: that process only, its own rows.
  REQUIRE(WriteHtmlReport(loaded, 8, dir.File("one.html")).ok());
  const Json one = EmbeddedReport(test_support::ReadFile(dir.File("one.html")));
  REQUIRE(one["processes"].size() == 1);
  CHECK(one["processes"][0] == report["processes"][1]);
}

TEST_CASE("The HTML report embeds the report without URLs or an early end of script",
          "[export][html]") {
  const Json report = {{"schema_version", "gpuattr.report/1"},
                       {"processes",
                        {{{"pid", 1},
                          {"passes", {{{"name", "</script><b>x"}, {"path", {"</script><b>x"}}}}},
                          {"refusals",
                           {{{"code", "cupti_unavailable"},
                             {"cause", "see https://example.invalid/a"},
                             {"remedy", "or http://example.invalid/b"}}}}}}}};
  const std::string page = RenderHtmlReport(report);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("@@GPUATTR_REPORT_JSON@@") == std::string::npos);
  const Json embedded = EmbeddedReport(page);
  REQUIRE_FALSE(embedded.is_discarded());
  CHECK(embedded == report);
  CHECK(page.find("Content-Security-Policy") != std::string::npos);
}

}  // namespace
}  // namespace gpuattr::collector
