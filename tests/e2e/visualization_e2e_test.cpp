// Issue 7's pictures, end to end (docs/visualization.md): the timeline that `gpuattr run --trace`
// writes, checked against the simulator's truth (one track per stream, one slice per activity,
// one slice per NVTX range, one flow per joined activity, a graph launch fanning out to its
// kernels, exact nanoseconds); the folded stacks and speedscope profiles, whose weights must sum
// exactly to the report's attributed device time on every scenario tried; and `gpuattr export`
// on an imported trace with graph launches.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "scenario_check.h"
#include "subprocess.h"
#include "test_files.h"

namespace gpuattr::e2e {
namespace {

using nlohmann::json;
using test_support::ProcessResult;
using test_support::ReadFile;
using test_support::ReadJson;
using test_support::RunProcess;
using test_support::TempDir;

// Two threads, three streams, a memcpy and a memset, a graph of three kernels captured inside a
// range and launched twice, start/end ranges, an unranged launch on a worker (inherited).
constexpr char kTimelineScenario[] = R"({
  "description": "timeline export: every kind of track, slice and flow",
  "processes": [{
    "name": "viz", "env": {"RANK": "3"},
    "threads": [
      {"name": "main", "ops": [
        {"capture_begin": "g", "stream": 3},
        {"push": "captured"},
        {"launch": "_Z6graphAPf", "stream": 3, "us": 30},
        {"launch": "_Z6graphBPf", "stream": 3, "us": 20},
        {"launch": "_Z6graphCPf", "stream": 3, "us": 10},
        {"pop": true},
        {"capture_end": "g"},
        {"repeat": 2, "ops": [
          {"push": "step"},
          {"range_start": "span"},
          {"push": "forward"},
          {"memcpy": "HtoD", "bytes": 1048576, "stream": 2, "us": 40},
          {"launch": "_Z4gemmPfS_", "stream": 1, "us": 100},
          {"memset": 0, "bytes": 4096, "stream": 2, "us": 5},
          {"pop": true},
          {"graph_launch": "g", "stream": 3},
          {"range_end": "span"},
          {"sync": "device"},
          {"pop": true}
        ]},
        {"push": "tail"},
        {"start_thread": "worker"},
        {"join_thread": "worker"},
        {"sync": "device"},
        {"pop": true}
      ]},
      {"name": "worker", "ops": [
        {"push": "backward"},
        {"launch": "_Z3bwdPf", "stream": 1, "us": 50},
        {"pop": true},
        {"launch": "_Z6unrangedv", "stream": 1, "us": 5}
      ]}
    ]
  }]
})";

// Two ranks with different pass trees: the folded stacks start with a frame per process.
constexpr char kTwoRanksScenario[] = R"({
  "processes": [
    {"name": "rank0", "env": {"RANK": "0"}, "threads": [{"name": "main", "ops": [
      {"push": "step"}, {"push": "forward"},
      {"launch": "_Z4gemmPfS_", "stream": 0, "us": 300},
      {"launch": "_Z4reluPf", "stream": 0, "us": 40}, {"pop": true},
      {"push": "backward"}, {"launch": "_Z4gemmPfS_", "stream": 0, "us": 500}, {"pop": true},
      {"sync": "device"}, {"pop": true}]}]},
    {"name": "rank1", "env": {"RANK": "1"}, "threads": [{"name": "main", "ops": [
      {"push": "step"}, {"push": "forward; fused"},
      {"memcpy": "HtoD", "bytes": 65536, "stream": 1, "us": 30},
      {"launch": "_Z4gemmPfS_", "stream": 0, "us": 200}, {"pop": true},
      {"sync": "device"}, {"pop": true},
      {"launch": "_Z6strayv", "stream": 0, "us": 10}, {"sync": "device"}]}]}
  ]
})";

