// Driver: the simulated CUDA driver and device of simgpu-run.
//
// It plays the real driver's part towards the injection library and CUPTI:
//   - EnsureInit() is cuInit: once per process, lazily, on the thread of the first CUDA op. It
//     binds the fake CUPTI's simgpu_ control API from GPUATTR_CUPTI_LIBRARY (absent, e.g. the real
//     libcupti: the simulation runs without CUPTI), then loads CUDA_INJECTION64_PATH and calls its
//     InitializeInjection(), as the CUDA driver does;
//   - every CUDA call brackets itself with simgpu_api_enter/exit, so the fake fires the callbacks
//     a real GPU's CUPTI would, with the correlation id the fake assigns;
//   - the device: work is queued per (device, stream) on a timeline in SimClock ns. Launches are
//     asynchronous: start = max(host entry + launch latency, end of the previous work on that
//     stream), FIFO per stream, streams overlap; Sync() waits (SimClock::WaitUntil) until the
//     simulated completion time. Nothing ever synchronises implicitly.
//   - stream capture and graphs: work issued to a capturing stream becomes graph nodes (API
//     callbacks and ids, no device work); instantiate clones them; a graph launch runs the clones
//     back to back on the launch stream under the launch's single correlation id.
//
// The clock is SimClock's (CLOCK_MONOTONIC in real time), always: the device timeline and every
// host time it hands out. Each side of an API call is a host call (SimClock::HostCall). The fake
// stamps records on the CUPTI clock itself, converting device times when it delivers them
// (simgpu_control.h), so a client's timestamp callback coming and going (attach, cuptiFinalize)
// never moves the timeline; in simulated time the fake's device clock is SimClock too.
//
// Threads: all methods are called from scenario threads concurrently. mu_ guards the timeline,
// captures and graphs; it is a leaf lock and is never held across a call into the fake CUPTI (whose
// callbacks run client code) nor across a sleep.
#ifndef GPUATTR_TESTS_SIMGPU_SIM_DRIVER_H_
#define GPUATTR_TESTS_SIMGPU_SIM_DRIVER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simgpu_control.h"

namespace gpuattr::simgpu {

// One op's device work, durations already jittered.
struct DeviceWork {
  SimgpuActivityType type = SIMGPU_ACTIVITY_KERNEL;
  std::string name;  // kernel name; memcpy: its kind ("HtoD", ...)
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t duration_ns = 0;
  std::array<int32_t, 3> grid{1, 1, 1};
  std::array<int32_t, 3> block{1, 1, 1};
  int32_t shared_mem = 0;
  int32_t static_shared_mem = 0;
  uint16_t registers = 0;
  uint64_t bytes = 0;
  uint32_t peer_device = 0;
  uint32_t value = 0;
};

// Who issued work during a capture, for the truth's "captured" attribution.
struct CaptureSite {
  std::string thread;
  std::vector<std::string> range_path;
};

struct WorkResult {
  bool executed = false;  // false: captured into a graph, or CUDA unusable (forked child)
  bool captured = false;
  std::optional<uint32_t> correlation_id;  // null without CUPTI
  uint64_t launch_ns = 0;                  // host time the API was entered
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct GraphNodeRun {
  DeviceWork work;
  CaptureSite site;
  std::optional<uint64_t> node_id;  // the exec's clone node id; null without CUPTI
  std::optional<uint32_t> graph_id;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct GraphLaunchResult {
  bool executed = false;
  std::optional<uint32_t> correlation_id;
  uint64_t launch_ns = 0;
  std::vector<GraphNodeRun> nodes;
};

class Driver {
 public:
  Driver(uint64_t launch_latency_ns, uint64_t graph_node_gap_ns);
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // cuInit (see header comment). Idempotent, thread-safe.
  void EnsureInit();
  // The simulation clock, SimClock::Now (see header comment).
  static uint64_t Now();
  bool has_cupti() const { return api_enter_ != nullptr; }

  // A kernel, memcpy or memset (cudaLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync).
  WorkResult Submit(const DeviceWork& work, const CaptureSite& site);
  // cudaDeviceSynchronize (no stream) or cudaStreamSynchronize.
  void Sync(uint32_t device, std::optional<uint32_t> stream);
  // cudaStreamBeginCapture; false (and *error) on misuse.
  bool CaptureBegin(const std::string& graph, uint32_t device, uint32_t stream, std::string* error);
  // cudaStreamEndCapture + cudaGraphInstantiate.
  bool CaptureEnd(const std::string& graph, std::string* error);
  // cudaGraphLaunch of an instantiated graph.
  GraphLaunchResult GraphLaunch(const std::string& graph, uint32_t stream, std::string* error);

  // fork(): in the child, CUDA is unusable once the parent initialised it (cupti-notes §1.3).
  void MarkForkedChild() { forked_child_.store(initialized_.load()); }

 private:
  struct Node {
    DeviceWork work;
    CaptureSite site;
    uint64_t original_id = 0;
    uint64_t clone_id = 0;
  };
  struct Graph {
    uint32_t device = 0;
    uint32_t stream = 0;  // the capturing stream
    bool capturing = false;
    bool instantiated = false;
    uint32_t graph_id = 0;
    uint32_t clone_graph_id = 0;
    std::vector<Node> nodes;
  };

  uint32_t Enter(int domain, uint32_t cbid, const char* symbol, uint32_t device, uint32_t stream);
  void Exit();

  const uint64_t launch_latency_ns_;
  const uint64_t graph_node_gap_ns_;
  std::once_flag init_once_;
  std::atomic<bool> initialized_{false};  // set last by EnsureInit: the bindings are ready
  std::atomic<bool> forked_child_{false};

  // The fake's control API; null without it.
  decltype(&simgpu_api_enter) api_enter_ = nullptr;
  decltype(&simgpu_api_exit) api_exit_ = nullptr;
  decltype(&simgpu_activity_submit) submit_ = nullptr;
  decltype(&simgpu_graph_create) graph_create_ = nullptr;
  decltype(&simgpu_graph_node_create) node_create_ = nullptr;
  decltype(&simgpu_graph_instantiate) instantiate_ = nullptr;

  std::mutex mu_;                                                   // leaf; see header comment
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> stream_end_;    // (device, stream) -> ns
  std::map<std::pair<uint32_t, uint32_t>, std::string> capturing_;  // (device, stream) -> graph
  std::map<std::string, Graph> graphs_;
};

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_SIM_DRIVER_H_
