// cupti_questions: answers the open questions of cupti-notes §10 on a real device, with the
// evidence (docs/gpu-validation.md §CUPTI questions). Run bare, never under gpuattr: it is a CUPTI
// subscriber itself.
//
// Every question runs in its own child process (this program again, with --question NAME): each
// gets a fresh CUPTI (one subscriber per process, cupti-notes §6), and a crash or hang in one
// (NVIDIA/NVTX#125 is a segfault inside libcupti) costs that answer only. The parent prints one
// JSON document: versions, the libcupti file, and per question the child's exit and the JSON
// lines it printed. Each answer holds what was seen, grouped by the label the workload set before
// each step, and derived fields that tests/gpu/compare.py checks against what the simulated GPU
// (tests/simgpu) assumes.
//
//   launch_callbacks  (1, 2)  <<<>>>, cudaLaunchKernel, cuLaunchKernel, cuLaunchKernelEx
//   memcpy_correlation (2)    pageable and pinned memcpy, memset: correlationId,
//   runtimeCorrelationId graphs            (3)     capture, instantiate, replay: node ids, graph
//   ids, correlation ids graph_trace       (3)     the same with CUPTI_ACTIVITY_KIND_GRAPH_TRACE
//   also enabled completed         (4)     the kernel record's `completed` against `end`
//   buffer_threads    (5)     which threads request and complete buffers, with and without flush
//   injection         (6)     InitializeInjection under LD_PRELOAD alone, returning 0, twice named
//   register_twice    (7)     a second cuptiActivityRegisterCallbacks
//   nvtx_slot         (8)     NVTX_INJECTION64_PATH=libcupti, then cuptiSubscribe
//   nvtx_chain        (8)     an NVTX injection that chains through cuptiNvtxInitialize2
//   reattach          (9)     graph correlation ids after cuptiFinalize and a second subscribe
//
// Threads: in a child the main thread runs the workload; CUPTI runs the API and resource
// callbacks on the calling thread and the buffer callbacks on its own threads or the flushing
// one. Everything they record is under one mutex (cost is no concern here).
// Exit status: 0 answers printed, 2 usage, 3 no CUDA device or driver (message on stderr),
// 1 anything else.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "probe_support.h"

namespace {

using gpuattr::gpu_tier::DriverSymbol;
using gpuattr::gpu_tier::JsonQuote;
using gpuattr::gpu_tier::LaunchKernelExFn;
using gpuattr::gpu_tier::LaunchKernelFn;

constexpr int kExitNoDevice = 3;
constexpr int kChildTimeoutSeconds = 20;  // 14 children: a hang in every one fits in 300 s
constexpr size_t kMaxEvents = 200000;     // callbacks kept per child; the rest are counted
constexpr int kThreads = 32;

__global__ void q_chevron(float* d) { d[threadIdx.x] += 1.0f; }
__global__ void q_runtime(float* d) { d[threadIdx.x] += 2.0f; }
__global__ void q_driver(float* d) { d[threadIdx.x] += 3.0f; }
__global__ void q_driver_ex(float* d) { d[threadIdx.x] += 4.0f; }
__global__ void q_graph_a(float* d) { d[threadIdx.x] *= 1.5f; }
__global__ void q_graph_b(float* d) { d[threadIdx.x] *= 0.5f; }
__global__ void q_graph_c(float* d) { d[threadIdx.x] += 0.25f; }
__global__ void q_tiny(float* d) { d[threadIdx.x] -= 1.0f; }

// ---- JSON text (the answers are small; values are numbers, booleans, strings or nested text)

// Builds one JSON object member by member; values are already JSON text.
class Object {
 public:
  Object& Raw(const char* key, const std::string& json) {
    text_ += (text_.empty() ? "" : ",") + JsonQuote(key) + ":" + json;
    return *this;
  }
  Object& Str(const char* key, const std::string& value) { return Raw(key, JsonQuote(value)); }
  Object& Num(const char* key, unsigned long long value) { return Raw(key, std::to_string(value)); }
  Object& Int(const char* key, long long value) { return Raw(key, std::to_string(value)); }
  Object& Bool(const char* key, bool value) { return Raw(key, value ? "true" : "false"); }
  std::string Json() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

std::string Array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

// A tri-state answer: null when the evidence to decide was missing.
std::string Verdict(bool known, bool value) { return !known ? "null" : (value ? "true" : "false"); }

void PrintLine(const std::string& json) {
  const std::string line = json + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

std::string ThreadName() {
  std::ifstream comm("/proc/thread-self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

// ---- What the callbacks saw

struct CallbackEvent {
  std::string label;
  std::string domain;  // runtime, driver, resource, nvtx
  uint32_t cbid = 0;
  std::string name;
  int site = -1;  // CUPTI_API_ENTER / EXIT; -1 for resource and NVTX callbacks
  uint32_t corr = 0;
  uint64_t node = 0;           // graph resource callbacks: cuptiGetGraphNodeId(node)
  uint64_t original_node = 0;  // GRAPHNODE_CLONED: cuptiGetGraphNodeId(originalNode)
  uint32_t graph = 0;          // cuptiGetGraphId(graph)
  uint32_t exec = 0;           // GRAPHEXEC_CREATED: cuptiGetGraphExecId(graphExec)
};

struct KernelRecord {
  std::string name;
  uint32_t corr = 0;
  uint64_t start = 0, end = 0, completed = 0;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  int client = 0;  // which registered completion callback delivered it
};

struct CopyRecord {
  std::string kind;  // memcpy, memset
  uint32_t corr = 0;
  uint32_t runtime_corr = 0;  // memcpy only
  uint64_t bytes = 0;
  uint32_t copy_kind = 0;
};

struct ApiRecord {
  std::string domain;
  uint32_t cbid = 0;
  uint32_t corr = 0;
};

struct BufferEvent {
  std::string label;
  bool request = false;  // false: completion
  int client = 0;        // the callback pair that ran (0 = first registered, 1 = second)
  int owner = -1;        // completion: the client whose request handed out the buffer
  bool on_main = false;
  bool during_flush = false;
  std::string thread_name;
  size_t valid = 0;
};

struct State {
  std::mutex mu;
  std::string label = "setup";
  pid_t main_tid = 0;
  size_t buffer_bytes = 1 << 20;
  bool flushing = false;
  std::vector<CallbackEvent> callbacks;
  unsigned long long callbacks_dropped = 0;
  std::vector<KernelRecord> kernels;
  std::vector<CopyRecord> copies;
  std::vector<ApiRecord> apis;
  std::vector<std::pair<uint32_t, uint32_t>> graph_traces;  // corr, graphId
  std::vector<BufferEvent> buffers;
  std::map<uint8_t*, int> buffer_owner;
  std::vector<std::string> errors;  // failed CUPTI or CUDA calls, with their codes
  CUpti_SubscriberHandle subscriber = nullptr;
};
State g;

void Label(const std::string& label) {
  std::lock_guard<std::mutex> lock(g.mu);
  g.label = label;
}

CUptiResult Cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    std::lock_guard<std::mutex> lock(g.mu);
    g.errors.push_back(std::string(call) + " = " + std::to_string(result) + " " +
                       (text ? text : ""));
  }
  return result;
}
#define CUPTI(call) Cupti((call), #call)

bool Cuda(cudaError_t result, const char* call) {
  if (result == cudaSuccess) return true;
  std::lock_guard<std::mutex> lock(g.mu);
  g.errors.push_back(std::string(call) + " = " + cudaGetErrorString(result));
  return false;
}
#define CUDA(call) Cuda((call), #call)

bool Driver(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return true;
  std::lock_guard<std::mutex> lock(g.mu);
  g.errors.push_back(std::string(call) + " = " + std::to_string(result));
  return false;
}

bool IsGraphResource(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPH_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPH_CLONED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
      return true;
    default:
      return false;
  }
}

const char* ResourceName(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPH_CREATED:
      return "GRAPH_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPH_CLONED:
      return "GRAPH_CLONED";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
      return "GRAPHNODE_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
      return "GRAPHNODE_CLONED";
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
      return "GRAPHEXEC_CREATED";
    default:
      return "other";
  }
}

// Runs on: the thread making the API call (runtime, driver, resource, NVTX domains).
void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  CallbackEvent event;
  event.cbid = cbid;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* api = static_cast<const CUpti_CallbackData*>(data);
    event.domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver";
    event.name = api->functionName != nullptr ? api->functionName : "";
    event.site = api->callbackSite;
    event.corr = api->correlationId;
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (!IsGraphResource(cbid)) return;
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
    event.domain = "resource";
    event.name = ResourceName(cbid);
    if (graph != nullptr) {
      if (graph->node != nullptr) cuptiGetGraphNodeId(graph->node, &event.node);
      if (graph->originalNode != nullptr)
        cuptiGetGraphNodeId(graph->originalNode, &event.original_node);
      if (graph->graph != nullptr) cuptiGetGraphId(graph->graph, &event.graph);
      if (graph->graphExec != nullptr) cuptiGetGraphExecId(graph->graphExec, &event.exec);
    }
  } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    event.domain = "nvtx";
    event.name = nvtx->functionName != nullptr ? nvtx->functionName : "";
  } else {
    return;
  }
  std::lock_guard<std::mutex> lock(g.mu);
  event.label = g.label;
  if (g.callbacks.size() < kMaxEvents) {
    g.callbacks.push_back(std::move(event));
  } else {
    ++g.callbacks_dropped;
  }
}

