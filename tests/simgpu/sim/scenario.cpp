#include "scenario.h"

#include <cmath>
#include <csignal>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "simgpu_control.h"

namespace gpuattr::simgpu {
namespace {

using nlohmann::json;

// Walks the document; the first error wins and every later check is skipped.
class Parser {
 public:
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  void Fail(const std::string& path, const std::string& what) {
    if (error_.empty()) error_ = path + ": " + what;
  }

  // Rejects keys outside `allowed`.
  bool Keys(const json& object, const std::string& path, const std::set<std::string>& allowed) {
    if (!object.is_object()) {
      Fail(path, "expected an object");
      return false;
    }
    for (const auto& [key, value] : object.items()) {
      if (allowed.count(key) == 0) {
        Fail(path + "." + key, "unknown key");
        return false;
      }
    }
    return true;
  }

  std::string String(const json& value, const std::string& path) {
    if (!value.is_string()) {
      Fail(path, "expected a string");
      return {};
    }
    const std::string s = value.get<std::string>();
    if (s.empty()) Fail(path, "expected a non-empty string");
    return s;
  }

  // An integer in [lo, hi].
  int64_t Integer(const json& value, const std::string& path, int64_t lo, int64_t hi) {
    if (!value.is_number_integer()) {
      Fail(path, "expected an integer");
      return lo;
    }
    const int64_t v = value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}
                          ? INT64_MAX
                          : value.get<int64_t>();
    if (v < lo || v > hi) {
      Fail(path, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return lo;
    }
    return v;
  }

  double Number(const json& value, const std::string& path, double lo, double hi) {
    if (!value.is_number()) {
      Fail(path, "expected a number");
      return lo;
    }
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < lo || v > hi) {
      Fail(path, "expected a number in [" + Format(lo) + ", " + Format(hi) + "]");
      return lo;
    }
    return v;
  }

  std::array<int32_t, 3> Dim3(const json& value, const std::string& path) {
    std::array<int32_t, 3> out{1, 1, 1};
    if (!value.is_array() || value.empty() || value.size() > 3) {
      Fail(path, "expected an array of 1 to 3 positive integers");
      return out;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      out[i] = static_cast<int32_t>(
          Integer(value[i], path + "[" + std::to_string(i) + "]", 1, INT32_MAX));
    }
    return out;
  }

  std::vector<Op> Ops(const json& value, const std::string& path, int depth) {
    std::vector<Op> ops;
    if (!value.is_array()) {
      Fail(path, "expected an array of ops");
      return ops;
    }
    if (depth > 16) {
      Fail(path, "repeat nested deeper than 16 levels");
      return ops;
    }
    for (size_t i = 0; i < value.size() && !failed(); ++i) {
      ops.push_back(ParseOp(value[i], path + "[" + std::to_string(i) + "]", depth));
    }
    return ops;
  }

