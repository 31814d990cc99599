#include "driver.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "bind_symbol.h"
#include "sim_clock.h"

namespace gpuattr::simgpu {
namespace {

// The runtime call that issues each kind of work, and the graph node type it becomes.
uint32_t RuntimeCbid(const DeviceWork& work) {
  switch (work.type) {
    case SIMGPU_ACTIVITY_KERNEL:
      return CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000;
    case SIMGPU_ACTIVITY_MEMCPY:
      return work.name == "PtoP" ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000
                                 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
    case SIMGPU_ACTIVITY_MEMSET:
      return CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020;
  }
  return 0;
}

int NodeType(const DeviceWork& work) {
  switch (work.type) {
    case SIMGPU_ACTIVITY_MEMCPY:
      return CU_GRAPH_NODE_TYPE_MEMCPY;
    case SIMGPU_ACTIVITY_MEMSET:
      return CU_GRAPH_NODE_TYPE_MEMSET;
    default:
      return CU_GRAPH_NODE_TYPE_KERNEL;
  }
}

SimgpuActivity ToActivity(const DeviceWork& work, uint32_t correlation_id, uint32_t stream,
                          uint64_t start_ns, uint64_t end_ns) {
  SimgpuActivity a{};
  a.type = work.type;
  a.correlation_id = correlation_id;
  a.device = work.device;
  a.stream = stream;
  a.start_ns = start_ns;
  a.end_ns = end_ns;
  a.name = work.name.c_str();
  for (int i = 0; i < 3; ++i) {
    a.grid[i] = work.grid[i];
    a.block[i] = work.block[i];
  }
  a.static_shared_memory = work.static_shared_mem;
  a.dynamic_shared_memory = work.shared_mem;
  a.registers_per_thread = work.registers;
  a.bytes = work.bytes;
  a.memset_value = work.value;
  a.peer_device = work.peer_device;
  if (work.type == SIMGPU_ACTIVITY_MEMCPY) {
    // (copy kind, source memory, destination memory); host memory is pinned.
    struct Kind {
      const char* name;
      uint8_t copy, src, dst;
    };
    static constexpr Kind kKinds[] = {
        {"HtoD", CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {"DtoH", CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED},
        {"DtoD", CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {"HtoH", CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED},
        {"PtoP", CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE}};
    for (const Kind& kind : kKinds) {
      if (work.name == kind.name) {
        a.copy_kind = kind.copy;
        a.src_kind = kind.src;
        a.dst_kind = kind.dst;
      }
    }
  }
  return a;
}

}  // namespace

Driver::Driver(uint64_t launch_latency_ns, uint64_t graph_node_gap_ns)
    : launch_latency_ns_(launch_latency_ns), graph_node_gap_ns_(graph_node_gap_ns) {}

void Driver::EnsureInit() {
  std::call_once(init_once_, [this] {
    const char* cupti = std::getenv("GPUATTR_CUPTI_LIBRARY");
    void* handle =
        cupti != nullptr && *cupti != '\0' ? dlopen(cupti, RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (handle != nullptr) {
      decltype(&simgpu_control_version) version = nullptr;
      Bind(handle, "simgpu_control_version", &version);
      if (version != nullptr && version() == SIMGPU_CONTROL_VERSION) {
        Bind(handle, "simgpu_api_enter", &api_enter_);
        Bind(handle, "simgpu_api_exit", &api_exit_);
        Bind(handle, "simgpu_activity_submit", &submit_);
        Bind(handle, "simgpu_graph_create", &graph_create_);
        Bind(handle, "simgpu_graph_node_create", &node_create_);
        Bind(handle, "simgpu_graph_instantiate", &instantiate_);
        decltype(&simgpu_set_device_clock) set_device_clock = nullptr;
        Bind(handle, "simgpu_set_device_clock", &set_device_clock);
        if (set_device_clock != nullptr && SimClock::Simulated()) {
          set_device_clock(&SimClock::Now);
        }
      }
      const bool complete = api_enter_ != nullptr && api_exit_ != nullptr && submit_ != nullptr &&
                            graph_create_ != nullptr && node_create_ != nullptr &&
                            instantiate_ != nullptr;
      if (!complete) {
        // Not the fake (e.g. the real libcupti): simulate without CUPTI.
        api_enter_ = nullptr;
      }
    }
    // What the CUDA driver does at cuInit (cupti-notes §1.1).
    const char* injection = std::getenv("CUDA_INJECTION64_PATH");
    if (injection != nullptr && *injection != '\0') {
      void* library = dlopen(injection, RTLD_NOW);
      auto* initialize = library != nullptr
                             ? reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"))
                             : nullptr;
      if (initialize != nullptr) {
        initialize();
      } else {
        std::fprintf(stderr, "simgpu: CUDA_INJECTION64_PATH=%s: %s\n", injection,
                     library == nullptr ? dlerror() : "no InitializeInjection");
      }
    }
    initialized_ = true;
  });
}

uint64_t Driver::Now() { return SimClock::Now(); }

uint32_t Driver::Enter(int domain, uint32_t cbid, const char* symbol, uint32_t device,
                       uint32_t stream) {
  SimClock::HostCall();
  return api_enter_ != nullptr ? api_enter_(domain, cbid, symbol, device, stream) : 0;
}

void Driver::Exit() {
  SimClock::HostCall();
  if (api_exit_ != nullptr) api_exit_(0);
}

WorkResult Driver::Submit(const DeviceWork& work, const CaptureSite& site) {
  EnsureInit();
  WorkResult result;
  if (forked_child_) return result;
  std::string graph;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = capturing_.find({work.device, work.stream});
    if (it != capturing_.end()) graph = it->second;
  }
  result.launch_ns = Now();
  const char* symbol = work.type == SIMGPU_ACTIVITY_KERNEL ? work.name.c_str() : nullptr;
  const uint32_t id =
      Enter(CUPTI_CB_DOMAIN_RUNTIME_API, RuntimeCbid(work), symbol, work.device, work.stream);
  // The device cannot start the work before the call was entered, which the subscriber stamps
  // inside Enter: on a loaded machine that can be later than launch_ns + the launch latency.
  const uint64_t entered_ns = Now();
  if (has_cupti()) result.correlation_id = id;
  if (!graph.empty()) {
    // Captured: the node is created inside the launch call, on this thread; no device work.
    uint32_t graph_id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      graph_id = graphs_[graph].graph_id;
    }
    const uint64_t node_id = node_create_ != nullptr ? node_create_(graph_id, NodeType(work)) : 0;
    std::lock_guard<std::mutex> lock(mu_);
    graphs_[graph].nodes.push_back({work, site, node_id, 0});
    result.captured = true;
  } else {
    {
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t& stream_end = stream_end_[{work.device, work.stream}];
      result.start_ns = std::max({result.launch_ns + launch_latency_ns_, entered_ns, stream_end});
      result.end_ns = result.start_ns + work.duration_ns;
      stream_end = result.end_ns;
    }
    if (submit_ != nullptr) {
      const SimgpuActivity activity =
          ToActivity(work, id, work.stream, result.start_ns, result.end_ns);
      submit_(&activity);
    }
    result.executed = true;
  }
  Exit();
  return result;
}

void Driver::Sync(uint32_t device, std::optional<uint32_t> stream) {
  EnsureInit();
  if (forked_child_) return;
  Enter(CUPTI_CB_DOMAIN_RUNTIME_API,
        stream ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020
               : CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
        nullptr, device, stream.value_or(0));
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, end] : stream_end_) {
      if (key.first == device && (!stream || key.second == *stream)) {
        target = std::max(target, end);
      }
    }
  }
  SimClock::WaitUntil(target);
  Exit();
}

