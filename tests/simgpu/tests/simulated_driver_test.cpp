// A small CUPTI subscriber, written here like a client would write one (dlopen of the fake), driven
// by the real simulated driver: callback order and ids, symbol names, records joined by
// correlation id, graph launches 1:N with the clone node ids and the clone graph's id, captured
// launches without records, `completed` equal to `end`, copies carrying the runtime call's id in
// both id fields, and buffer completion on the fake's worker thread. Several of these are what
// tests/gpu/compare.py checks a real device against (docs/gpu-validation.md).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "driver.h"
#include "fake_cupti_client.h"

namespace {

using gpuattr::simgpu::CaptureSite;
using gpuattr::simgpu::DeviceWork;
using gpuattr::simgpu::Driver;
using gpuattr::simgpu::testing::FakeCupti;

struct Event {
  int domain;
  uint32_t cbid;
  int site;  // CUPTI_API_ENTER / CUPTI_API_EXIT; -1 for resource callbacks
  uint32_t correlation_id;
  std::string function;
  std::string symbol;
  const uint64_t* correlation_data;
  uint64_t node_id;           // GRAPHNODE_* callbacks
  uint64_t original_node_id;  // GRAPHNODE_CLONED
  uint32_t graph_id;          // graph resource callbacks: the graph's id (the clone's when cloned)
  std::thread::id thread;
};

struct Record {
  uint32_t kind;
  uint32_t correlation_id;
  uint64_t start;
  uint64_t end;
  uint64_t graph_node_id;
  std::string name;
  uint64_t completed = 0;               // kernels
  uint32_t graph_id = 0;                // kernels
  uint32_t runtime_correlation_id = 0;  // memcpys
};

// Everything the subscriber saw. Callbacks run on app threads and the fake's worker thread.
struct Seen {
  std::mutex mu;  // leaf
  std::vector<Event> events;
  std::vector<Record> records;
  std::set<std::thread::id> completion_threads;
  size_t max_records_per_buffer = 0;  // what bufferRequested hands out (0: no limit)
};

Seen& State() {
  static Seen seen;
  return seen;
}

using gpuattr::simgpu::testing::Fake;

// Runs on: the app thread making the API call.
void OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Event e{static_cast<int>(domain),  cbid, -1, 0, {}, {}, nullptr, 0, 0, 0,
          std::this_thread::get_id()};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    e.site = d->callbackSite;
    e.correlation_id = d->correlationId;
    e.function = d->functionName;
    e.symbol = d->symbolName;
    e.correlation_data = d->correlationData;
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* d = static_cast<const CUpti_ResourceData*>(data);
    const auto* graph = static_cast<const CUpti_GraphData*>(d->resourceDescriptor);
    if (graph != nullptr && graph->node != nullptr)
      Fake().cuptiGetGraphNodeId(graph->node, &e.node_id);
    if (graph != nullptr && graph->originalNode != nullptr) {
      Fake().cuptiGetGraphNodeId(graph->originalNode, &e.original_node_id);
    }
    if (graph != nullptr && graph->graph != nullptr)
      Fake().cuptiGetGraphId(graph->graph, &e.graph_id);
  }
  std::lock_guard<std::mutex> lock(State().mu);
  State().events.push_back(e);
}

// Runs on: the thread that generates records, under the fake's internal lock.
void OnRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 64 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  std::lock_guard<std::mutex> lock(State().mu);
  *max_records = State().max_records_per_buffer;
}

// Runs on: the fake's worker thread, or the thread calling cuptiActivityFlushAll.
void OnCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<Record> records;
  CUpti_Activity* record = nullptr;
  while (Fake().cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      records.push_back({record->kind, k->correlationId, k->start, k->end, k->graphNodeId, k->name,
                         k->completed, k->graphId});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      records.push_back({record->kind, m->correlationId, m->start, m->end, m->graphNodeId, "", 0,
                         m->graphId, m->runtimeCorrelationId});
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(State().mu);
  State().completion_threads.insert(std::this_thread::get_id());
  for (const Record& r : records) State().records.push_back(r);
}