 private:
  static std::string Format(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  // "us" (number) or "ns" (integer), exactly one; plus optional "jitter".
  void Duration(const json& op, const std::string& path, Op* out, bool required) {
    const bool has_us = op.contains("us");
    const bool has_ns = op.contains("ns");
    if (has_us && has_ns) {
      Fail(path, "give either \"us\" or \"ns\", not both");
      return;
    }
    if (has_us) {
      out->duration_ns =
          static_cast<uint64_t>(std::llround(Number(op["us"], path + ".us", 0, 1e9) * 1000.0));
    } else if (has_ns) {
      out->duration_ns =
          static_cast<uint64_t>(Integer(op["ns"], path + ".ns", 0, int64_t{1} << 50));
    } else if (required) {
      Fail(path, "missing duration: give \"us\" (a number) or \"ns\" (an integer)");
    }
    if (op.contains("jitter")) out->jitter = Number(op["jitter"], path + ".jitter", 0, 1);
  }

  void Placement(const json& op, const std::string& path, Op* out) {
    if (op.contains("stream")) {
      out->stream = static_cast<uint32_t>(Integer(op["stream"], path + ".stream", 0, 1 << 20));
    }
    if (op.contains("device")) {
      out->device = static_cast<uint32_t>(
          Integer(op["device"], path + ".device", 0, SIMGPU_DEVICE_COUNT - 1));
    }
  }

  Op ParseOp(const json& op, const std::string& path, int depth) {
    Op out;
    if (!op.is_object()) {
      Fail(path, "expected an op object");
      return out;
    }
    // "repeat" (an op, and graph_launch's count) is the kind only when no other kind key is.
    static const std::vector<std::string> kTypeKeys = {
        "push",        "pop",          "range_start", "range_end",
        "mark",        "launch",       "memcpy",      "memset",
        "cpu_us",      "start_thread", "join_thread", "capture_begin",
        "capture_end", "graph_launch", "sync",        "repeat_until_file",
        "fork",        "exit",         "crash",       "cupti_client"};
    std::string type;
    for (const std::string& key : kTypeKeys) {
      if (!op.contains(key)) continue;
      if (!type.empty()) {
        Fail(path,
             "an op has exactly one of its kind keys; found \"" + type + "\" and \"" + key + "\"");
        return out;
      }
      type = key;
    }
    if (type.empty() && op.contains("repeat")) type = "repeat";
    if (type.empty()) {
      Fail(path, op.empty() ? "empty op" : "unknown op \"" + op.begin().key() + "\"");
      return out;
    }
    const std::string at = path + "." + type;
    const json& v = op[type];
    const std::set<std::string> kTimed = {"us", "ns", "jitter", "stream", "device"};
    auto keys = [&](std::set<std::string> allowed) {
      allowed.insert(type);
      return Keys(op, path, allowed);
    };
    if (type == "push") {
      if (!keys({"domain"})) return out;
      out.type = OpType::kPush;
      out.name = String(v, at);
      if (op.contains("domain")) out.domain = String(op["domain"], path + ".domain");
    } else if (type == "pop") {
      if (!keys({"domain"})) return out;
      out.type = OpType::kPop;
      if (!v.is_boolean() || !v.get<bool>()) Fail(at, "expected true");
      if (op.contains("domain")) out.domain = String(op["domain"], path + ".domain");
    } else if (type == "range_start") {
      if (!keys({"id"})) return out;
      out.type = OpType::kRangeStart;
      out.name = String(v, at);
      out.id = op.contains("id") ? String(op["id"], path + ".id") : out.name;
    } else if (type == "range_end") {
      if (!keys({})) return out;
      out.type = OpType::kRangeEnd;
      out.id = String(v, at);
    } else if (type == "mark") {
      if (!keys({})) return out;
      out.type = OpType::kMark;
      out.name = String(v, at);
    } else if (type == "launch") {
      std::set<std::string> allowed = kTimed;
      allowed.insert({"grid", "block", "shared_mem", "static_shared_mem", "registers"});
      if (!keys(allowed)) return out;
      out.type = OpType::kLaunch;
      out.name = String(v, at);
      Placement(op, path, &out);
      Duration(op, path, &out, true);
      if (op.contains("grid")) out.grid = Dim3(op["grid"], path + ".grid");
      if (op.contains("block")) out.block = Dim3(op["block"], path + ".block");
      if (op.contains("shared_mem")) {
        out.shared_mem =
            static_cast<int32_t>(Integer(op["shared_mem"], path + ".shared_mem", 0, INT32_MAX));
      }
      if (op.contains("static_shared_mem")) {
        out.static_shared_mem = static_cast<int32_t>(
            Integer(op["static_shared_mem"], path + ".static_shared_mem", 0, INT32_MAX));
      }
      if (op.contains("registers")) {
        out.registers =
            static_cast<uint16_t>(Integer(op["registers"], path + ".registers", 0, 255));
      }
    } else if (type == "memcpy") {
      std::set<std::string> allowed = kTimed;
      allowed.insert({"bytes", "peer_device"});
      if (!keys(allowed)) return out;
      out.type = OpType::kMemcpy;
      out.name = String(v, at);
      static const std::set<std::string> kKinds = {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
      if (!failed() && kKinds.count(out.name) == 0) {
        Fail(at, "expected one of HtoD, DtoH, DtoD, HtoH, PtoP");
      }
      Placement(op, path, &out);
      Duration(op, path, &out, true);
      if (op.contains("bytes")) {
        out.bytes = static_cast<uint64_t>(Integer(op["bytes"], path + ".bytes", 0, INT64_MAX));
      }
      if (op.contains("peer_device")) {
        out.peer_device = static_cast<uint32_t>(
            Integer(op["peer_device"], path + ".peer_device", 0, SIMGPU_DEVICE_COUNT - 1));
      }
    } else if (type == "memset") {
      std::set<std::string> allowed = kTimed;
      allowed.insert("bytes");
      if (!keys(allowed)) return out;
      out.type = OpType::kMemset;
      out.value = static_cast<uint32_t>(Integer(v, at, 0, 255));
      Placement(op, path, &out);
      Duration(op, path, &out, true);
      if (op.contains("bytes")) {
        out.bytes = static_cast<uint64_t>(Integer(op["bytes"], path + ".bytes", 0, INT64_MAX));
      }
    } else if (type == "cpu_us") {
      if (!keys({"jitter"})) return out;
      out.type = OpType::kCpu;
      out.duration_ns = static_cast<uint64_t>(std::llround(Number(v, at, 0, 1e9) * 1000.0));
      if (op.contains("jitter")) out.jitter = Number(op["jitter"], path + ".jitter", 0, 1);
    } else if (type == "start_thread" || type == "join_thread") {
      if (!keys({})) return out;
      out.type = type == "start_thread" ? OpType::kStartThread : OpType::kJoinThread;
      out.name = String(v, at);
    } else if (type == "capture_begin") {
      if (!keys({"stream", "device"})) return out;
      out.type = OpType::kCaptureBegin;
      out.name = String(v, at);
      Placement(op, path, &out);
    } else if (type == "capture_end") {
      if (!keys({})) return out;
      out.type = OpType::kCaptureEnd;
      out.name = String(v, at);
    } else if (type == "graph_launch") {
      if (!keys({"stream", "repeat"})) return out;  // a graph runs on its capture's device
      out.type = OpType::kGraphLaunch;
      out.name = String(v, at);
      Placement(op, path, &out);
      if (op.contains("repeat")) {
        out.count = static_cast<uint64_t>(Integer(op["repeat"], path + ".repeat", 1, 10000000));
      }
    } else if (type == "cupti_client") {
      const bool start = v == "start";
      if (!keys({start ? "kinds" : "finalize"})) return out;
      out.type = start ? OpType::kCuptiClientStart : OpType::kCuptiClientStop;
      if (!start && v != "stop") Fail(at, "expected \"start\" or \"stop\"");
      const json finalize = op.value("finalize", json(false));
      if (!finalize.is_boolean()) Fail(path + ".finalize", "expected true or false");
      out.finalize_cupti = finalize == true;
      const json& kinds = op.contains("kinds") ? op["kinds"] : json::array();
      for (size_t i = 0; i < kinds.size() && kinds.is_array(); ++i) {
        out.kinds.push_back(String(kinds[i], path + ".kinds[" + std::to_string(i) + "]"));
        if (!std::set<std::string>{"kernel", "memcpy", "memset"}.contains(out.kinds.back())) {
          Fail(path + ".kinds[" + std::to_string(i) + "]", "expected kernel, memcpy or memset");
        }
      }
      if (start && (!kinds.is_array() || kinds.empty())) Fail(path + ".kinds", "expected kinds");
    } else if (type == "sync") {
      if (!keys({"device"})) return out;
      Placement(op, path, &out);
      if (v.is_string() && v.get<std::string>() == "device") {
        out.type = OpType::kSyncDevice;
      } else if (v.is_object()) {
        if (!Keys(v, at, {"stream"})) return out;
        if (!v.contains("stream")) {
          Fail(at, "expected {\"stream\": N}");
          return out;
        }
        out.type = OpType::kSyncStream;
        out.stream = static_cast<uint32_t>(Integer(v["stream"], at + ".stream", 0, 1 << 20));
      } else {
        Fail(at, "expected \"device\" or {\"stream\": N}");
      }
    } else if (type == "repeat") {
      if (!keys({"ops"})) return out;
      out.type = OpType::kRepeat;
      out.count = static_cast<uint64_t>(Integer(v, at, 0, 100000000));
      if (!op.contains("ops")) {
        Fail(path, "repeat needs \"ops\"");
        return out;
      }
      out.ops = Ops(op["ops"], path + ".ops", depth + 1);
    } else if (type == "repeat_until_file") {
      if (!keys({"max", "ops"})) return out;
      out.type = OpType::kRepeatUntilFile;
      out.file = String(v, at);
      if (!failed() && out.file[0] != '/') Fail(at, "expected an absolute path");
      if (failed()) return out;
      if (!op.contains("max")) {
        Fail(path, "repeat_until_file needs \"max\" (an iteration bound)");
        return out;
      }
      out.count = static_cast<uint64_t>(Integer(op["max"], path + ".max", 0, 100000000));
      if (!op.contains("ops")) {
        Fail(path, "repeat_until_file needs \"ops\"");
        return out;
      }
      if (!failed()) out.ops = Ops(op["ops"], path + ".ops", depth + 1);
    } else if (type == "fork") {
      if (!keys({})) return out;
      out.type = OpType::kFork;
      out.name = String(v, at);
    } else if (type == "exit") {
      if (!keys({})) return out;
      out.type = OpType::kExit;
      out.exit_code = static_cast<int>(Integer(v, at, 0, 255));
    } else if (type == "crash") {
      if (!keys({})) return out;
      out.type = OpType::kCrash;
      static const std::map<std::string, int> kSignals = {
          {"SIGKILL", SIGKILL}, {"SIGSEGV", SIGSEGV}, {"SIGABRT", SIGABRT},
          {"SIGTERM", SIGTERM}, {"SIGBUS", SIGBUS},   {"SIGINT", SIGINT}};
      const std::string name = String(v, at);
      auto it = kSignals.find(name);
      if (it == kSignals.end()) {
        Fail(at, "expected one of SIGKILL, SIGSEGV, SIGABRT, SIGTERM, SIGBUS, SIGINT");
      } else {
        out.signal = it->second;
      }
    }
    return out;
  }

  std::string error_;
};

// Cross-references inside one process: threads and graphs named by ops must exist.
void CheckReferences(Parser& parser, const ProcessSpec& process, const std::string& path) {
  std::set<std::string> threads;
  std::set<std::string> graphs;
  for (const ThreadSpec& thread : process.threads) threads.insert(thread.name);
  std::vector<std::pair<const std::vector<Op>*, std::string>> work;
  for (size_t t = 0; t < process.threads.size(); ++t) {
    work.emplace_back(&process.threads[t].ops, path + ".threads[" + std::to_string(t) + "].ops");
  }
  auto visit = [&](auto&& self, const std::vector<Op>& ops, const std::string& at,
                   bool graphs_only) -> void {
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const std::string here = at + "[" + std::to_string(i) + "]";
      if (op.type == OpType::kRepeat || op.type == OpType::kRepeatUntilFile) {
        self(self, op.ops, here + ".ops", graphs_only);
      }
      if (graphs_only) {
        if (op.type == OpType::kCaptureBegin) graphs.insert(op.name);
        continue;
      }
      const bool names_thread = op.type == OpType::kStartThread || op.type == OpType::kJoinThread ||
                                op.type == OpType::kFork;
      if (names_thread && threads.count(op.name) == 0) {
        parser.Fail(here, "no thread named \"" + op.name + "\" in this process");
      }
      if (names_thread && op.name == process.threads[0].name) {
        parser.Fail(here, "\"" + op.name + "\" is the process's main thread");
      }
      const bool names_graph = op.type == OpType::kCaptureEnd || op.type == OpType::kGraphLaunch;
      if (names_graph && graphs.count(op.name) == 0) {
        parser.Fail(here, "no capture_begin of graph \"" + op.name + "\" in this process");
      }
    }
  };
  for (const auto& [ops, at] : work) visit(visit, *ops, at, true);
  for (const auto& [ops, at] : work) visit(visit, *ops, at, false);
}

}  // namespace

bool ParseScenario(const std::string& text, Scenario* scenario, std::string* error) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *error = "$: malformed JSON";
    return false;
  }
  Parser p;
  Scenario out;
  if (p.Keys(doc, "$",
             {"processes", "seed", "launch_latency_ns", "graph_node_gap_ns", "description",
              "clock"})) {
    if (doc.contains("seed")) {
      out.seed = static_cast<uint64_t>(p.Integer(doc["seed"], "$.seed", 0, INT64_MAX));
    }
    if (doc.contains("launch_latency_ns")) {
      out.launch_latency_ns = static_cast<uint64_t>(
          p.Integer(doc["launch_latency_ns"], "$.launch_latency_ns", 0, 1000000000));
    }
    if (doc.contains("graph_node_gap_ns")) {
      out.graph_node_gap_ns = static_cast<uint64_t>(
          p.Integer(doc["graph_node_gap_ns"], "$.graph_node_gap_ns", 0, 1000000000));
    }
    if (doc.contains("description") && !doc["description"].is_string()) {
      p.Fail("$.description", "expected a string");
    }
    if (doc.contains("clock")) {
      const std::string clock = p.String(doc["clock"], "$.clock");
      if (!p.failed() && clock != "real" && clock != "simulated") {
        p.Fail("$.clock", "expected \"real\" or \"simulated\"");
      }
      out.simulated_clock = clock == "simulated";
    }
    if (!doc.contains("processes")) p.Fail("$", "missing \"processes\"");
  }
  if (!p.failed()) {
    const json& processes = doc["processes"];
    if (!processes.is_array() || processes.empty()) {
      p.Fail("$.processes", "expected a non-empty array");
    }
    for (size_t i = 0; !p.failed() && i < processes.size(); ++i) {
      const std::string path = "$.processes[" + std::to_string(i) + "]";
      const json& jp = processes[i];
      if (!p.Keys(jp, path, {"name", "env", "threads"})) break;
      ProcessSpec process;
      process.name = jp.contains("name") ? p.String(jp["name"], path + ".name")
                                         : "process" + std::to_string(i);
      if (jp.contains("env")) {
        if (!jp["env"].is_object()) p.Fail(path + ".env", "expected an object of strings");
        for (const auto& [key, value] : jp["env"].items()) {
          if (p.failed()) break;
          process.env[key] = p.String(value, path + ".env." + key);
        }
      }
      if (!jp.contains("threads") || !jp["threads"].is_array() || jp["threads"].empty()) {
        p.Fail(path + ".threads", "expected a non-empty array of threads");
        break;
      }
      if (out.simulated_clock && jp["threads"].size() != 1) {
        // Simulated time has one writer: a second thread would need a scheduler of its own.
        p.Fail(path + ".threads", "a process on the simulated clock runs exactly one thread");
        break;
      }
      std::set<std::string> names;
      for (size_t t = 0; !p.failed() && t < jp["threads"].size(); ++t) {
        const std::string tpath = path + ".threads[" + std::to_string(t) + "]";
        const json& jt = jp["threads"][t];
        if (!p.Keys(jt, tpath, {"name", "ops"})) break;
        ThreadSpec thread;
        if (!jt.contains("name")) p.Fail(tpath, "missing \"name\"");
        if (!jt.contains("ops")) p.Fail(tpath, "missing \"ops\"");
        if (p.failed()) break;
        thread.name = p.String(jt["name"], tpath + ".name");
        if (!names.insert(thread.name).second) {
          p.Fail(tpath + ".name", "duplicate thread name \"" + thread.name + "\"");
        }
        thread.ops = p.Ops(jt["ops"], tpath + ".ops", 0);
        process.threads.push_back(std::move(thread));
      }
      if (!p.failed()) CheckReferences(p, process, path);
      out.processes.push_back(std::move(process));
    }
  }
  if (p.failed()) {
    *error = p.error();
    return false;
  }
  *scenario = std::move(out);
  return true;
}

}  // namespace gpuattr::simgpu