// Runs on: whichever thread CUPTI asks for a buffer on.
void RequestBuffer(int client, uint8_t** buffer, size_t* size, size_t* max_records) {
  BufferEvent event;
  event.request = true;
  event.client = client;
  event.on_main = Tid() == g.main_tid;
  event.thread_name = ThreadName();
  std::lock_guard<std::mutex> lock(g.mu);
  *size = g.buffer_bytes;
  *max_records = 0;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, g.buffer_bytes));
  if (*buffer != nullptr) g.buffer_owner[*buffer] = client;
  event.label = g.label;
  event.during_flush = g.flushing;
  g.buffers.push_back(std::move(event));
}

void TakeRecord(const CUpti_Activity* record, int client) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      KernelRecord row;
      row.name = k->name != nullptr ? k->name : "";
      row.corr = k->correlationId;
      row.start = k->start;
      row.end = k->end;
      row.completed = k->completed;
      row.graph_id = k->graphId;
      row.graph_node_id = k->graphNodeId;
      row.client = client;
      g.kernels.push_back(std::move(row));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      g.copies.push_back(
          {"memcpy", m->correlationId, m->runtimeCorrelationId, m->bytes, m->copyKind});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      g.copies.push_back({"memset", m->correlationId, 0, m->bytes, 0});
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      g.apis.push_back({record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver", a->cbid,
                        a->correlationId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      const auto* t = reinterpret_cast<const CUpti_ActivityGraphTrace2*>(record);
      g.graph_traces.emplace_back(t->correlationId, t->graphId);
      break;
    }
    default:
      break;
  }
}

// Runs on: a CUPTI thread, or the thread inside cuptiActivityFlushAll.
void CompleteBuffer(int client, uint8_t* buffer, size_t valid) {
  // Walked before taking g.mu: no CUPTI call runs under it from a CUPTI thread.
  std::vector<const CUpti_Activity*> records;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    records.push_back(record);
  BufferEvent event;
  event.client = client;
  event.on_main = Tid() == g.main_tid;
  event.thread_name = ThreadName();
  event.valid = valid;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    event.label = g.label;
    event.during_flush = g.flushing;
    const auto owner = g.buffer_owner.find(buffer);
    event.owner = owner != g.buffer_owner.end() ? owner->second : -1;
    g.buffers.push_back(std::move(event));
    for (const CUpti_Activity* r : records) TakeRecord(r, client);
    g.buffer_owner.erase(buffer);
  }
  std::free(buffer);
}

void CUPTIAPI RequestA(uint8_t** b, size_t* s, size_t* m) { RequestBuffer(0, b, s, m); }
void CUPTIAPI RequestB(uint8_t** b, size_t* s, size_t* m) { RequestBuffer(1, b, s, m); }
void CUPTIAPI CompleteA(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CompleteBuffer(0, b, valid);
}
void CUPTIAPI CompleteB(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CompleteBuffer(1, b, valid);
}

// ---- Workload helpers

bool Subscribe() {
  return CUPTI(cuptiSubscribe(&g.subscriber, reinterpret_cast<CUpti_CallbackFunc>(OnCallback),
                              nullptr)) == CUPTI_SUCCESS;
}

