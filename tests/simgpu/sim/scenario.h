// Scenario: the in-memory form of a simgpu-run scenario file (DESIGN §5 plus the additions listed
// in tests/simgpu/README.md), and its strict parser.
//
// The parser rejects anything it does not understand (unknown keys, wrong types, out-of-range
// numbers, references to threads or graphs that do not exist) with a message that names the JSON
// path, e.g. `$.processes[0].threads[1].ops[3].us: expected a number`. It never throws. Single
// threaded; the result is immutable afterwards and shared read-only by every scenario thread.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_SCENARIO_H_
#define GPUATTR_TESTS_SIMGPU_SIM_SCENARIO_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpuattr::simgpu {

enum class OpType {
  kPush,
  kPop,
  kRangeStart,
  kRangeEnd,
  kMark,
  kLaunch,
  kMemcpy,
  kMemset,
  kCpu,
  kStartThread,
  kJoinThread,
  kCaptureBegin,
  kCaptureEnd,
  kGraphLaunch,
  kSyncDevice,
  kSyncStream,
  kRepeat,
  kRepeatUntilFile,
  kFork,
  kExit,
  kCrash,
  kCuptiClientStart,  // a second, Kineto-like CUPTI client (cupti_client.h)
  kCuptiClientStop,
};

struct Op {
  OpType type = OpType::kCpu;
  std::string name;    // range/mark name, kernel name, memcpy kind, thread, graph, fork target
  std::string domain;  // push/pop: NVTX domain ("" = the default domain)
  std::string id;      // range_start/range_end: the key pairing them
  std::string file;    // repeat_until_file: the absolute path whose existence ends the loop
  uint32_t device = 0;
  uint32_t peer_device = 0;  // memcpy PtoP
  uint32_t stream = 0;
  uint64_t duration_ns = 0;  // before jitter
  double jitter = 0;         // uniform +-fraction
  std::array<int32_t, 3> grid{1, 1, 1};
  std::array<int32_t, 3> block{1, 1, 1};
  int32_t shared_mem = 0;  // dynamic shared memory per block
  int32_t static_shared_mem = 0;
  uint16_t registers = 32;
  uint64_t bytes = 0;
  uint32_t value = 0;  // memset byte value
  uint64_t count = 1;  // repeat, graph_launch repeat, repeat_until_file max
  int exit_code = 0;
  int signal = 0;
  std::vector<Op> ops;             // repeat / repeat_until_file body
  std::vector<std::string> kinds;  // cupti_client start: kernel, memcpy, memset
  bool finalize_cupti = false;     // cupti_client stop: then cuptiFinalize
};

struct ThreadSpec {
  std::string name;
  std::vector<Op> ops;
};

struct ProcessSpec {
  std::string name;
  std::map<std::string, std::string> env;
  std::vector<ThreadSpec> threads;  // threads[0] runs on the process's main thread
};

struct Scenario {
  std::vector<ProcessSpec> processes;
  uint64_t seed = 0;
  uint64_t launch_latency_ns = 5000;  // host entry -> earliest device start
  uint64_t graph_node_gap_ns = 1000;  // between consecutive nodes of one graph launch
  bool simulated_clock = false;       // "clock": "simulated" (sim_clock.h); one thread a process
};

// Parses and validates `text`. On failure returns false and sets *error to "PATH: what".
bool ParseScenario(const std::string& text, Scenario* scenario, std::string* error);

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_SCENARIO_H_