// The trace's text with every "ts" and "dur" turned from microseconds with exactly three
// decimals into integer nanoseconds, so the comparison with the truth is exact. A time written
// any other way fails the test.
std::string TimesInNanoseconds(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t key_length = 0;
    if (text.compare(i, 5, "\"ts\":") == 0) key_length = 5;
    if (text.compare(i, 6, "\"dur\":") == 0) key_length = 6;
    if (key_length == 0) {
      out.push_back(text[i++]);
      continue;
    }
    out.append(text, i, key_length);
    i += key_length;
    size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    INFO("time at offset " << i << ": " << text.substr(i, 24));
    REQUIRE(digits > i);
    REQUIRE(digits + 4 <= text.size());
    REQUIRE(text[digits] == '.');
    for (size_t k = 1; k <= 3; ++k) {
      REQUIRE(std::isdigit(static_cast<unsigned char>(text[digits + k])));
    }
    REQUIRE_FALSE(std::isdigit(static_cast<unsigned char>(text[digits + 4])));
    std::string whole = text.substr(i, digits - i);
    whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size() - 1));
    const std::string fraction = text.substr(digits + 1, 3);
    out += whole == "0" ? std::to_string(std::stoi(fraction)) : whole + fraction;
    i = digits + 4;
  }
  return out;
}

json ReadTrace(const std::string& path) {
  const std::string text = ReadFile(path);
  REQUIRE_FALSE(text.empty());
  const json trace = json::parse(TimesInNanoseconds(text), nullptr, false);
  REQUIRE_FALSE(trace.is_discarded());
  REQUIRE(trace.contains("traceEvents"));
  return trace;
}

// A device slice's kind (kernel, memcpy, memset); empty for any other event.
std::string DeviceKind(const json& event) {
  if (event["ph"] != "X" || event["cat"] != "gpu" || !event["args"].contains("kind")) return "";
  return event["args"]["kind"].get<std::string>();
}

bool IsDeviceSlice(const json& event) {
  const std::string kind = DeviceKind(event);
  return kind == "kernel" || kind == "memcpy" || kind == "memset";
}

struct Slice {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string cat;
  std::string name;
  std::string kind;  // DeviceKind
};

// Every X slice of the trace by track, with times already in nanoseconds (ReadTrace).
using Tracks = std::map<std::pair<uint64_t, uint64_t>, std::vector<Slice>>;  // (pid, tid)

Tracks SlicesByTrack(const json& events) {
  Tracks tracks;
  for (const json& event : events) {
    if (event["ph"] != "X") continue;
    const uint64_t start = event["ts"].get<uint64_t>();
    tracks[{event["pid"].get<uint64_t>(), event["tid"].get<uint64_t>()}].push_back(
        {start, start + event["dur"].get<uint64_t>(), event["cat"].get<std::string>(),
         event["name"].get<std::string>(), DeviceKind(event)});
  }
  return tracks;
}

// The slice a flow event at `ts` with category `cat` binds to in every viewer: Chrome DevTools
// binds only a slice of the same start and category, on the event's track.
const Slice* BoundSlice(const Tracks& tracks, const json& flow_event) {
  auto it = tracks.find({flow_event["pid"].get<uint64_t>(), flow_event["tid"].get<uint64_t>()});
  if (it == tracks.end()) return nullptr;
  for (const Slice& slice : it->second) {
    if (slice.start == flow_event["ts"].get<uint64_t>() && slice.cat == flow_event["cat"]) {
      return &slice;
    }
  }
  return nullptr;
}

// One launch arrow as a viewer draws it: the launch call and the device slice its two flow
// events bind to.
struct BoundFlow {
  const Slice* call;
  const Slice* device;
};

// Every flow of the trace, bound: each `s` binds to a launch slice (no device kind) at its start,
// each `f` ("bp": "e") to a kernel, memcpy or memset slice at its start, one of each per id, and
// no arrow ends before it starts (catapult and Perfetto drop those).
std::vector<BoundFlow> BindFlows(const json& events, const Tracks& tracks) {
  std::map<uint64_t, const Slice*> calls;  // by flow id
  for (const json& event : events) {
    if (event["ph"] != "s") continue;
    INFO("flow start " << event.dump());
    const Slice* call = BoundSlice(tracks, event);
    REQUIRE(call != nullptr);
    CHECK(call->kind.empty());
    CHECK(calls.emplace(event["id"].get<uint64_t>(), call).second);
  }
  std::vector<BoundFlow> flows;
  for (const json& event : events) {
    if (event["ph"] != "f") continue;
    INFO("flow end " << event.dump());
    CHECK(event["bp"] == "e");
    const Slice* device = BoundSlice(tracks, event);
    REQUIRE(device != nullptr);
    CHECK((device->kind == "kernel" || device->kind == "memcpy" || device->kind == "memset"));
    auto call = calls.find(event["id"].get<uint64_t>());
    REQUIRE(call != calls.end());
    CHECK(device->start >= call->second->start);
    flows.push_back({call->second, device});
    calls.erase(call);
  }
  CHECK(calls.empty());  // every start has its end
  return flows;
}