uint64_t MonotonicClock() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// One subscriber session over the simulated driver: subscribe, enable, and a fresh driver. It
// registers CLOCK_MONOTONIC as the shim does, so records carry the device's times exactly.
struct Session {
  Session() {
    FakeCupti& f = Fake();
    setenv("GPUATTR_CUPTI_LIBRARY", SIMGPU_FAKE_CUPTI_PATH, 1);
    unsetenv("CUDA_INJECTION64_PATH");
    {
      std::lock_guard<std::mutex> lock(State().mu);
      State().events.clear();
      State().records.clear();
      State().completion_threads.clear();
    }
    REQUIRE(f.cuptiSubscribe(&subscriber, OnCallback, nullptr) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiActivityRegisterTimestampCallback(MonotonicClock) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiActivityRegisterCallbacks(OnRequested, OnCompleted) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
    REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  }
  ~Session() {
    Fake().cuptiUnsubscribe(subscriber);
    Fake().cuptiFinalize();
  }

  // Flushes until `n` kernel records arrived (bounded: a loaded machine is slow, not wrong).
  std::vector<Record> WaitForRecords(size_t n, bool flush) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (flush) Fake().cuptiActivityFlushAll(0);
      {
        std::lock_guard<std::mutex> lock(State().mu);
        if (State().records.size() >= n) return State().records;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::lock_guard<std::mutex> lock(State().mu);
    return State().records;
  }

  std::vector<Event> Events() {
    std::lock_guard<std::mutex> lock(State().mu);
    return State().events;
  }

  CUpti_SubscriberHandle subscriber = nullptr;
  Driver driver{/*launch_latency_ns=*/5000, /*graph_node_gap_ns=*/1000};
};

DeviceWork Kernel(const std::string& name, uint32_t stream, uint64_t ns) {
  DeviceWork work;
  work.name = name;
  work.stream = stream;
  work.duration_ns = ns;
  return work;
}

}  // namespace