// Callbacks for every runtime and driver API (noise is filtered by label), and activity records
// of the given kinds through buffer pair A.
bool Attach(const std::vector<CUpti_ActivityKind>& kinds, bool resource_callbacks) {
  if (!Subscribe()) return false;
  CUPTI(cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API));
  CUPTI(cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API));
  if (resource_callbacks) CUPTI(cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE));
  CUPTI(cuptiActivityRegisterCallbacks(RequestA, CompleteA));
  for (const CUpti_ActivityKind kind : kinds) CUPTI(cuptiActivityEnable(kind));
  return true;
}

// Kernel records only, through buffer pair A; no callbacks.
bool AttachKernelRecords() {
  if (!Subscribe()) return false;
  CUPTI(cuptiActivityRegisterCallbacks(RequestA, CompleteA));
  CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  return true;
}

void FlushAll(uint32_t flags) {
  cudaDeviceSynchronize();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    g.flushing = true;
  }
  CUPTI(cuptiActivityFlushAll(flags));
  std::lock_guard<std::mutex> lock(g.mu);
  g.flushing = false;
}

float* DeviceBuffer() {
  float* d = nullptr;
  CUDA(cudaMalloc(&d, sizeof(float) * kThreads));
  CUDA(cudaMemset(d, 0, sizeof(float) * kThreads));
  return d;
}

void LaunchTiny(int count, float* d) {
  for (int i = 0; i < count; ++i) q_tiny<<<1, kThreads>>>(d);
}

// Resolved before the labelled launch, so that cudaGetFuncBySymbol's own callbacks stay out of it.
CUfunction FunctionOf(const void* kernel) {
  cudaFunction_t function = nullptr;
  CUDA(cudaGetFuncBySymbol(&function, kernel));
  return reinterpret_cast<CUfunction>(function);
}

void LaunchThroughDriver(CUfunction function, float* d) {
  auto launch = reinterpret_cast<LaunchKernelFn>(DriverSymbol("cuLaunchKernel"));
  void* args[] = {&d};
  if (launch == nullptr) {
    Driver(CUDA_ERROR_NOT_FOUND, "dlsym(cuLaunchKernel)");
    return;
  }
  Driver(launch(function, 1, 1, 1, kThreads, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
}

void LaunchThroughDriverEx(CUfunction function, float* d) {
  auto launch = reinterpret_cast<LaunchKernelExFn>(DriverSymbol("cuLaunchKernelEx"));
  void* args[] = {&d};
  if (launch == nullptr) {
    Driver(CUDA_ERROR_NOT_FOUND, "dlsym(cuLaunchKernelEx)");
    return;
  }
  CUlaunchConfig config = {};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  Driver(launch(&config, function, args, nullptr), "cuLaunchKernelEx");
}

// ---- Evidence, by label

std::vector<CallbackEvent> ApiCallbacks(const std::string& label) {
  std::vector<CallbackEvent> out;
  for (const CallbackEvent& e : g.callbacks) {
    if (e.label == label && (e.domain == "runtime" || e.domain == "driver")) out.push_back(e);
  }
  return out;
}

std::string CallbackJson(const CallbackEvent& e) {
  Object o;
  o.Str("domain", e.domain).Str("name", e.name).Num("cbid", e.cbid);
  if (e.site >= 0) o.Str("site", e.site == CUPTI_API_ENTER ? "enter" : "exit");
  if (e.domain == "resource") {
    o.Num("node", e.node)
        .Num("original_node", e.original_node)
        .Num("graph", e.graph)
        .Num("exec", e.exec);
  } else {
    o.Num("corr", e.corr);
  }
  return o.Json();
}

// "runtime", "driver", "both" or "none": whose callback correlation ids `corr` equals.
std::string WhoseId(uint32_t corr, const std::vector<CallbackEvent>& callbacks) {
  bool runtime = false, driver = false;
  for (const CallbackEvent& e : callbacks) {
    if (e.corr != corr) continue;
    runtime = runtime || e.domain == "runtime";
    driver = driver || e.domain == "driver";
  }
  return runtime && driver ? "both" : runtime ? "runtime" : driver ? "driver" : "none";
}

std::set<uint32_t> Ids(const std::vector<CallbackEvent>& callbacks) {
  std::set<uint32_t> ids;
  for (const CallbackEvent& e : callbacks) ids.insert(e.corr);
  return ids;
}

// Whether every driver callback nested in a runtime call shares its correlation id; null when the
// label saw no runtime-with-driver pair.
std::string NestedDriverSameId(const std::vector<CallbackEvent>& callbacks) {
  std::set<uint32_t> runtime_ids, driver_ids;
  for (const CallbackEvent& e : callbacks)
    (e.domain == "runtime" ? runtime_ids : driver_ids).insert(e.corr);
  if (runtime_ids.empty() || driver_ids.empty()) return "null";
  for (const uint32_t id : driver_ids) {
    if (runtime_ids.count(id) == 0) return "false";
  }
  return "true";
}

// The label's API callbacks, the kernel, copy and API records carrying their correlation ids,
// and which side's id the device records carry.
std::string LabelEvidence(const std::string& label) {
  const std::vector<CallbackEvent> callbacks = ApiCallbacks(label);
  const std::set<uint32_t> ids = Ids(callbacks);
  std::vector<std::string> cb_json, kernel_json, copy_json, api_json;
  std::set<uint32_t> runtime_cbids, driver_cbids;
  for (const CallbackEvent& e : callbacks) {
    if (cb_json.size() < 40) cb_json.push_back(CallbackJson(e));
    if (e.site == CUPTI_API_ENTER)
      (e.domain == "runtime" ? runtime_cbids : driver_cbids).insert(e.cbid);
  }
  std::set<std::string> device_side;
  for (const KernelRecord& k : g.kernels) {
    if (ids.count(k.corr) == 0) continue;
    kernel_json.push_back(Object().Str("name", k.name).Num("corr", k.corr).Json());
    device_side.insert(WhoseId(k.corr, callbacks));
  }
  std::set<std::string> runtime_field;
  for (const CopyRecord& c : g.copies) {
    if (ids.count(c.corr) == 0 && ids.count(c.runtime_corr) == 0) continue;
    copy_json.push_back(Object()
                            .Str("kind", c.kind)
                            .Num("corr", c.corr)
                            .Num("runtime_corr", c.runtime_corr)
                            .Num("bytes", c.bytes)
                            .Num("copy_kind", c.copy_kind)
                            .Json());
    device_side.insert(WhoseId(c.corr, callbacks));
    if (c.kind == "memcpy")
      runtime_field.insert(c.runtime_corr == 0 ? "zero" : WhoseId(c.runtime_corr, callbacks));
  }
  for (const ApiRecord& a : g.apis) {
    if (ids.count(a.corr) != 0) {
      api_json.push_back(
          Object().Str("domain", a.domain).Num("cbid", a.cbid).Num("corr", a.corr).Json());
    }
  }
  auto names = [](const std::set<std::string>& values) {
    std::vector<std::string> quoted;
    for (const std::string& v : values) quoted.push_back(JsonQuote(v));
    return Array(quoted);
  };
  auto numbers = [](const std::set<uint32_t>& values) {
    std::vector<std::string> text;
    for (const uint32_t v : values) text.push_back(std::to_string(v));
    return Array(text);
  };
  return Object()
      .Raw("runtime_cbids_entered", numbers(runtime_cbids))
      .Raw("driver_cbids_entered", numbers(driver_cbids))
      .Raw("nested_driver_same_corr", NestedDriverSameId(callbacks))
      .Raw("device_record_corr_is", names(device_side))
      .Raw("memcpy_runtime_corr_field_is", names(runtime_field))
      .Raw("callbacks", Array(cb_json))
      .Raw("kernel_records", Array(kernel_json))
      .Raw("copy_records", Array(copy_json))
      .Raw("api_records", Array(api_json))
      .Json();
}

std::string Errors() {
  std::vector<std::string> quoted;
  for (const std::string& e : g.errors) quoted.push_back(JsonQuote(e));
  return Array(quoted);
}

// Prints the child's answer line: `body` plus the errors every answer carries.
void Answer(const std::string& question, Object body) {
  std::lock_guard<std::mutex> lock(g.mu);
  body.Str("question", question)
      .Raw("errors", Errors())
      .Num("callbacks_dropped", g.callbacks_dropped);
  PrintLine(body.Json());
}

// ---- The questions (each runs in its own child)

void LaunchCallbacks() {
  if (!Attach({CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
               CUPTI_ACTIVITY_KIND_DRIVER},
              false)) {
    return Answer("launch_callbacks", Object());
  }
  Label("init");
  float* d = DeviceBuffer();
  const CUfunction driver_kernel = FunctionOf(reinterpret_cast<const void*>(&q_driver));
  const CUfunction driver_ex_kernel = FunctionOf(reinterpret_cast<const void*>(&q_driver_ex));
  // Warm-up: each kernel once, so that lazy module loading stays out of the measured labels.
  Label("warmup");
  q_chevron<<<1, kThreads>>>(d);
  void* args[] = {&d};
  CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(&q_runtime), dim3(1), dim3(kThreads), args, 0,
                        nullptr));
  LaunchThroughDriver(driver_kernel, d);
  LaunchThroughDriverEx(driver_ex_kernel, d);
  CUDA(cudaDeviceSynchronize());
  Label("<<<>>>");
  q_chevron<<<1, kThreads>>>(d);
  Label("cudaLaunchKernel");
  CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(&q_runtime), dim3(1), dim3(kThreads), args, 0,
                        nullptr));
  Label("cuLaunchKernel");
  LaunchThroughDriver(driver_kernel, d);
  Label("cuLaunchKernelEx");
  LaunchThroughDriverEx(driver_ex_kernel, d);
  Label("flush");
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Object body;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const char* label : {"<<<>>>", "cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx"}) {
      body.Raw(label, LabelEvidence(label));
    }
  }
  Answer("launch_callbacks", std::move(body));
}