// Folded text -> (frames, weight) per line.
std::vector<std::pair<std::vector<std::string>, uint64_t>> ParseFolded(const std::string& text) {
  std::vector<std::pair<std::vector<std::string>, uint64_t>> stacks;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    std::vector<std::string> frames;
    std::string frame;
    std::istringstream parts(line.substr(0, space));
    while (std::getline(parts, frame, ';')) frames.push_back(frame);
    stacks.emplace_back(frames, std::stoull(line.substr(space + 1)));
  }
  return stacks;
}

void CollectPasses(const json& pass, std::vector<const json*>& out) {
  out.push_back(&pass);
  for (const json& child : pass["children"]) CollectPasses(child, out);
}

uint64_t AttributedNs(const json& process) {
  uint64_t sum = 0;
  for (const json& root : process["passes"]) sum += root["device"]["total_ns"].get<uint64_t>();
  return sum;
}

TEST_CASE(
    "The timeline of a run has one track per stream and the truth's slices, flows and exact times",
    "[visualization][timeline]") {
  TempDir dir;
  const std::string scenario = dir.File("timeline.json");
  std::ofstream(scenario) << kTimelineScenario;
  const ProcessResult run = RunProcess(
      {GPUATTR_BIN, "run", "--quiet", "-o", dir.File("report.json"), "--trace",
       dir.File("trace.json"), "--", SIMGPU_RUN, scenario, "--truth", dir.File("truth.json")});
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  const json truth = ReadJson(dir.File("truth.json"));
  REQUIRE(truth["processes"].size() == 1);
  const json& expected = truth["processes"][0];
  const uint64_t pid = expected["pid"].get<uint64_t>();
  CheckAgainstTruth(report, truth);

  const json trace = ReadTrace(dir.File("trace.json"));
  const json& events = trace["traceEvents"];

  // Names: the process is labelled with its rank; each stream track says device and stream.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> stream_of_tid;  // tid -> (device, stream)
  std::map<uint64_t, std::string> thread_names;
  bool process_named = false;
  bool rank_labelled = false;
  for (const json& event : events) {
    if (event["ph"] != "M" || event["pid"] != pid) continue;
    const std::string name = event["args"].value("name", "");
    if (event["name"] == "process_name") process_named = name.find("rank 3") != std::string::npos;
    if (event["name"] == "process_labels") rank_labelled = event["args"]["labels"] == "rank 3";
    if (event["name"] == "thread_name") {
      thread_names[event["tid"].get<uint64_t>()] = name;
      // "stream S (GPU D)", or "stream S (GPU D, device name)".
      unsigned stream = 0;
      unsigned device = 0;
      if (std::sscanf(name.c_str(), "stream %u (GPU %u", &stream, &device) == 2) {
        stream_of_tid[event["tid"].get<uint64_t>()] = {device, stream};
      }
    }
  }
  CHECK(process_named);
  CHECK(rank_labelled);
  std::set<std::pair<uint64_t, uint64_t>> truth_streams;
  for (const json& activity : expected["activities"]) {
    truth_streams.insert({activity["device"].get<uint64_t>(), activity["stream"].get<uint64_t>()});
  }
  std::set<std::pair<uint64_t, uint64_t>> trace_streams;
  for (const auto& [tid, stream] : stream_of_tid) trace_streams.insert(stream);
  CHECK(stream_of_tid.size() == truth_streams.size());
  CHECK(trace_streams == truth_streams);
  for (const char* thread : {"main", "worker"}) {
    CHECK(std::any_of(thread_names.begin(), thread_names.end(),
                      [&](const auto& entry) { return entry.second == thread; }));
  }

  // Device slices: the truth's activities, exactly, on their streams' tracks, with the truth's
  // attribution and path.
  using DeviceKey = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, std::string>;
  std::multiset<DeviceKey> truth_activities;
  std::map<DeviceKey, std::pair<json, std::string>> truth_paths;
  for (const json& activity : expected["activities"]) {
    const DeviceKey key{activity["device"].get<uint64_t>(), activity["stream"].get<uint64_t>(),
                        activity["start_ns"].get<uint64_t>(), activity["end_ns"].get<uint64_t>(),
                        activity["kind"].get<std::string>()};
    truth_activities.insert(key);
    truth_paths[key] = {activity["range_path"], activity["attribution"]};
  }
  std::multiset<DeviceKey> trace_activities;
  const Tracks tracks = SlicesByTrack(events);
  for (const json& event : events) {
    if (event["pid"] != pid || !IsDeviceSlice(event)) continue;
    const uint64_t start = event["ts"].get<uint64_t>();
    const uint64_t end = start + event["dur"].get<uint64_t>();
    const uint64_t tid = event["tid"].get<uint64_t>();
    REQUIRE(stream_of_tid.count(tid) == 1);
    const auto [device, stream] = stream_of_tid.at(tid);
    CHECK(event["args"]["device"] == device);
    CHECK(event["args"]["stream"] == stream);
    CHECK_FALSE(event["args"]["family"].get<std::string>().empty());
    const DeviceKey key{device, stream, start, end, DeviceKind(event)};
    trace_activities.insert(key);
    if (truth_paths.count(key) == 1) {
      CHECK(event["args"]["path"] == truth_paths[key].first);
      CHECK(event["args"]["attribution"] == truth_paths[key].second);
    }
  }
  CHECK(trace_activities.size() == expected["activities"].size());
  CHECK(trace_activities == truth_activities);

  // Host ranges: one slice per push/pop range of the truth, path by path; their times are the
  // shim's NVTX timestamps (the truth's are the simulator's, taken around the call), so they
  // must reproduce the report's host statistics exactly. Start/end ranges are async pairs.
  std::multiset<json> truth_ranges;
  size_t truth_spans = 0;
  for (const json& range : expected["ranges"]) {
    if (range["kind"] == "start_end") {
      ++truth_spans;
      continue;
    }
    truth_ranges.insert(range["path"]);
  }
  std::multiset<json> trace_ranges;
  std::map<json, std::vector<uint64_t>> durations_by_path;
  size_t span_begins = 0;
  size_t span_ends = 0;
  for (const json& event : events) {
    if (event["pid"] != pid) continue;
    const std::string category = event.value("cat", "");  // metadata events have none
    if (event["ph"] == "X" && category == "nvtx") {
      trace_ranges.insert(event["args"]["path"]);
      durations_by_path[event["args"]["path"]].push_back(event["dur"].get<uint64_t>());
      CHECK(event["name"] == event["args"]["path"].back());
    }
    if (category == "nvtx_span") {
      span_begins += event["ph"] == "b";
      span_ends += event["ph"] == "e";
    }
  }
  CHECK(trace_ranges == truth_ranges);
  std::vector<const json*> passes;
  for (const json& root : report["processes"][0]["passes"]) CollectPasses(root, passes);
  for (const json* pass : passes) {
    INFO("pass " << (*pass)["path"].dump());
    auto& durations = durations_by_path[(*pass)["path"]];
    REQUIRE(durations.size() == (*pass)["instances"].get<size_t>());
    if (durations.empty()) continue;
    const json& host = (*pass)["host_ns"];
    uint64_t total = 0;
    for (const uint64_t ns : durations) total += ns;
    CHECK(host["total"] == total);
    CHECK(host["min"] == *std::min_element(durations.begin(), durations.end()));
    CHECK(host["max"] == *std::max_element(durations.begin(), durations.end()));
  }
  CHECK(span_begins == truth_spans);
  CHECK(span_ends == truth_spans);

  // Flows: one per activity with a launch, bound as viewers bind them (BindFlows), ending on a
  // stream track; each graph launch fans out to the graph's three kernels.
  size_t joined = 0;
  std::set<uint64_t> graph_launches;
  for (const json& activity : expected["activities"]) {
    if (!activity["correlation_id"].is_null()) ++joined;
    if (!activity["graph_node"].is_null())
      graph_launches.insert(activity["correlation_id"].get<uint64_t>());
  }
  const std::vector<BoundFlow> flows = BindFlows(events, tracks);
  CHECK(flows.size() == joined);
  std::map<std::string, size_t> flows_by_launch;
  std::set<const Slice*> stream_slices;
  for (const auto& [tid, stream] : stream_of_tid) {
    auto track = tracks.find({pid, tid});
    if (track == tracks.end()) continue;
    for (const Slice& slice : track->second) stream_slices.insert(&slice);
  }
  for (const BoundFlow& flow : flows) {
    CHECK(stream_slices.count(flow.device) == 1);
    ++flows_by_launch[std::to_string(flow.call->start)];
  }
  size_t graph_launch_slices = 0;
  for (const json& event : events) {
    if (event["ph"] == "X" && event["name"] == "launch graph") {
      ++graph_launch_slices;
      CHECK(flows_by_launch[std::to_string(event["ts"].get<uint64_t>())] == 3);
    }
  }
  CHECK(graph_launch_slices == graph_launches.size());
  CHECK(graph_launches.size() == 2);
}