TEST_CASE("a launch fires 505, then cuLaunchKernel nested with the same id, then a record",
          "[simgpu][callbacks]") {
  Session session;
  const auto result = session.driver.Submit(Kernel("_Z4gemmPfS_", 1, 20000), CaptureSite{});
  REQUIRE(result.executed);
  REQUIRE(result.correlation_id.has_value());
  const uint32_t id = *result.correlation_id;

  std::vector<Event> api;
  for (const Event& e : session.Events()) {
    if (e.site >= 0) api.push_back(e);
  }
  REQUIRE(api.size() == 4);
  CHECK(api[0].domain == CUPTI_CB_DOMAIN_RUNTIME_API);
  CHECK(api[0].cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
  CHECK(api[0].site == CUPTI_API_ENTER);
  CHECK(api[0].function == "__cudaLaunchKernel_v13000");
  CHECK(api[1].domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(api[1].cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  CHECK(api[1].site == CUPTI_API_ENTER);
  CHECK(api[1].function == "cuLaunchKernel");
  CHECK(api[2].domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(api[2].site == CUPTI_API_EXIT);
  CHECK(api[3].domain == CUPTI_CB_DOMAIN_RUNTIME_API);
  CHECK(api[3].site == CUPTI_API_EXIT);
  for (const Event& e : api) {
    CHECK(e.correlation_id == id);
    CHECK(e.symbol == "_Z4gemmPfS_");
    CHECK(e.thread == std::this_thread::get_id());
  }
  CHECK(api[0].correlation_data == api[3].correlation_data);
  CHECK(api[1].correlation_data == api[2].correlation_data);

  // A non-launch call carries no symbol name.
  session.driver.Sync(0, std::nullopt);
  const Event sync = session.Events().back();
  CHECK(sync.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
  CHECK(sync.symbol != "_Z4gemmPfS_");

  const std::vector<Record> records = session.WaitForRecords(1, /*flush=*/true);
  REQUIRE(records.size() == 1);
  CHECK(records[0].correlation_id == id);
  CHECK(records[0].name == "_Z4gemmPfS_");
  CHECK(records[0].start == result.start_ns);
  CHECK(records[0].end == result.end_ns);
  CHECK(records[0].completed == records[0].end);  // compare.py's §10.4 row checks this on a GPU
  CHECK(records[0].graph_node_id == 0);
}

TEST_CASE("a copy's record carries the runtime call's id as correlationId and runtimeCorrelationId",
          "[simgpu][callbacks]") {
  Session session;
  DeviceWork copy;
  copy.type = SIMGPU_ACTIVITY_MEMCPY;
  copy.name = "HtoD";
  copy.bytes = 1 << 20;
  copy.duration_ns = 10000;
  const auto result = session.driver.Submit(copy, CaptureSite{});
  REQUIRE(result.correlation_id.has_value());
  const std::vector<Record> records = session.WaitForRecords(1, /*flush=*/true);
  REQUIRE(records.size() == 1);
  CHECK(records[0].kind == CUPTI_ACTIVITY_KIND_MEMCPY);
  CHECK(records[0].correlation_id == *result.correlation_id);
  CHECK(records[0].runtime_correlation_id == *result.correlation_id);
  bool runtime_call = false;
  for (const Event& e : session.Events()) {
    runtime_call = runtime_call || (e.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                                    e.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 &&
                                    e.correlation_id == *result.correlation_id);
  }
  CHECK(runtime_call);
}

TEST_CASE("one stream is FIFO, and captured launches become graph nodes with no records",
          "[simgpu][graphs]") {
  Session session;
  const auto a = session.driver.Submit(Kernel("a", 0, 50000), CaptureSite{});
  const auto b = session.driver.Submit(Kernel("b", 0, 50000), CaptureSite{});
  CHECK(b.start_ns >= a.end_ns);

  std::string error;
  REQUIRE(session.driver.CaptureBegin("g", 0, 2, &error));
  const auto c1 = session.driver.Submit(Kernel("node1", 2, 1000), CaptureSite{"main", {"fwd"}});
  const auto c2 = session.driver.Submit(Kernel("node2", 2, 1000), CaptureSite{"main", {"fwd"}});
  CHECK(c1.captured);
  CHECK_FALSE(c1.executed);
  REQUIRE(c1.correlation_id.has_value());
  REQUIRE(session.driver.CaptureEnd("g", &error));

  // GRAPHNODE_CREATED fired inside each captured launch, between its ENTER and EXIT.
  std::vector<Event> events = session.Events();
  std::vector<uint64_t> originals;
  bool inside_launch = false;
  for (const Event& e : events) {
    if (e.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        e.cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) {
      inside_launch = e.site == CUPTI_API_ENTER;
    }
    if (e.domain == CUPTI_CB_DOMAIN_RESOURCE && e.cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED &&
        inside_launch) {
      originals.push_back(e.node_id);
    }
  }
  REQUIRE(originals.size() == 2);
  // Instantiate: CREATED and CLONED for each node, inside cudaGraphInstantiate.
  std::map<uint64_t, uint64_t> clone_of;
  bool inside_instantiate = false;
  for (const Event& e : events) {
    if (e.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        e.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000) {
      inside_instantiate = e.site == CUPTI_API_ENTER;
    }
    if (e.domain == CUPTI_CB_DOMAIN_RESOURCE && e.cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      CHECK(inside_instantiate);
      clone_of[e.original_node_id] = e.node_id;
    }
  }
  REQUIRE(clone_of.size() == 2);

  const auto launch = session.driver.GraphLaunch("g", 2, &error);
  REQUIRE(launch.executed);
  REQUIRE(launch.nodes.size() == 2);
  const std::vector<Record> records = session.WaitForRecords(4, /*flush=*/true);
  REQUIRE(records.size() == 4);
  std::set<uint64_t> graph_nodes;
  for (const Record& r : records) {
    CHECK(r.correlation_id != *c1.correlation_id);
    CHECK(r.correlation_id != *c2.correlation_id);
    if (r.graph_node_id != 0) {
      CHECK(r.correlation_id == *launch.correlation_id);
      graph_nodes.insert(r.graph_node_id);
    }
  }
  CHECK(graph_nodes == std::set<uint64_t>{clone_of[originals[0]], clone_of[originals[1]]});
  // graphId in the records is the id of the graph that holds the clones (compare.py: clone_graph).
  std::set<uint32_t> clone_graphs, captured_graphs;
  for (const Event& e : events) {
    if (e.cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) clone_graphs.insert(e.graph_id);
    if (e.cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && e.original_node_id == 0 &&
        std::find(originals.begin(), originals.end(), e.node_id) != originals.end()) {
      captured_graphs.insert(e.graph_id);
    }
  }
  REQUIRE(clone_graphs.size() == 1);
  REQUIRE(captured_graphs.size() == 1);
  CHECK(*clone_graphs.begin() != *captured_graphs.begin());
  for (const Record& r : records) {
    if (r.graph_node_id != 0) CHECK(r.graph_id == *clone_graphs.begin());
  }
}

TEST_CASE("without a flush, full buffers complete on the fake's worker thread",
          "[simgpu][buffers]") {
  {
    std::lock_guard<std::mutex> lock(State().mu);
    State().max_records_per_buffer = 1;
  }
  Session session;
  const auto result = session.driver.Submit(Kernel("k", 0, 1000), CaptureSite{});
  REQUIRE(result.executed);
  const std::vector<Record> records = session.WaitForRecords(1, /*flush=*/false);
  REQUIRE(records.size() == 1);
  {
    std::lock_guard<std::mutex> lock(State().mu);
    CHECK(State().completion_threads.count(std::this_thread::get_id()) == 0);
    CHECK(!State().completion_threads.empty());
    State().max_records_per_buffer = 0;
  }
}