void MemcpyCorrelation() {
  if (!Attach({CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
               CUPTI_ACTIVITY_KIND_DRIVER},
              false)) {
    return Answer("memcpy_correlation", Object());
  }
  constexpr size_t kBytes = 8 << 20;
  Label("init");
  void* device = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(kBytes, 1);
  CUDA(cudaMalloc(&device, kBytes));
  CUDA(cudaMallocHost(&pinned, kBytes));
  cudaStream_t stream = nullptr;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Label("cudaMemcpy pageable HtoD");
  CUDA(cudaMemcpy(device, pageable.data(), kBytes, cudaMemcpyHostToDevice));
  Label("cudaMemcpyAsync pinned HtoD");
  CUDA(cudaMemcpyAsync(device, pinned, kBytes, cudaMemcpyHostToDevice, stream));
  Label("cudaMemcpyAsync pinned DtoH");
  CUDA(cudaMemcpyAsync(pinned, device, kBytes, cudaMemcpyDeviceToHost, stream));
  Label("cudaMemsetAsync");
  CUDA(cudaMemsetAsync(device, 0, kBytes, stream));
  Label("flush");
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Object body;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const char* label : {"cudaMemcpy pageable HtoD", "cudaMemcpyAsync pinned HtoD",
                              "cudaMemcpyAsync pinned DtoH", "cudaMemsetAsync"}) {
      body.Raw(label, LabelEvidence(label));
    }
  }
  Answer("memcpy_correlation", std::move(body));
}

struct CapturedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

// Captures kernels a, b, c on `stream` under label `prefix`+"capture" and instantiates under
// `prefix`+"instantiate".
CapturedGraph CaptureGraph(cudaStream_t stream, float* d, const std::string& prefix) {
  CapturedGraph out;
  Label(prefix + "capture");
  CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  q_graph_a<<<1, kThreads, 0, stream>>>(d);
  q_graph_b<<<1, kThreads, 0, stream>>>(d);
  q_graph_c<<<1, kThreads, 0, stream>>>(d);
  CUDA(cudaStreamEndCapture(stream, &out.graph));
  Label(prefix + "instantiate");
  CUDA(cudaGraphInstantiate(&out.exec, out.graph, 0));
  return out;
}

// One graph launch under each label.
void ReplayUnder(const std::vector<std::string>& labels, cudaGraphExec_t exec,
                 cudaStream_t stream) {
  for (const std::string& label : labels) {
    Label(label);
    CUDA(cudaGraphLaunch(exec, stream));
  }
}

bool IsGraphKernel(const std::string& name) { return name.find("q_graph_") != std::string::npos; }