TEST_CASE("Every launch arrow of the graph microstep binds as viewers bind it",
          "[visualization][timeline]") {
  TempDir dir;
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", dir.File("report.json"), "--trace",
                  dir.File("trace.json"), "--", SIMGPU_RUN,
                  std::string(GPUATTR_SCENARIO_DIR) + "/graph_microstep.json", "--truth",
                  dir.File("truth.json")});
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  const json truth = ReadJson(dir.File("truth.json"));
  size_t joined = 0;
  for (const json& process : truth["processes"]) {
    for (const json& activity : process["activities"]) {
      joined += !activity["correlation_id"].is_null();
    }
  }
  const json trace = ReadTrace(dir.File("trace.json"));
  const std::vector<BoundFlow> flows =
      BindFlows(trace["traceEvents"], SlicesByTrack(trace["traceEvents"]));
  CHECK(joined > 0);
  CHECK(flows.size() == joined);
}

TEST_CASE(
    "Folded stacks and speedscope profiles sum exactly to the report's attributed device time",
    "[visualization][folded]") {
  const std::string scenario = GENERATE(
      as<std::string>{}, "nested_ranges.json", "graph_microstep.json", "autograd_threads.json",
      "two_streams_overlap.json", "activation_checkpointing.json", "launch_outside_range.json",
      "warmup_steps.json", "comm_overlap.json", "two ranks (inline)");
  INFO("scenario " << scenario);
  TempDir dir;
  std::string scenario_path = std::string(GPUATTR_SCENARIO_DIR) + "/" + scenario;
  if (scenario == "two ranks (inline)") {
    scenario_path = dir.File("two_ranks.json");
    std::ofstream(scenario_path) << kTwoRanksScenario;
  }
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "run", "--quiet", "-o", dir.File("report.json"), "--folded",
                  dir.File("device.folded"), "--speedscope", dir.File("device.speedscope.json"),
                  "--", SIMGPU_RUN, scenario_path, "--truth", dir.File("truth.json")},
                 {}, 120);
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  const json report = ReadJson(dir.File("report.json"));
  REQUIRE(report["processes"].is_array());
  const auto stacks = ParseFolded(ReadFile(dir.File("device.folded")));
  const bool prefixed = report["processes"].size() > 1;
  if (scenario == "two ranks (inline)") {
    REQUIRE(prefixed);
    // The folded format has no escaping: ';' in a range name becomes ':'.
    CHECK(std::any_of(stacks.begin(), stacks.end(), [](const auto& stack) {
      return stack.first.size() == 4 && stack.first[0].rfind("rank 1 (pid ", 0) == 0 &&
             stack.first[2] == "forward: fused";
    }));
  }

  // Per process (the first frame names it when there are several), and per pass: the stacks
  // ending under a pass path sum to its self time; the "[unattributed: REASON]" stacks are the
  // report's unattributed time by reason. Together: the process's device time.
  uint64_t report_total = 0;
  uint64_t folded_total = 0;
  for (const json& process : report["processes"]) {
    const uint64_t attributed = AttributedNs(process);
    std::map<std::string, uint64_t> unattributed_by_reason;  // of the report
    for (const json& entry : process["coverage"]["unattributed"]) {
      if (entry["ns"].get<uint64_t>() > 0) {
        unattributed_by_reason["[unattributed: " + entry["reason"].get<std::string>() + "]"] =
            entry["ns"].get<uint64_t>();
      }
    }
    report_total += attributed;
    for (const auto& [reason, ns] : unattributed_by_reason) report_total += ns;
    const std::string label =
        (process["rank"].is_null()
             ? "pid "
             : "rank " + std::to_string(process["rank"].get<int>()) + " (pid ") +
        std::to_string(process["pid"].get<uint64_t>()) + (process["rank"].is_null() ? "" : ")");
    std::map<std::vector<std::string>, uint64_t> self_by_path;
    std::map<std::string, uint64_t> folded_unattributed;
    uint64_t process_sum = 0;
    for (const auto& [frames, ns] : stacks) {
      if (prefixed && frames.front() != label) continue;
      if (frames.size() == (prefixed ? 2u : 1u) && frames.back().rfind("[unattributed: ", 0) == 0) {
        folded_unattributed[frames.back()] += ns;
        folded_total += ns;
        continue;
      }
      REQUIRE(frames.size() >= (prefixed ? 3u : 2u));
      std::vector<std::string> path(frames.begin() + (prefixed ? 1 : 0), frames.end() - 1);
      self_by_path[path] += ns;
      process_sum += ns;
    }
    CHECK(process_sum == attributed);
    CHECK(folded_unattributed == unattributed_by_reason);
    folded_total += process_sum;
    std::vector<const json*> passes;
    for (const json& root : process["passes"]) CollectPasses(root, passes);
    for (const json* pass : passes) {
      auto path = (*pass)["path"].get<std::vector<std::string>>();
      for (std::string& name : path) std::replace(name.begin(), name.end(), ';', ':');
      INFO("pass " << (*pass)["path"].dump());
      const uint64_t self = (*pass)["device"]["self_ns"].get<uint64_t>();
      CHECK((self_by_path.count(path) ? self_by_path[path] : 0) == self);
    }
  }
  CHECK(folded_total == report_total);
  uint64_t all_lines = 0;
  for (const auto& [frames, ns] : stacks) all_lines += ns;
  CHECK(all_lines == report_total);

  // Speedscope: one profile per process, the same stacks in the same order.
  const json speedscope = ReadJson(dir.File("device.speedscope.json"));
  REQUIRE_FALSE(speedscope.is_discarded());
  CHECK(speedscope["$schema"] == "https://www.speedscope.app/file-format-schema.json");
  REQUIRE(speedscope["profiles"].size() == report["processes"].size());
  const json& frames = speedscope["shared"]["frames"];
  uint64_t speedscope_total = 0;
  size_t line = 0;
  for (const json& profile : speedscope["profiles"]) {
    CHECK(profile["type"] == "sampled");
    CHECK(profile["unit"] == "nanoseconds");
    REQUIRE(profile["samples"].size() == profile["weights"].size());
    uint64_t profile_total = 0;
    for (size_t i = 0; i < profile["samples"].size(); ++i, ++line) {
      const uint64_t weight = profile["weights"][i];
      profile_total += weight;
      REQUIRE(line < stacks.size());
      CHECK(weight == stacks[line].second);
      std::vector<std::string> names;
      for (const json& index : profile["samples"][i])
        names.push_back(frames[index.get<size_t>()]["name"]);
      std::vector<std::string> folded = stacks[line].first;
      if (prefixed) folded.erase(folded.begin());
      // Speedscope keeps names as they are; the folded text cannot carry ';'.
      for (std::string& name : names) std::replace(name.begin(), name.end(), ';', ':');
      CHECK(names == folded);
    }
    CHECK(profile["endValue"] == profile_total);
    speedscope_total += profile_total;
  }
  CHECK(speedscope_total == report_total);
  if (scenario == "two ranks (inline)") {
    // Samples in time order: rank 0's forward ran before its backward (alphabetically the other
    // way round), so speedscope's time-order view reads as the step ran.
    const json& rank0 = speedscope["profiles"][0];
    std::optional<size_t> first_forward, first_backward;
    for (size_t i = 0; i < rank0["samples"].size(); ++i) {
      for (const json& index : rank0["samples"][i]) {
        const std::string name = frames[index.get<size_t>()]["name"];
        if (name == "forward" && !first_forward) first_forward = i;
        if (name == "backward" && !first_backward) first_backward = i;
      }
    }
    REQUIRE(first_forward);
    REQUIRE(first_backward);
    CHECK(*first_forward < *first_backward);
  }
}