bool Driver::CaptureBegin(const std::string& graph, uint32_t device, uint32_t stream,
                          std::string* error) {
  EnsureInit();
  if (forked_child_) return true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graphs_.find(graph);
    if (it != graphs_.end() && it->second.capturing) {
      *error = "graph \"" + graph + "\" is already being captured";
      return false;
    }
    if (capturing_.count({device, stream}) != 0) {
      *error = "stream " + std::to_string(stream) + " is already capturing";
      return false;
    }
  }
  Enter(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
        nullptr, device, stream);
  const uint32_t graph_id = graph_create_ != nullptr ? graph_create_() : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Graph& g = graphs_[graph];
    g = Graph{};
    g.device = device;
    g.stream = stream;
    g.capturing = true;
    g.graph_id = graph_id;
    capturing_[{device, stream}] = graph;
  }
  Exit();
  return true;
}

bool Driver::CaptureEnd(const std::string& graph, std::string* error) {
  EnsureInit();
  if (forked_child_) return true;
  Graph snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graphs_.find(graph);
    if (it == graphs_.end() || !it->second.capturing) {
      *error = "graph \"" + graph + "\" is not being captured";
      return false;
    }
    snapshot = it->second;
  }
  Enter(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, nullptr,
        snapshot.device, snapshot.stream);
  {
    std::lock_guard<std::mutex> lock(mu_);
    graphs_[graph].capturing = false;
    capturing_.erase({snapshot.device, snapshot.stream});
  }
  Exit();
  Enter(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, nullptr,
        snapshot.device, snapshot.stream);
  std::vector<uint64_t> clones(snapshot.nodes.size(), 0);
  uint32_t clone_graph_id = 0;
  if (instantiate_ != nullptr) {
    instantiate_(snapshot.graph_id, &clone_graph_id, clones.data(), clones.size());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Graph& g = graphs_[graph];
    for (size_t i = 0; i < g.nodes.size() && i < clones.size(); ++i) {
      g.nodes[i].clone_id = clones[i];
    }
    g.clone_graph_id = clone_graph_id;
    g.instantiated = true;
  }
  Exit();
  return true;
}