// Per replay label: the graph-launch callbacks' ids and the graph kernel records that carry them;
// plus the graph kernel records whose ids no API callback of the run carries.
std::string ReplayEvidence(const std::vector<std::string>& labels, bool* all_match) {
  std::vector<std::string> rows;
  bool known = false;
  *all_match = true;
  for (const std::string& label : labels) {
    const std::vector<CallbackEvent> callbacks = ApiCallbacks(label);
    const std::set<uint32_t> ids = Ids(callbacks);
    std::vector<std::string> launch_json, kernel_json;
    for (const CallbackEvent& e : callbacks) {
      if (e.name.find("GraphLaunch") != std::string::npos && e.site == CUPTI_API_ENTER) {
        launch_json.push_back(CallbackJson(e));
      }
    }
    int kernels = 0;
    for (const KernelRecord& k : g.kernels) {
      if (!IsGraphKernel(k.name) || ids.count(k.corr) == 0) continue;
      ++kernels;
      kernel_json.push_back(Object()
                                .Str("name", k.name)
                                .Num("corr", k.corr)
                                .Num("graph_id", k.graph_id)
                                .Num("graph_node_id", k.graph_node_id)
                                .Json());
    }
    known = true;
    *all_match = *all_match && kernels == 3;
    rows.push_back(Object()
                       .Str("label", label)
                       .Raw("graph_launch_callbacks", Array(launch_json))
                       .Int("graph_kernel_records_with_these_ids", kernels)
                       .Raw("kernel_records", Array(kernel_json))
                       .Json());
  }
  // Graph kernel records whose correlation id no API callback of the run carries.
  std::set<uint32_t> callback_ids;
  for (const CallbackEvent& e : g.callbacks) {
    if (e.domain == "runtime" || e.domain == "driver") callback_ids.insert(e.corr);
  }
  std::vector<std::string> unmatched;
  for (const KernelRecord& k : g.kernels) {
    if (IsGraphKernel(k.name) && callback_ids.count(k.corr) == 0 && unmatched.size() < 20) {
      unmatched.push_back(Object()
                              .Str("name", k.name)
                              .Num("corr", k.corr)
                              .Num("graph_node_id", k.graph_node_id)
                              .Json());
    }
  }
  *all_match = known && *all_match;
  return Object()
      .Raw("replays", Array(rows))
      .Raw("unmatched_graph_kernel_records", Array(unmatched))
      .Json();
}

std::vector<CallbackEvent> ResourceEvents(const std::string& label, const char* name) {
  std::vector<CallbackEvent> out;
  for (const CallbackEvent& e : g.callbacks) {
    if (e.label == label && e.domain == "resource" && e.name == name) out.push_back(e);
  }
  return out;
}

std::string EventsJson(const std::vector<CallbackEvent>& events) {
  std::vector<std::string> rows;
  for (const CallbackEvent& e : events) rows.push_back(CallbackJson(e));
  return Array(rows);
}

// The graphs answer from what the callbacks and records of Graphs() saw. Runs under g.mu.
void GraphAnswer(uint32_t graph_id, uint32_t exec_id, Object* body) {
  const std::vector<CallbackEvent> capture_calls = ApiCallbacks("capture");
  const std::set<uint32_t> capture_ids = Ids(capture_calls);
  std::vector<std::string> capture_launches;
  for (const CallbackEvent& e : capture_calls) {
    if (e.name.find("aunchKernel") != std::string::npos && e.site == CUPTI_API_ENTER) {
      capture_launches.push_back(CallbackJson(e));
    }
  }
  int capture_records = 0, graph_kernels = 0, node_records = 0;
  std::set<uint64_t> record_nodes;
  std::set<uint32_t> record_graph_ids;
  for (const KernelRecord& k : g.kernels) {
    capture_records += capture_ids.count(k.corr) != 0 ? 1 : 0;
    // Launched through a graph: either id set (whether CUPTI always sets both is part of §10.3).
    if (!IsGraphKernel(k.name) || (k.graph_id == 0 && k.graph_node_id == 0)) continue;
    ++graph_kernels;
    node_records += k.graph_node_id != 0 ? 1 : 0;
    if (k.graph_node_id != 0) record_nodes.insert(k.graph_node_id);
    if (k.graph_id != 0) record_graph_ids.insert(k.graph_id);
  }
  const auto created = ResourceEvents("capture", "GRAPHNODE_CREATED");
  const auto cloned = ResourceEvents("instantiate", "GRAPHNODE_CLONED");
  std::set<uint64_t> original_ids, clone_ids;
  for (const CallbackEvent& e : created) original_ids.insert(e.node);
  for (const CallbackEvent& e : cloned) clone_ids.insert(e.node);
  std::string node_id_is = "null";
  if (!record_nodes.empty()) {
    bool all_clone = true, all_original = true;
    for (const uint64_t id : record_nodes) {
      all_clone = all_clone && clone_ids.count(id) != 0;
      all_original = all_original && original_ids.count(id) != 0;
    }
    node_id_is = JsonQuote(all_clone ? "clone" : all_original ? "original" : "other");
  }
  // The graph that holds the instantiated clones: named by GRAPH_CLONED if CUPTI fires it, and by
  // the GRAPHNODE_CLONED callbacks' graph. The simulator puts its id in the kernel records.
  std::set<uint32_t> clone_graph_ids;
  for (const char* callback : {"GRAPH_CLONED", "GRAPHNODE_CLONED"}) {
    for (const CallbackEvent& e : ResourceEvents("instantiate", callback))
      clone_graph_ids.insert(e.graph);
  }
  std::string graph_id_is = "null";
  if (!record_graph_ids.empty()) {
    const uint32_t id = *record_graph_ids.begin();
    std::vector<std::string> matches;
    if (id == graph_id) matches.push_back("captured_graph");
    if (clone_graph_ids.count(id) != 0) matches.push_back("clone_graph");
    if (id == exec_id) matches.push_back("exec");
    graph_id_is = JsonQuote(record_graph_ids.size() > 1 ? "several"
                            : matches.empty()           ? "other"
                                                        : matches.front());
    for (size_t i = 1; i < matches.size(); ++i)
      graph_id_is.insert(graph_id_is.size() - 1, "+" + matches[i]);
  }
  std::vector<std::string> traces;
  for (const auto& [corr, id] : g.graph_traces)
    traces.push_back(Object().Num("corr", corr).Num("graph_id", id).Json());
  bool corr_matches = false;
  const std::string replays = ReplayEvidence({"replay 1", "replay 2"}, &corr_matches);
  body->Int("graph_kernel_records", graph_kernels)
      .Int("graph_kernel_records_with_node_id", node_records)
      .Raw("graph_trace_records", Array(traces))
      .Bool("capture_launches_produce_records", capture_records > 0)
      .Raw("capture_launch_callbacks", Array(capture_launches))
      .Raw("nodes_created_in_capture", EventsJson(created))
      .Raw("nodes_created_in_instantiate",
           EventsJson(ResourceEvents("instantiate", "GRAPHNODE_CREATED")))
      .Raw("nodes_cloned_in_instantiate", EventsJson(cloned))
      .Raw("graphs_cloned_in_instantiate",
           EventsJson(ResourceEvents("instantiate", "GRAPH_CLONED")))
      .Raw("exec_created", EventsJson(ResourceEvents("instantiate", "GRAPHEXEC_CREATED")))
      .Num("cuptiGetGraphId", graph_id)
      .Num("cuptiGetGraphExecId", exec_id)
      .Raw("kernel_graph_node_id_is", node_id_is)
      .Raw("kernel_graph_id_is", graph_id_is)
      .Raw("kernel_corr_is_graph_launch_corr", Verdict(graph_kernels > 0, corr_matches))
      .Raw("evidence", replays);
}