TEST_CASE(
    "gpuattr export draws an imported trace with graph launches: slices, fan-out flows, folded "
    "sums",
    "[visualization][export]") {
  const std::string trace_file =
      std::string(GPUATTR_SOURCE_DIR) +
      "/../shared/traces/tracelens_mi300x_vllm_graph/graph_execution.json.gz";
  TempDir dir;
  const ProcessResult run =
      RunProcess({GPUATTR_BIN, "export", "--perfetto", dir.File("trace.json"), "--folded",
                  dir.File("device.folded"), "-o", dir.File("report.json"), trace_file},
                 {}, 120);
  INFO("gpuattr stderr: " << run.err);
  REQUIRE(ExitStatus(run) == 0);
  REQUIRE(SchemaValid(dir.File("report.json")));
  const json report = ReadJson(dir.File("report.json"));
  const json trace = ReadTrace(dir.File("trace.json"));

  uint64_t activities = 0;
  uint64_t orphans = 0;
  uint64_t attributed = 0;
  for (const json& process : report["processes"]) {
    const json& totals = process["totals"];
    activities += totals["kernels"].get<uint64_t>() + totals.value("memcpys", uint64_t{0}) +
                  totals.value("memsets", uint64_t{0});
    orphans += process["loss"]["orphan_activities"].get<uint64_t>();
    attributed += AttributedNs(process);
  }
  size_t device_slices = 0;
  const Tracks tracks = SlicesByTrack(trace["traceEvents"]);
  for (const json& event : trace["traceEvents"]) device_slices += IsDeviceSlice(event);
  CHECK(device_slices == activities);
  const std::vector<BoundFlow> flows = BindFlows(trace["traceEvents"], tracks);
  CHECK(flows.size() == activities - orphans);
  std::map<const Slice*, size_t> flows_per_graph_call;
  for (const BoundFlow& flow : flows) {
    if (flow.call->name == "launch graph") ++flows_per_graph_call[flow.call];
  }
  // Graph launches fan out: at least one launch call starts several flows.
  REQUIRE_FALSE(flows_per_graph_call.empty());
  size_t widest = 0;
  for (const auto& [call, count] : flows_per_graph_call) widest = std::max(widest, count);
  CHECK(widest > 1);

  // Attributed stacks sum to the attributed time; the unattributed ones to the rest.
  uint64_t folded = 0;
  uint64_t unattributed = 0;
  for (const auto& [frames, ns] : ParseFolded(ReadFile(dir.File("device.folded")))) {
    (frames.back().rfind("[unattributed: ", 0) == 0 ? unattributed : folded) += ns;
  }
  CHECK(folded == attributed);
  uint64_t report_unattributed = 0;
  for (const json& process : report["processes"]) {
    for (const json& entry : process["coverage"]["unattributed"]) {
      report_unattributed += entry["ns"].get<uint64_t>();
    }
  }
  CHECK(unattributed == report_unattributed);

  const ProcessResult nothing = RunProcess({GPUATTR_BIN, "export", trace_file});
  CHECK(ExitStatus(nothing) == 2);
  CHECK(nothing.err.find("--perfetto") != std::string::npos);
}

}  // namespace
}  // namespace gpuattr::e2e