GraphLaunchResult Driver::GraphLaunch(const std::string& graph, uint32_t stream,
                                      std::string* error) {
  EnsureInit();
  GraphLaunchResult result;
  if (forked_child_) return result;
  Graph g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graphs_.find(graph);
    if (it == graphs_.end() || !it->second.instantiated) {
      *error = "graph \"" + graph + "\" has not been instantiated (capture_end)";
      return result;
    }
    g = it->second;
  }
  result.launch_ns = Now();
  const uint32_t id =
      Enter(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, nullptr,
            g.device, stream);
  const uint64_t entered_ns = Now();  // as in Submit: no node starts before the call was entered
  if (has_cupti()) result.correlation_id = id;
  {
    // The nodes run back to back on the launch stream, as one unit of work on it.
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t& stream_end = stream_end_[{g.device, stream}];
    uint64_t t = std::max({result.launch_ns + launch_latency_ns_, entered_ns, stream_end});
    for (const Node& node : g.nodes) {
      GraphNodeRun run;
      run.work = node.work;
      run.work.stream = stream;
      run.site = node.site;
      if (has_cupti()) {
        run.node_id = node.clone_id;
        run.graph_id = g.clone_graph_id;
      }
      run.start_ns = t;
      run.end_ns = t + node.work.duration_ns;
      stream_end = run.end_ns;
      t = run.end_ns + graph_node_gap_ns_;
      result.nodes.push_back(std::move(run));
    }
  }
  if (submit_ != nullptr) {
    for (const GraphNodeRun& run : result.nodes) {
      SimgpuActivity activity = ToActivity(run.work, id, stream, run.start_ns, run.end_ns);
      activity.graph_id = run.graph_id.value_or(0);
      activity.graph_node_id = run.node_id.value_or(0);
      submit_(&activity);
    }
  }
  Exit();
  result.executed = true;
  return result;
}

}  // namespace gpuattr::simgpu