void Graphs(bool with_graph_trace) {
  const char* question = with_graph_trace ? "graph_trace" : "graphs";
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
  if (!Attach(kinds, true)) return Answer(question, Object());
  const CUptiResult graph_trace_enable =
      with_graph_trace ? CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE))
                       : CUPTI_SUCCESS;
  Label("init");
  float* d = DeviceBuffer();
  cudaStream_t stream = nullptr;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Label("warmup");
  q_graph_a<<<1, kThreads, 0, stream>>>(d);
  q_graph_b<<<1, kThreads, 0, stream>>>(d);
  q_graph_c<<<1, kThreads, 0, stream>>>(d);
  CUDA(cudaStreamSynchronize(stream));
  const CapturedGraph graph = CaptureGraph(stream, d, "");
  uint32_t graph_id = 0, exec_id = 0;
  CUPTI(cuptiGetGraphId(graph.graph, &graph_id));
  CUPTI(cuptiGetGraphExecId(graph.exec, &exec_id));
  ReplayUnder({"replay 1", "replay 2"}, graph.exec, stream);
  Label("flush");
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Object body;
  if (with_graph_trace) body.Int("graph_trace_enable_result", graph_trace_enable);
  {
    std::lock_guard<std::mutex> lock(g.mu);
    GraphAnswer(graph_id, exec_id, &body);
  }
  Answer(question, std::move(body));
}

void Completed() {
  if (!AttachKernelRecords()) return Answer("completed", Object());
  float* d = DeviceBuffer();
  Label("kernels");
  LaunchTiny(20, d);
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  int equal = 0, zero = 0, other = 0;
  std::string example = "null";
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const KernelRecord& k : g.kernels) {
      if (k.name.find("q_tiny") == std::string::npos) continue;
      if (k.completed == k.end) {
        ++equal;
      } else if (k.completed == 0) {
        ++zero;
      } else {
        ++other;
      }
      if (example == "null") {
        example =
            Object().Num("start", k.start).Num("end", k.end).Num("completed", k.completed).Json();
      }
    }
  }
  Answer("completed", std::move(Object()
                                    .Int("kernels", equal + zero + other)
                                    .Int("completed_equals_end", equal)
                                    .Int("completed_zero", zero)
                                    .Int("completed_other", other)
                                    .Raw("example", example)));
}

// Aggregates buffer events into rows {label, event, client, owner, on_main_thread, during_flush,
// thread_name, count, valid_bytes}. Runs under g.mu.
std::string BufferRows() {
  using Key = std::tuple<std::string, bool, int, int, bool, bool, std::string>;
  std::map<Key, std::pair<int, size_t>> rows;
  for (const BufferEvent& e : g.buffers) {
    auto& row =
        rows[Key{e.label, e.request, e.client, e.owner, e.on_main, e.during_flush, e.thread_name}];
    row.first += 1;
    row.second += e.valid;
  }
  std::vector<std::string> out;
  for (const auto& [key, counts] : rows) {
    const auto& [label, request, client, owner, on_main, during_flush, thread_name] = key;
    out.push_back(Object()
                      .Str("label", label)
                      .Str("event", request ? "request" : "complete")
                      .Int("client", client)
                      .Int("owner", owner)
                      .Bool("on_main_thread", on_main)
                      .Bool("during_flush", during_flush)
                      .Str("thread_name", thread_name)
                      .Int("count", counts.first)
                      .Num("valid_bytes", counts.second)
                      .Json());
  }
  return Array(out);
}

void BufferThreads() {
  g.buffer_bytes = 64 << 10;  // a few hundred kernel records per buffer: the launches fill many
  if (!AttachKernelRecords()) return Answer("buffer_threads", Object());
  float* d = DeviceBuffer();
  Label("launch without flush");
  LaunchTiny(3000, d);
  CUDA(cudaDeviceSynchronize());
  Label("wait without flush");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  bool completed_without_flush = false;
  while (!completed_without_flush && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(g.mu);
    for (const BufferEvent& e : g.buffers)
      completed_without_flush = completed_without_flush || !e.request;
  }
  Label("flush");
  FlushAll(0);
  Label("launch, then forced flush");
  LaunchTiny(10, d);
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Label("done");
  size_t kernels = 0;
  std::string rows;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    kernels = g.kernels.size();
    rows = BufferRows();
  }
  Answer("buffer_threads",
         std::move(Object()
                       .Num("buffer_bytes", g.buffer_bytes)
                       .Num("kernel_records", kernels)
                       .Bool("completed_within_3s_without_flush", completed_without_flush)
                       .Str("main_thread_name", ThreadName())
                       .Raw("buffers", rows)));
}

void RegisterTwice() {
  if (!AttachKernelRecords()) return Answer("register_twice", Object());
  float* d = DeviceBuffer();
  Label("before second register");
  LaunchTiny(50, d);
  CUDA(cudaDeviceSynchronize());
  Label("second register");
  const CUptiResult second = cuptiActivityRegisterCallbacks(RequestB, CompleteB);
  Label("after second register");
  LaunchTiny(50, d);
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  int kernels[2] = {0, 0};
  std::string rows;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const KernelRecord& k : g.kernels) kernels[k.client] += 1;
    rows = BufferRows();
  }
  Answer("register_twice", std::move(Object()
                                         .Int("second_register_result", second)
                                         .Int("launched", 100)
                                         .Int("kernel_records_to_first", kernels[0])
                                         .Int("kernel_records_to_second", kernels[1])
                                         .Raw("buffers", rows)));
}

