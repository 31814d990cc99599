// The simgpu_ control API of the fake libcupti.so.13 (simgpu_control.h): the simulated driver's
// calls, turned into CUPTI callbacks (fake_core.h dispatch) and activity records (every store
// whose kind is on: the process-wide one, and each subscriber's in the multi-subscriber mode).
#pragma GCC visibility push(default)
#include "simgpu_control.h"

#include <cupti.h>
#pragma GCC visibility pop

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_core.h"
#include "fake_names.h"

namespace gpuattr::simgpu {
namespace {

constexpr const char* kInvalidSymbol = "<invalid>";         // symbolName outside launch callbacks
alignas(16) constexpr unsigned char kZeroParams[512] = {};  // functionParams: all fields zero
constexpr int kEnterReturnPoison = 0x5eed;  // what functionReturnValue points to at ENTER

// One side (runtime or nested driver) of an open API call. The slots and the data live at a
// stable address from ENTER to EXIT, as the real correlationData slot does; each subscriber has
// its own slot.
struct CallSide {
  int domain = 0;
  uint32_t cbid = 0;
  uint32_t correlation_id = 0;
  std::array<uint64_t, kMaxSubscribers> correlation_data{};
  uint64_t start_ns = 0;
};

struct OpenCall {
  CallSide outer;
  CallSide nested;  // cbid 0: no nested driver call
  std::string symbol;
  bool is_launch = false;
  uint32_t device = 0;
  uint32_t stream = 0;
  int return_value = 0;
};

thread_local std::vector<std::unique_ptr<OpenCall>> tls_calls;

uint32_t CurrentThreadId(uint32_t type) {
  if (type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return static_cast<uint32_t>(syscall(SYS_gettid));
  }
  return static_cast<uint32_t>(pthread_self());  // the default: pthread_self(), truncated
}

void FireApi(OpenCall& call, CallSide& side, CUpti_ApiCallbackSite site, CUctx_st* context) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = FunctionName(side.domain, side.cbid);
  data.functionParams = kZeroParams;
  data.functionReturnValue =
      site == CUPTI_API_EXIT ? &call.return_value : const_cast<int*>(&kEnterReturnPoison);
  data.symbolName = IsLaunchCbid(side.domain, side.cbid) ? call.symbol.c_str() : kInvalidSymbol;
  data.context = context;
  data.contextUid = context != nullptr ? context->id : 0;
  data.correlationId = side.correlation_id;
  Fake::Get().Fire(side.domain, side.cbid, &data, side.correlation_data.data());
}

void FireResource(uint32_t cbid, CUctx_st* context, void* descriptor) {
  CUpti_ResourceData data{};
  data.context = context;
  data.resourceHandle.stream = nullptr;
  data.resourceDescriptor = descriptor;
  Fake::Get().Fire(CUPTI_CB_DOMAIN_RESOURCE, cbid, &data, nullptr);
}

// A CUpti_ActivityDevice5 for a simulated device (an H100-like part; values are plausible, fixed).
void AppendDeviceRecord(uint32_t device) {
  CUpti_ActivityDevice5 record{};
  record.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  record.globalMemorySize = 80ull << 30;
  record.numMultiprocessors = 132;
  record.numThreadsPerWarp = 32;
  record.computeCapabilityMajor = 9;
  record.computeCapabilityMinor = 0;
  record.maxThreadsPerBlock = 1024;
  record.id = device;
  record.name = SIMGPU_DEVICE_NAME;
  record.isCudaVisible = 1;
  Fake::Get().ForEachStore([&](ActivityStore& store) {
    if (store.IsEnabled(CUPTI_ACTIVITY_KIND_DEVICE))
      store.AppendHostRecord(&record, sizeof(record));
  });
}

void AppendApiRecord(const CallSide& side, uint64_t end_ns, int return_value) {
  const uint32_t kind = side.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
                                                                   : CUPTI_ACTIVITY_KIND_DRIVER;
  Fake::Get().ForEachStore([&](ActivityStore& store) {
    if (!store.IsEnabled(kind)) return;
    CUpti_ActivityAPI record{};
    record.kind = static_cast<CUpti_ActivityKind>(kind);
    record.cbid = side.cbid;
    record.start = side.start_ns;
    record.end = end_ns;
    record.processId = static_cast<uint32_t>(getpid());
    record.threadId = CurrentThreadId(store.thread_id_type());
    record.correlationId = side.correlation_id;
    record.returnValue = static_cast<uint32_t>(return_value);
    store.AppendHostRecord(&record, sizeof(record));
  });
}

CUctx_st* InnermostContext() {
  return tls_calls.empty() ? Fake::Get().AnyContext()
                           : Fake::Get().ExistingContext(tls_calls.back()->device);
}

// The fields every device record has, from the simulated activity.
template <typename Record>
void FillCommon(Record& r, const SimgpuActivity& a, uint32_t context_id) {
  r.deviceId = a.device;
  r.contextId = context_id;
  r.streamId = a.stream;
  r.correlationId = a.correlation_id;
  r.graphId = a.graph_id;
  r.graphNodeId = a.graph_node_id;
}

// The fields both memcpy records have.
template <typename Record>
void FillCopy(Record& r, const SimgpuActivity& a, uint32_t context_id) {
  FillCommon(r, a, context_id);
  r.copyKind = a.copy_kind;
  r.srcKind = a.src_kind;
  r.dstKind = a.dst_kind;
  r.bytes = a.bytes;
}

// `r` as the store keeps it until the work completes: its bytes, and where its times go.
template <typename Record>
void Place(const Record& r, DeviceRecord* out) {
  std::memcpy(out->bytes.data(), &r, sizeof(r));
  out->size = sizeof(r);
  out->start_offset = offsetof(Record, start);
  out->end_offset = offsetof(Record, end);
}

// The record `a` becomes in `store`; false when its kind is off there.
bool BuildDeviceRecord(const SimgpuActivity& a, const ActivityStore& store, DeviceRecord* out) {
  Fake& fake = Fake::Get();
  CUctx_st* context = fake.ExistingContext(a.device);
  const uint32_t context_id = context != nullptr ? context->id : 0;
  out->start_ns = a.start_ns;
  out->end_ns = a.end_ns;
  switch (a.type) {
    case SIMGPU_ACTIVITY_KERNEL: {
      uint32_t kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      if (!store.IsEnabled(kind)) kind = CUPTI_ACTIVITY_KIND_KERNEL;
      if (!store.IsEnabled(kind)) return false;
      CUpti_ActivityKernel10 r{};
      r.kind = static_cast<CUpti_ActivityKind>(kind);
      FillCommon(r, a, context_id);
      r.gridX = a.grid[0];
      r.gridY = a.grid[1];
      r.gridZ = a.grid[2];
      r.blockX = a.block[0];
      r.blockY = a.block[1];
      r.blockZ = a.block[2];
      r.staticSharedMemory = a.static_shared_memory;
      r.dynamicSharedMemory = a.dynamic_shared_memory;
      r.registersPerThread = a.registers_per_thread;
      r.name = fake.Intern(a.name);
      r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
      Place(r, out);
      out->completed_offset = offsetof(CUpti_ActivityKernel10, completed);
      return true;
    }
    case SIMGPU_ACTIVITY_MEMCPY: {
      if (a.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP &&
          store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) {
        CUpti_ActivityMemcpyPtoP4 r{};
        r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
        FillCopy(r, a, context_id);
        r.srcDeviceId = a.device;
        r.srcContextId = context_id;
        r.dstDeviceId = a.peer_device;
        CUctx_st* peer = fake.ExistingContext(a.peer_device);
        r.dstContextId = peer != nullptr ? peer->id : 0;
        Place(r, out);
        return true;
      }
      if (!store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return false;
      CUpti_ActivityMemcpy6 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      FillCopy(r, a, context_id);
      r.runtimeCorrelationId = a.correlation_id;
      r.copyCount = 1;
      Place(r, out);
      return true;
    }
    case SIMGPU_ACTIVITY_MEMSET: {
      if (!store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMSET)) return false;
      CUpti_ActivityMemset4 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      FillCommon(r, a, context_id);
      r.value = a.memset_value;
      r.bytes = a.bytes;
      r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      Place(r, out);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace
}  // namespace gpuattr::simgpu

using gpuattr::simgpu::Fake;

// ================================ simgpu control API ==========================================

int simgpu_control_version(void) { return SIMGPU_CONTROL_VERSION; }

uint64_t simgpu_now(void) { return gpuattr::simgpu::Now(); }

void simgpu_set_device_clock(uint64_t (*now)(void)) { gpuattr::simgpu::SetDeviceClock(now); }

uint32_t simgpu_api_enter(int domain, uint32_t cbid, const char* symbol, uint32_t device,
                          uint32_t stream) {
  using namespace gpuattr::simgpu;
  Fake& fake = Fake::Get();
  auto call = std::make_unique<OpenCall>();
  call->outer = {domain, cbid, fake.NextCorrelationId(), {}, Now()};
  call->symbol = symbol != nullptr ? symbol : "";
  call->device = device;
  call->stream = stream;
  const uint32_t nested_cbid = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? NestedDriverCbid(cbid) : 0;
  if (nested_cbid != 0 && fake.nested() != NestedDriver::kOff) {
    const uint32_t id = fake.nested() == NestedDriver::kSameId ? call->outer.correlation_id
                                                               : fake.NextCorrelationId();
    call->nested = {CUPTI_CB_DOMAIN_DRIVER_API, nested_cbid, id, {}, 0};
  }
  OpenCall& open = *call;
  tls_calls.push_back(std::move(call));

  bool created = false;
  CUctx_st* context = fake.ContextFor(device, &created);
  // The first call on a device enters with no context; the context appears inside it.
  FireApi(open, open.outer, CUPTI_API_ENTER, created ? nullptr : context);
  if (created) {
    FireResource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, context, nullptr);
    AppendDeviceRecord(device);
  }
  if (open.nested.cbid != 0) {
    open.nested.start_ns = Now();
    FireApi(open, open.nested, CUPTI_API_ENTER, context);
  }
  return open.outer.correlation_id;
}

void simgpu_api_exit(int return_value) {
  using namespace gpuattr::simgpu;
  if (tls_calls.empty()) return;
  OpenCall& open = *tls_calls.back();
  open.return_value = return_value;
  CUctx_st* context = Fake::Get().ExistingContext(open.device);
  if (open.nested.cbid != 0) {
    FireApi(open, open.nested, CUPTI_API_EXIT, context);
    AppendApiRecord(open.nested, Now(), return_value);
  }
  FireApi(open, open.outer, CUPTI_API_EXIT, context);
  AppendApiRecord(open.outer, Now(), return_value);
  tls_calls.pop_back();
}

int simgpu_activity_submit(const SimgpuActivity* a) {
  using namespace gpuattr::simgpu;
  if (a == nullptr) return -1;
  if (a->type != SIMGPU_ACTIVITY_KERNEL && a->type != SIMGPU_ACTIVITY_MEMCPY &&
      a->type != SIMGPU_ACTIVITY_MEMSET) {
    return -1;
  }
  Fake::Get().ForEachStore([a](ActivityStore& store) {
    DeviceRecord out;
    if (BuildDeviceRecord(*a, store, &out)) store.SubmitDeviceRecord(out);
  });
  return 0;
}

uint32_t simgpu_graph_create(void) {
  using namespace gpuattr::simgpu;
  CUgraph_st* graph = Fake::Get().NewGraph();
  CUpti_GraphData data{};
  data.graph = graph;
  FireResource(CUPTI_CBID_RESOURCE_GRAPH_CREATED, InnermostContext(), &data);
  return graph->id;
}

uint64_t simgpu_graph_node_create(uint32_t graph_id, int node_type) {
  using namespace gpuattr::simgpu;
  CUgraph_st* graph = Fake::Get().FindGraph(graph_id);
  if (graph == nullptr) return 0;
  CUgraphNode_st* node = Fake::Get().NewNode(graph, node_type);
  CUpti_GraphData data{};
  data.graph = graph;
  data.node = node;
  data.nodeType = static_cast<CUgraphNodeType>(node_type);
  FireResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, InnermostContext(), &data);
  return node->id;
}

uint32_t simgpu_graph_instantiate(uint32_t graph_id, uint32_t* clone_graph_id,
                                  uint64_t* clone_node_ids, size_t max_nodes) {
  using namespace gpuattr::simgpu;
  Fake& fake = Fake::Get();
  CUgraph_st* graph = fake.FindGraph(graph_id);
  if (graph == nullptr) return 0;
  CUctx_st* context = InnermostContext();
  CUgraph_st* clone = fake.NewGraph();
  CUgraphExec_st* exec = fake.NewExec();
  const std::vector<CUgraphNode_st*> originals = graph->nodes;
  for (size_t i = 0; i < originals.size(); ++i) {
    CUgraphNode_st* node = fake.NewNode(clone, originals[i]->type);
    CUpti_GraphData data{};
    data.graph = clone;
    data.originalGraph = graph;
    data.node = node;
    data.nodeType = static_cast<CUgraphNodeType>(node->type);
    data.graphExec = exec;
    // Both fire for every node (Triton Proton; cupti-notes §7.2): CREATED, then CLONED.
    FireResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, context, &data);
    data.originalNode = originals[i];
    FireResource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, context, &data);
    if (clone_node_ids != nullptr && i < max_nodes) clone_node_ids[i] = node->id;
  }
  CUpti_GraphData data{};
  data.graph = graph;
  data.graphExec = exec;
  FireResource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, context, &data);
  if (clone_graph_id != nullptr) *clone_graph_id = clone->id;
  return exec->id;
}