void Reattach() {
  const std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                 CUPTI_ACTIVITY_KIND_RUNTIME,
                                                 CUPTI_ACTIVITY_KIND_DRIVER};
  if (!Attach(kinds, true)) return Answer("reattach", Object());
  Label("init");
  float* d = DeviceBuffer();
  cudaStream_t stream = nullptr;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const CapturedGraph first = CaptureGraph(stream, d, "session 1 ");
  ReplayUnder({"session 1 replay 1", "session 1 replay 2"}, first.exec, stream);
  Label("session 1 flush");
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Label("detach");
  CUPTI(cuptiUnsubscribe(g.subscriber));
  g.subscriber = nullptr;
  const CUptiResult finalize = CUPTI(cuptiFinalize());
  Label("detached");
  CUDA(cudaGraphLaunch(first.exec, stream));
  CUDA(cudaStreamSynchronize(stream));
  const bool reattached = Attach(kinds, true);
  ReplayUnder({"session 2 replay of session 1 graph 1", "session 2 replay of session 1 graph 2"},
              first.exec, stream);
  const CapturedGraph second = CaptureGraph(stream, d, "session 2 ");
  ReplayUnder({"session 2 replay 1", "session 2 replay 2"}, second.exec, stream);
  Label("session 2 flush");
  FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  bool first_match = false, old_match = false, new_match = false;
  Object body;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    body.Int("finalize_result", finalize)
        .Bool("reattached", reattached)
        .Raw("session_1",
             ReplayEvidence({"session 1 replay 1", "session 1 replay 2"}, &first_match))
        .Raw("session_2_old_graph", ReplayEvidence({"session 2 replay of session 1 graph 1",
                                                    "session 2 replay of session 1 graph 2"},
                                                   &old_match))
        .Raw("session_2_new_graph",
             ReplayEvidence({"session 2 replay 1", "session 2 replay 2"}, &new_match))
        .Bool("session_1_corr_matches", first_match)
        .Bool("session_2_old_graph_corr_matches", old_match)
        .Bool("session_2_new_graph_corr_matches", new_match);
  }
  Answer("reattach", std::move(body));
}

// Run with NVTX_INJECTION64_PATH naming libcupti: the first NVTX call loads it as the NVTX
// handler; does our cuptiSubscribe then still get the slot? The NameOsThread call last (the
// NVIDIA/NVTX#125 segfault) prints its own line, so a crash there keeps the first answer.
void NvtxSlot() {
  nvtxRangePushA("before subscribe");
  nvtxRangePop();
  char holder[256] = {};
  CUpti_SubscriberParams params = {};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cupti_questions";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof(holder);
  const CUptiResult subscribe = cuptiSubscribe_v2(
      &g.subscriber, reinterpret_cast<CUpti_CallbackFunc>(OnCallback), nullptr, &params);
  if (subscribe == CUPTI_SUCCESS) CUPTI(cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_NVTX));
  Label("after subscribe");
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("after subscribe");
    nvtxRangePop();
  }
  int nvtx_callbacks = 0;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const CallbackEvent& e : g.callbacks) nvtx_callbacks += e.domain == "nvtx" ? 1 : 0;
  }
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  Answer("nvtx_slot", std::move(Object()
                                    .Str("nvtx_injection", injection != nullptr ? injection : "")
                                    .Int("subscribe_result", subscribe)
                                    .Str("old_subscriber_name", holder)
                                    .Int("nvtx_callbacks_for_6_calls", nvtx_callbacks)));
  nvtxNameOsThreadA(static_cast<uint32_t>(Tid()), "cupti_questions");
  PrintLine(Object().Str("question", "nvtx_slot").Bool("name_os_thread_survived", true).Json());
}

// Run with NVTX_INJECTION64_PATH naming probe_injection and PROBE_NVTX_CHAIN_CUPTI naming
// libcupti: both CUPTI's NVTX callbacks and the injection's own wrapper should see every push.
void NvtxChain() {
  CUDA(cudaFree(nullptr));  // as in a traced program: CUDA is up before the first NVTX call
  const bool subscribed = Subscribe();
  if (subscribed) CUPTI(cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_NVTX));
  Label("pushes");
  constexpr int kPushes = 5;
  for (int i = 0; i < kPushes; ++i) {
    nvtxRangePushA("chained");
    nvtxRangePop();
  }
  int cupti_pushes = 0;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (const CallbackEvent& e : g.callbacks) {
      cupti_pushes += e.domain == "nvtx" && e.name.find("RangePushA") != std::string::npos ? 1 : 0;
    }
  }
  long long wrapper_pushes = -1;
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  if (void* lib = injection != nullptr ? dlopen(injection, RTLD_NOW | RTLD_NOLOAD) : nullptr) {
    using CountFn = unsigned long long (*)();
    if (auto count = reinterpret_cast<CountFn>(dlsym(lib, "probe_injection_push_count"))) {
      wrapper_pushes = static_cast<long long>(count());
    }
  }
  Answer("nvtx_chain",
         std::move(Object()
                       .Bool("subscribed", subscribed)
                       .Int("pushes", kPushes)
                       .Int("cupti_nvtx_push_callbacks", cupti_pushes)
                       .Int("injection_wrapper_pushes", wrapper_pushes)
                       .Raw("chaining_works",
                            Verdict(wrapper_pushes >= 0,
                                    cupti_pushes == kPushes && wrapper_pushes == kPushes))));
}

// One kernel, no CUPTI of its own: the workload of the injection cases.
void LaunchOnly() {
  float* d = DeviceBuffer();
  q_chevron<<<1, kThreads>>>(d);
  const bool ok = CUDA(cudaDeviceSynchronize()) && CUDA(cudaGetLastError());
  std::lock_guard<std::mutex> lock(g.mu);
  PrintLine(Object().Bool("kernel_ran", ok).Raw("errors", Errors()).Json());
}

// ---- The parent

struct ChildResult {
  std::string json;  // {"exit":…, "signal":…, "timed_out":…, "lines":[…]}
  std::vector<std::string> lines;
};

// Runs this program with `args` and the environment changes `env` (value null: unset), collecting
// the complete lines it prints within the timeout.
ChildResult RunChild(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, const char*>>& env) {
  int pipe_fds[2];
  ChildResult result;
  if (pipe(pipe_fds) != 0) {
    result.json = Object().Str("error", "pipe failed").Json();
    return result;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    for (const char* name : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "LD_PRELOAD"})
      unsetenv(name);
    for (const auto& [name, value] : env) {
      if (value != nullptr) {
        setenv(name.c_str(), value, 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    std::vector<char*> argv;
    static char self[] = "/proc/self/exe";
    argv.push_back(self);
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(self, argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string out;
  bool timed_out = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kChildTimeoutSeconds);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fd = {pipe_fds[0], POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(pipe_fds[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::istringstream stream(out);
  std::string line;
  // Complete answer lines only: a cut-off last line, or anything a library printed, is left out.
  while (std::getline(stream, line)) {
    if (!stream.eof() && line.size() >= 2 && line.front() == '{' && line.back() == '}') {
      result.lines.push_back(line);
    }
  }
  Object o;
  o.Raw("exit", WIFEXITED(status) ? std::to_string(WEXITSTATUS(status)) : "null")
      .Raw("signal", WIFSIGNALED(status) ? std::to_string(WTERMSIG(status)) : "null")
      .Bool("timed_out", timed_out)
      .Raw("lines", Array(result.lines));
  result.json = o.Json();
  return result;
}

std::string Directory(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

std::string SelfDirectory() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? Directory(std::string(path, static_cast<size_t>(n))) : ".";
}

std::string CuptiLibraryPath() {
  Dl_info info = {};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) == 0 || info.dli_fname == nullptr)
    return "";
  char resolved[4096];
  return realpath(info.dli_fname, resolved) != nullptr ? resolved : info.dli_fname;
}

// Question 6: the injection cases, each a --launch-only child with its own log.
std::string Injection(const std::string& library) {
  const std::string dir = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
  struct Case {
    const char* name;
    bool preload, injection_path;
    const char* returns;
  };
  const Case cases[] = {{"ld_preload_only", true, false, "1"},
                        {"injection_path_returning_1", false, true, "1"},
                        {"injection_path_returning_0", false, true, "0"},
                        {"both_naming_it", true, true, "1"}};
  Object body;
  for (const Case& c : cases) {
    const std::string log =
        dir + "/cupti_questions." + std::to_string(getpid()) + "." + c.name + ".log";
    std::remove(log.c_str());
    const ChildResult child = RunChild(
        {"--launch-only"}, {{"LD_PRELOAD", c.preload ? library.c_str() : nullptr},
                            {"CUDA_INJECTION64_PATH", c.injection_path ? library.c_str() : nullptr},
                            {"PROBE_INJECTION_LOG", log.c_str()},
                            {"PROBE_INJECTION_RETURN", c.returns}});
    int calls = 0;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      calls += line.rfind("InitializeInjection pid", 0) == 0 ? 1 : 0;
    std::remove(log.c_str());
    body.Raw(c.name,
             Object().Int("initialize_injection_calls", calls).Raw("child", child.json).Json());
  }
  return body.Str("question", "injection").Str("library", library).Json();
}

std::string NvtxChainCase(const std::string& library, const std::string& cupti) {
  const std::string dir = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
  const std::string log = dir + "/cupti_questions." + std::to_string(getpid()) + ".nvtx_chain.log";
  std::remove(log.c_str());
  const ChildResult child =
      RunChild({"--question", "nvtx_chain"}, {{"NVTX_INJECTION64_PATH", library.c_str()},
                                              {"PROBE_NVTX_CHAIN_CUPTI", cupti.c_str()},
                                              {"PROBE_INJECTION_LOG", log.c_str()}});
  std::vector<std::string> log_lines;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) log_lines.push_back(JsonQuote(line));
  std::remove(log.c_str());
  return Object().Raw("child", child.json).Raw("injection_log", Array(log_lines)).Json();
}

int Parent(const std::string& only) {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cupti_questions: no CUDA device (%s); these questions need a real GPU.\n",
                 probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return kExitNoDevice;
  }
  uint32_t cupti_version = 0;
  cuptiGetVersion(&cupti_version);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceProp prop = {};
  cudaGetDeviceProperties(&prop, 0);
  const std::string cupti = CuptiLibraryPath();
  const std::string library = SelfDirectory() + "/libprobe_injection.so";
  Object answers;
  for (const char* question : {"launch_callbacks", "memcpy_correlation", "graphs", "graph_trace",
                               "completed", "buffer_threads", "register_twice", "reattach"}) {
    if (!only.empty() && only != question) continue;
    std::fprintf(stderr, "cupti_questions: %s\n", question);
    answers.Raw(question, RunChild({"--question", question}, {}).json);
  }
  if (only.empty() || only == "injection") answers.Raw("injection", Injection(library));
  if (only.empty() || only == "nvtx_slot") {
    answers.Raw(
        "nvtx_slot",
        RunChild({"--question", "nvtx_slot"}, {{"NVTX_INJECTION64_PATH", cupti.c_str()}}).json);
  }
  if (only.empty() || only == "nvtx_chain")
    answers.Raw("nvtx_chain", NvtxChainCase(library, cupti));
  PrintLine(Object()
                .Str("device", prop.name)
                .Int("driver_version", driver)
                .Int("runtime_version", runtime)
                .Num("cupti_api_version", cupti_version)
                .Str("cupti_library", cupti)
                .Raw("answers", answers.Json())
                .Json());
  return 0;
}

int Child(const std::string& question) {
  g.main_tid = Tid();
  if (question == "launch_callbacks") {
    LaunchCallbacks();
  } else if (question == "memcpy_correlation") {
    MemcpyCorrelation();
  } else if (question == "graphs") {
    Graphs(false);
  } else if (question == "graph_trace") {
    Graphs(true);
  } else if (question == "completed") {
    Completed();
  } else if (question == "buffer_threads") {
    BufferThreads();
  } else if (question == "register_twice") {
    RegisterTwice();
  } else if (question == "reattach") {
    Reattach();
  } else if (question == "nvtx_slot") {
    NvtxSlot();
  } else if (question == "nvtx_chain") {
    NvtxChain();
  } else {
    std::fprintf(stderr, "cupti_questions: unknown question %s\n", question.c_str());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--launch-only") {
    LaunchOnly();
    return 0;
  }
  if (args.size() == 2 && args[0] == "--question") return Child(args[1]);
  if (args.size() == 2 && args[0] == "--only") return Parent(args[1]);
  if (args.empty()) return Parent("");
  std::fprintf(stderr, "usage: cupti_questions [--only QUESTION]\n");
  return 2;
}
