// The fake libcupti.so.13: the CUPTI entry points the shim uses, with the real library's semantics
// (cupti-notes §3, §4, §8), plus the simgpu_ control API that the simulated driver drives it with.
//
// Threads: every entry point may be called from any thread. API and resource callbacks run on the
// thread that called simgpu_api_enter/exit or a graph control function (the "app thread"); buffer
// callbacks as described in activity_store.h.
//
// Locks (outer to inner): cb_mu_ (subscriber, enable state) and objects_mu_ (contexts, graphs,
// interned names) are independent leaves, never held while a client callback runs; the store's
// lock is separate and documented in activity_store.h. A client may call any CUPTI function from
// inside any callback, cuptiFinalize included.
//
// Dispatch takes no lock, as a real CUPTI's must not (the shim's per-launch cost is measured on
// this path, docs/benchmarks.md): every change to the subscriber or its enables publishes a new
// immutable Dispatch snapshot, and a callback counts itself in callbacks_running_ before it reads
// the snapshot. A replaced snapshot is freed once no callback is running, so no reader holds it.
//
// cuptiFinalize (cupti-notes §5): it first stops dispatch (the subscriber and its enables are
// gone, so no callback starts afterwards) and waits until the API/resource callbacks already
// running on other threads have returned, not counting those of threads that are themselves
// inside cuptiFinalize (its own caller's callback, when called from one, and a racing finalizer).
// A client whose callback on thread B waits for thread A while A finalizes therefore deadlocks
// here; what the real library does then is unknown (the docs say only that it "blocks all
// application threads until teardown ends"). API calls that entered before and exit after it get
// no EXIT callback and no API record. Then the store is reset (forced flush on the calling thread,
// worker stopped, kinds disabled, buffer callbacks forgotten), and the timestamp callback, the
// thread-id type and the attributes go back to their defaults. Driver state (contexts, graphs,
// the correlation counter) survives. Calls that race with it on other threads (an enable, a
// subscribe) see either state; the real library can crash there (Kineto commit c7c76c36).
//
// The first declarations of the exported functions come from the CUDA headers included here under
// default visibility; everything else in the library is hidden, and the version script puts the
// exports in the libcupti.so.13 node.
#pragma GCC visibility push(default)
#include <cupti.h>

#include "simgpu_control.h"
#pragma GCC visibility pop

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "activity_store.h"
#include "record_layout.h"

// Driver objects. cuda.h only declares these tags; the simulated driver owns their definition.
struct CUctx_st {
  uint32_t id;
  uint32_t device;
};
struct CUgraph_st {
  uint32_t id;
  std::vector<struct CUgraphNode_st*> nodes;
};
struct CUgraphNode_st {
  uint64_t id;
  CUgraph_st* graph;
  int type;
};
struct CUgraphExec_st {
  uint32_t id;
};
// A subscriber handle. Handles are never freed, so a stale one stays safe to compare.
struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback;
  void* userdata;
  std::string name;
};

namespace gpuattr::simgpu {
namespace {

struct NameEntry {
  uint32_t id;
  const char* name;
};
#include "simgpu_cupti_names.inc"

template <size_t N>
constexpr bool SortedById(const NameEntry (&table)[N]) {
  for (size_t i = 1; i < N; ++i) {
    if (table[i - 1].id >= table[i].id) return false;
  }
  return true;
}
// The headers list ids in increasing order; FindName's binary search relies on it (the launch
// path looks up two names per callback, so a linear scan of ~900 entries would dominate it).
static_assert(SortedById(kRuntimeNames) && SortedById(kDriverNames) && SortedById(kResultNames));

template <size_t N>
const char* FindName(const NameEntry (&table)[N], uint32_t id) {
  const NameEntry* entry =
      std::lower_bound(std::begin(table), std::end(table), id,
                       [](const NameEntry& e, uint32_t wanted) { return e.id < wanted; });
  return entry != std::end(table) && entry->id == id ? entry->name : nullptr;
}

constexpr uint32_t kVersion = 130001;                // CUPTI_API_VERSION of CUDA 13.0 Update 1
constexpr const char* kInvalidSymbol = "<invalid>";  // symbolName outside launch callbacks
alignas(16) constexpr unsigned char kZeroParams[512] = {};  // functionParams: all fields zero
constexpr int kEnterReturnPoison = 0x5eed;  // what functionReturnValue points to at ENTER

enum class Mode { kNormal, kNoDriver, kConflict };
enum class NestedDriver { kSameId, kNewId, kOff };

bool IsLaunchCbid(int domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        return true;
      default:
        return false;
    }
  }
  return false;
}

// The driver call a runtime call makes inside itself; 0 when the simulation models none.
uint32_t NestedDriverCbid(uint32_t runtime_cbid) {
  switch (runtime_cbid) {
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
      return CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      return CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
      return CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      return CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags;
    default:
      return 0;
  }
}

const char* FunctionName(int domain, uint32_t cbid) {
  const char* name = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) name = FindName(kRuntimeNames, cbid);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) name = FindName(kDriverNames, cbid);
  return name != nullptr ? name : "<unknown>";
}

uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::atomic<CUpti_TimestampCallbackFunc> g_timestamp_callback{nullptr};

// API and resource callbacks the calling thread is inside of (nested calls count each).
thread_local int tls_callback_depth = 0;

// The CUPTI clock: the registered timestamp callback, CLOCK_REALTIME otherwise.
uint64_t Now() {
  CUpti_TimestampCallbackFunc callback = g_timestamp_callback.load();
  return callback != nullptr ? callback() : RealtimeNs();
}

// One side (runtime or nested driver) of an open API call. The slot and the data live at a stable
// address from ENTER to EXIT, as the real correlationData slot does.
struct CallSide {
  int domain = 0;
  uint32_t cbid = 0;
  uint32_t correlation_id = 0;
  uint64_t correlation_data = 0;
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
thread_local CUptiResult tls_last_error = CUPTI_SUCCESS;

// Attribute defaults (cupti-notes §4.9).
std::map<uint32_t, uint64_t> DefaultAttributes() {
  return {{CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 3200000},
          {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP, 8u << 20},
          {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, 250},
          {CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE, 65536},
          {CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT, 1},
          {CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 0},
          {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 3},
          {CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE, 3},
          {CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 0},
          {CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 1},
          {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS, 16u << 20}};
}

size_t AttributeSize(uint32_t attr) {
  switch (attr) {
    case CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER:
    case CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED:
    case CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER:
      return sizeof(uint8_t);
    default:
      return sizeof(size_t);
  }
}

class Fake {
 public:
  Fake()
      : store_(&Now, EnvSeed(), EnvFlag("SIMGPU_CUPTI_SHUFFLE", true)),
        attributes_(DefaultAttributes()) {
    const char* mode = std::getenv("SIMGPU_CUPTI_MODE");
    if (mode != nullptr && std::strcmp(mode, "nodriver") == 0) mode_ = Mode::kNoDriver;
    if (mode != nullptr && std::strncmp(mode, "conflict:", 9) == 0) {
      mode_ = Mode::kConflict;
      conflict_name_ = mode + 9;
    }
    const char* nested = std::getenv("SIMGPU_CUPTI_NESTED_DRIVER");
    if (nested != nullptr && std::strcmp(nested, "new-id") == 0) nested_ = NestedDriver::kNewId;
    if (nested != nullptr && std::strcmp(nested, "off") == 0) nested_ = NestedDriver::kOff;
    pthread_atfork([] { Get().store_.PrepareFork(); }, [] { Get().store_.ParentAfterFork(); },
                   [] {
                     Get().store_.ChildAfterFork();
                     // Only the forking thread exists: its callbacks are the only ones running.
                     Get().callbacks_running_.store(tls_callback_depth);
                     Get().finalizers_waiting_.store(0);
                   });
  }

  // Never destroyed: clients call in from atexit handlers and from threads that outlive statics.
  static Fake& Get() {
    static Fake* fake = new Fake();
    return *fake;
  }

  bool no_driver() const { return mode_ == Mode::kNoDriver; }
  ActivityStore& store() { return store_; }

  // --- subscription -------------------------------------------------------------------------
  CUptiResult Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) {
    if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
    if (handle == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(cb_mu_);
    std::string holder;
    if (mode_ == Mode::kConflict) holder = conflict_name_;
    if (subscriber_ != nullptr) holder = subscriber_->name.empty() ? "CUPTI" : subscriber_->name;
    if (!holder.empty()) {
      if (params != nullptr && params->oldSubscriberName != nullptr &&
          params->oldSubscriberSize > 0) {
        std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", holder.c_str());
      }
      return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    // Kept for the life of the process: a client may still pass a handle it unsubscribed, and
    // a recycled address must not make that handle valid again.
    auto* subscriber = subscribers_
                           .emplace_back(std::make_unique<CUpti_Subscriber_st>(
                               CUpti_Subscriber_st{callback, userdata, {}}))
                           .get();
    if (params != nullptr && params->subscriberName != nullptr) {
      subscriber->name =
          std::string(params->subscriberName).substr(0, CUPTI_SUBSCRIBER_NAME_MAX_LEN - 1);
    }
    subscriber_ = subscriber;
    domain_all_.fill(false);
    overrides_.clear();
    PublishLocked();
    *handle = subscriber;
    return CUPTI_SUCCESS;
  }

  CUptiResult Unsubscribe(CUpti_SubscriberHandle handle) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    if (handle == nullptr || handle != subscriber_) return CUPTI_ERROR_INVALID_PARAMETER;
    subscriber_ = nullptr;
    domain_all_.fill(false);
    overrides_.clear();
    PublishLocked();
    return CUPTI_SUCCESS;
  }

  CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle handle, int domain,
                             uint32_t cbid) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    if (handle == nullptr || handle != subscriber_ || !ValidDomain(domain)) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    overrides_[{domain, cbid}] = enable != 0;
    PublishLocked();
    return CUPTI_SUCCESS;
  }

  CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, int domain) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    if (handle == nullptr || handle != subscriber_ || !ValidDomain(domain)) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    SetDomainLocked(domain, enable != 0);
    PublishLocked();
    return CUPTI_SUCCESS;
  }

  CUptiResult EnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    if (handle == nullptr || handle != subscriber_) return CUPTI_ERROR_INVALID_PARAMETER;
    for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) {
      SetDomainLocked(domain, enable != 0);
    }
    PublishLocked();
    return CUPTI_SUCCESS;
  }

  CUptiResult GetCallbackState(uint32_t* enable, CUpti_SubscriberHandle handle, int domain,
                               uint32_t cbid) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    if (enable == nullptr || handle == nullptr || handle != subscriber_ || !ValidDomain(domain)) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    *enable = EnabledLocked(domain, cbid) ? 1 : 0;
    return CUPTI_SUCCESS;
  }

  // Invokes the subscriber's callback when (domain, cbid) is enabled, counted in
  // callbacks_running_ so that Finalize can wait for it. Lock-free (see the header comment).
  // Runs on: the app thread.
  void Fire(int domain, uint32_t cbid, const void* data) {
    callbacks_running_.fetch_add(1);
    const Dispatch* dispatch = dispatch_.load();
    if (dispatch != nullptr && dispatch->Enabled(domain, cbid)) {
      ++tls_callback_depth;
      dispatch->callback(dispatch->userdata, static_cast<CUpti_CallbackDomain>(domain), cbid, data);
      --tls_callback_depth;
    }
    callbacks_running_.fetch_sub(1);
    // Both sides use sequentially consistent operations: either the finalizer's predicate sees
    // the decrement, or this load sees the finalizer waiting and wakes it under its lock.
    if (finalizers_waiting_.load() > 0) {
      std::lock_guard<std::mutex> lock(cb_mu_);
      callbacks_idle_.notify_all();
    }
  }

  // --- clock, thread ids, attributes -------------------------------------------------------------
  CUptiResult SetThreadIdType(uint32_t type) {
    if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
    if (type >= CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
    thread_id_type_.store(type);
    return CUPTI_SUCCESS;
  }
  uint32_t thread_id_type() const { return thread_id_type_.load(); }

  CUptiResult SetAttribute(uint32_t attr, size_t* size, const void* value) {
    if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
    if (size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(objects_mu_);
    if (attributes_.count(attr) == 0) return CUPTI_ERROR_INVALID_PARAMETER;
    if (*size < AttributeSize(attr)) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    uint64_t stored = 0;
    std::memcpy(&stored, value, AttributeSize(attr));
    attributes_[attr] = stored;
    return CUPTI_SUCCESS;
  }

  CUptiResult GetAttribute(uint32_t attr, size_t* size, void* value) {
    if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
    if (size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto it = attributes_.find(attr);
    if (it == attributes_.end()) return CUPTI_ERROR_INVALID_PARAMETER;
    if (*size < AttributeSize(attr)) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    std::memcpy(value, &it->second, AttributeSize(attr));
    *size = AttributeSize(attr);
    return CUPTI_SUCCESS;
  }

  // cuptiFinalize (see the header comment): CUPTI's state goes back to a fresh process's;
  // driver objects (contexts, graphs) and the correlation counter are the driver's and survive.
  // Runs on: any thread, also inside a callback.
  void Finalize() {
    {
      std::unique_lock<std::mutex> lock(cb_mu_);
      subscriber_ = nullptr;
      domain_all_.fill(false);
      overrides_.clear();
      PublishLocked();
      callbacks_in_finalize_ += tls_callback_depth;
      finalizers_waiting_.fetch_add(1);
      callbacks_idle_.wait(lock,
                           [this] { return callbacks_running_.load() == callbacks_in_finalize_; });
      finalizers_waiting_.fetch_sub(1);
      callbacks_in_finalize_ -= tls_callback_depth;
    }
    // The forced flush converts device times with the client's clock, so it is reset after.
    store_.Reset();
    g_timestamp_callback.store(nullptr);
    thread_id_type_.store(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
    std::lock_guard<std::mutex> lock(objects_mu_);
    attributes_ = DefaultAttributes();
  }

  // --- driver objects -------------------------------------------------------------------------
  // The context of `device`, creating it (and reporting that) on first use.
  CUctx_st* ContextFor(uint32_t device, bool* created) {
    std::lock_guard<std::mutex> lock(objects_mu_);
    CUctx_st*& context = contexts_[device];
    *created = context == nullptr;
    if (context == nullptr) context = new CUctx_st{next_context_id_++, device};
    return context;
  }

  CUctx_st* ExistingContext(uint32_t device) {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto it = contexts_.find(device);
    return it == contexts_.end() ? nullptr : it->second;
  }

  CUctx_st* AnyContext() {
    std::lock_guard<std::mutex> lock(objects_mu_);
    return contexts_.empty() ? nullptr : contexts_.begin()->second;
  }

  const char* Intern(const char* name) {
    std::lock_guard<std::mutex> lock(objects_mu_);
    return names_.insert(name != nullptr ? name : "").first->c_str();
  }

  CUgraph_st* NewGraph() {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto* graph = new CUgraph_st{next_graph_id_++, {}};
    graphs_[graph->id] = graph;
    return graph;
  }

  CUgraph_st* FindGraph(uint32_t id) {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto it = graphs_.find(id);
    return it == graphs_.end() ? nullptr : it->second;
  }

  CUgraphNode_st* NewNode(CUgraph_st* graph, int type) {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto* node = new CUgraphNode_st{next_node_id_++, graph, type};
    graph->nodes.push_back(node);
    return node;
  }

  CUgraphExec_st* NewExec() {
    std::lock_guard<std::mutex> lock(objects_mu_);
    // Graph and exec ids never overlap. Execs live as long as the process (the simulated driver
    // never destroys one), owned here.
    return execs_.emplace_back(std::make_unique<CUgraphExec_st>(CUgraphExec_st{next_graph_id_++}))
        .get();
  }

  uint32_t NextCorrelationId() { return next_correlation_id_.fetch_add(1); }
  NestedDriver nested() const { return nested_; }

 private:
  static uint32_t EnvSeed() {
    const char* seed = std::getenv("SIMGPU_CUPTI_SEED");
    return seed != nullptr ? static_cast<uint32_t>(std::strtoul(seed, nullptr, 10)) : 1u;
  }
  static bool EnvFlag(const char* name, bool fallback) {
    const char* value = std::getenv(name);
    return value == nullptr ? fallback : std::strcmp(value, "0") != 0;
  }
  static bool ValidDomain(int domain) { return domain > 0 && domain < CUPTI_CB_DOMAIN_SIZE; }

  void SetDomainLocked(int domain, bool enable) {
    domain_all_[domain] = enable;
    for (auto it = overrides_.begin(); it != overrides_.end();) {
      it = it->first.first == domain ? overrides_.erase(it) : std::next(it);
    }
  }
  // Makes the current subscriber and enables what Fire sees from now on.
  void PublishLocked() {
    std::unique_ptr<Dispatch> next;
    if (subscriber_ != nullptr && subscriber_->callback != nullptr) {
      next = std::make_unique<Dispatch>();
      next->callback = subscriber_->callback;
      next->userdata = subscriber_->userdata;
      next->domain_all = domain_all_;
      for (const auto& [key, enabled] : overrides_) {
        std::vector<int8_t>& by_cbid = next->overrides[key.first];
        if (by_cbid.size() <= key.second) by_cbid.resize(key.second + 1, 0);
        by_cbid[key.second] = enabled ? 1 : -1;
      }
    }
    dispatch_.store(next.get());
    if (current_dispatch_ != nullptr) retired_dispatches_.push_back(std::move(current_dispatch_));
    current_dispatch_ = std::move(next);
    // A callback that starts after this load sees the new snapshot, so none can hold an old one.
    if (callbacks_running_.load() == 0) retired_dispatches_.clear();
  }

  bool EnabledLocked(int domain, uint32_t cbid) const {
    auto it = overrides_.find({domain, cbid});
    if (it != overrides_.end()) return it->second;
    return ValidDomain(domain) && domain_all_[domain];
  }

  ActivityStore store_;
  Mode mode_ = Mode::kNormal;
  std::string conflict_name_;
  NestedDriver nested_ = NestedDriver::kSameId;
  std::atomic<uint32_t> next_correlation_id_{1};
  std::atomic<uint32_t> thread_id_type_{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT};

  // What Fire reads: one subscriber's callback and its enables, never changed once published.
  struct Dispatch {
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    std::array<bool, CUPTI_CB_DOMAIN_SIZE> domain_all{};
    std::array<std::vector<int8_t>, CUPTI_CB_DOMAIN_SIZE> overrides;  // by cbid: 1 on, -1 off
    bool Enabled(int domain, uint32_t cbid) const {
      if (!ValidDomain(domain)) return false;
      const std::vector<int8_t>& by_cbid = overrides[domain];
      if (cbid < by_cbid.size() && by_cbid[cbid] != 0) return by_cbid[cbid] > 0;
      return domain_all[domain];
    }
  };

  std::mutex cb_mu_;                           // leaf lock; never held while a client callback runs
  std::condition_variable callbacks_idle_;     // callbacks_running_ fell
  std::atomic<int> callbacks_running_{0};      // Fire calls in progress, all threads
  std::atomic<int> finalizers_waiting_{0};     // Finalize calls waiting for callbacks_running_
  int callbacks_in_finalize_ = 0;              // of those, the ones whose thread is inside Finalize
  CUpti_Subscriber_st* subscriber_ = nullptr;  // the current one, or none
  std::vector<std::unique_ptr<CUpti_Subscriber_st>> subscribers_;  // every one ever made
  std::array<bool, CUPTI_CB_DOMAIN_SIZE> domain_all_{};
  std::map<std::pair<int, uint32_t>, bool> overrides_;
  std::atomic<const Dispatch*> dispatch_{nullptr};  // what Fire reads; null: no subscriber
  std::unique_ptr<Dispatch> current_dispatch_;      // owns dispatch_
  std::vector<std::unique_ptr<Dispatch>> retired_dispatches_;  // replaced, maybe still read

  std::mutex objects_mu_;  // leaf lock
  std::map<uint32_t, uint64_t> attributes_;
  std::map<uint32_t, CUctx_st*> contexts_;
  std::map<uint32_t, CUgraph_st*> graphs_;
  std::vector<std::unique_ptr<CUgraphExec_st>> execs_;
  std::set<std::string> names_;  // interned kernel names; never freed (records point into it)
  uint32_t next_context_id_ = 1;
  uint32_t next_graph_id_ = 1;
  uint64_t next_node_id_ = 1;
};

CUptiResult Result(CUptiResult result) {
  if (result != CUPTI_SUCCESS) tls_last_error = result;
  return result;
}

uint32_t CurrentThreadId(uint32_t type) {
  if (type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return static_cast<uint32_t>(syscall(SYS_gettid));
  }
  return static_cast<uint32_t>(pthread_self());  // the default: pthread_self(), truncated
}

void FireApi(const OpenCall& call, const CallSide& side, CUpti_ApiCallbackSite site,
             CUctx_st* context) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = FunctionName(side.domain, side.cbid);
  data.functionParams = kZeroParams;
  data.functionReturnValue = site == CUPTI_API_EXIT ? const_cast<int*>(&call.return_value)
                                                    : const_cast<int*>(&kEnterReturnPoison);
  data.symbolName = IsLaunchCbid(side.domain, side.cbid) ? call.symbol.c_str() : kInvalidSymbol;
  data.context = context;
  data.contextUid = context != nullptr ? context->id : 0;
  data.correlationData = const_cast<uint64_t*>(&side.correlation_data);
  data.correlationId = side.correlation_id;
  Fake::Get().Fire(side.domain, side.cbid, &data);
}

void FireResource(uint32_t cbid, CUctx_st* context, void* descriptor) {
  CUpti_ResourceData data{};
  data.context = context;
  data.resourceHandle.stream = nullptr;
  data.resourceDescriptor = descriptor;
  Fake::Get().Fire(CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
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
  Fake::Get().store().AppendHostRecord(&record, sizeof(record));
}

void AppendApiRecord(const CallSide& side, uint64_t end_ns, int return_value) {
  const uint32_t kind = side.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME
                                                                   : CUPTI_ACTIVITY_KIND_DRIVER;
  if (!Fake::Get().store().IsEnabled(kind)) return;
  CUpti_ActivityAPI record{};
  record.kind = static_cast<CUpti_ActivityKind>(kind);
  record.cbid = side.cbid;
  record.start = side.start_ns;
  record.end = end_ns;
  record.processId = static_cast<uint32_t>(getpid());
  record.threadId = CurrentThreadId(Fake::Get().thread_id_type());
  record.correlationId = side.correlation_id;
  record.returnValue = static_cast<uint32_t>(return_value);
  Fake::Get().store().AppendHostRecord(&record, sizeof(record));
}

CUctx_st* InnermostContext() {
  return tls_calls.empty() ? Fake::Get().AnyContext()
                           : Fake::Get().ExistingContext(tls_calls.back()->device);
}

template <typename Record>
void FillGraph(Record& record, const SimgpuActivity& a) {
  record.graphId = a.graph_id;
  record.graphNodeId = a.graph_node_id;
}

}  // namespace
}  // namespace gpuattr::simgpu

using gpuattr::simgpu::Fake;
using gpuattr::simgpu::Result;

// ================================ CUPTI entry points ==========================================

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *version = gpuattr::simgpu::kVersion;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  const char* name =
      gpuattr::simgpu::FindName(gpuattr::simgpu::kResultNames, static_cast<uint32_t>(result));
  if (name == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *str = name;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char** str) {
  return cuptiGetResultString(result, str);
}

CUptiResult CUPTIAPI cuptiGetLastError(void) {
  const CUptiResult last = gpuattr::simgpu::tls_last_error;
  gpuattr::simgpu::tls_last_error = CUPTI_SUCCESS;
  return last;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char** name) {
  if (name == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  const char* found = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    found = gpuattr::simgpu::FindName(gpuattr::simgpu::kRuntimeNames, cbid);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    found = gpuattr::simgpu::FindName(gpuattr::simgpu::kDriverNames, cbid);
  }
  if (found == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *name = found;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSupportedDomains(size_t* domainCount, CUpti_DomainTable* domainTable) {
  static CUpti_CallbackDomain kDomains[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_CB_DOMAIN_RESOURCE,   CUPTI_CB_DOMAIN_SYNCHRONIZE,
                                            CUPTI_CB_DOMAIN_NVTX,       CUPTI_CB_DOMAIN_STATE};
  if (domainCount == nullptr || domainTable == nullptr) {
    return Result(CUPTI_ERROR_INVALID_PARAMETER);
  }
  *domainCount = sizeof(kDomains) / sizeof(kDomains[0]);
  *domainTable = kDomains;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  return Result(Fake::Get().Subscribe(subscriber, callback, userdata, nullptr));
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                       CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* pParams) {
  return Result(Fake::Get().Subscribe(subscriber, callback, userdata, pParams));
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  return Result(Fake::Get().Unsubscribe(subscriber));
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return Result(Fake::Get().EnableCallback(enable, subscriber, domain, cbid));
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  return Result(Fake::Get().EnableDomain(enable, subscriber, domain));
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  return Result(Fake::Get().EnableAllDomains(enable, subscriber));
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t* enable, CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return Result(Fake::Get().GetCallbackState(enable, subscriber, domain, cbid));
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  return Result(Fake::Get().SetThreadIdType(type));
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (type == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *type = static_cast<CUpti_ActivityThreadIdType>(Fake::Get().thread_id_type());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (funcTimestamp == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  gpuattr::simgpu::g_timestamp_callback.store(funcTimestamp);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *timestamp = gpuattr::simgpu::Now();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* valueSize,
                                               void* value) {
  return Result(Fake::Get().SetAttribute(attr, valueSize, value));
}

CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t* valueSize,
                                               void* value) {
  return Result(Fake::Get().GetAttribute(attr, valueSize, value));
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  if (funcBufferRequested == nullptr || funcBufferCompleted == nullptr) {
    return Result(CUPTI_ERROR_INVALID_PARAMETER);
  }
  Fake::Get().store().RegisterCallbacks(funcBufferRequested, funcBufferCompleted);
  return CUPTI_SUCCESS;
}

namespace {
// Kinds whose enabling the 13.0 library refuses as legacy profiler features (cupti-notes §4.10).
bool LegacyProfilerKind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR:
    case CUPTI_ACTIVITY_KIND_GLOBAL_ACCESS:
    case CUPTI_ACTIVITY_KIND_BRANCH:
    case CUPTI_ACTIVITY_KIND_INSTRUCTION_EXECUTION:
    case CUPTI_ACTIVITY_KIND_SHARED_ACCESS:
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING:
    case CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO:
    case CUPTI_ACTIVITY_KIND_INSTRUCTION_CORRELATION:
      return true;
    default:
      return false;
  }
}
}  // namespace

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (LegacyProfilerKind(kind)) return Result(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
  if (gpuattr::simgpu::RecordSize(kind) == 0) return Result(CUPTI_ERROR_INVALID_KIND);
  Fake::Get().store().SetEnabled(kind, true);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  if (gpuattr::simgpu::RecordSize(kind) == 0) return Result(CUPTI_ERROR_INVALID_KIND);
  Fake::Get().store().SetEnabled(kind, false);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  Fake::Get().store().FlushAll((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time) {
  if (Fake::Get().no_driver()) return Result(CUPTI_ERROR_UNKNOWN);
  Fake::Get().store().SetFlushPeriodMs(time);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity** record) {
  return Result(gpuattr::simgpu::NextRecord(buffer, validBufferSizeBytes, record));
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *dropped = Fake::Get().store().TakeDropped();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* nodeId) {
  if (node == nullptr || nodeId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *nodeId = node->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* pId) {
  if (graph == nullptr || pId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *pId = graph->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graphExec, uint32_t* pId) {
  if (graphExec == nullptr || pId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  *pId = graphExec->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t* contextId) {
  if (contextId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  if (context == nullptr) context = Fake::Get().AnyContext();
  if (context == nullptr) return Result(CUPTI_ERROR_INVALID_CONTEXT);
  *contextId = context->id;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* deviceId) {
  if (deviceId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  if (context == nullptr) context = Fake::Get().AnyContext();
  if (context == nullptr) return Result(CUPTI_ERROR_INVALID_CONTEXT);
  *deviceId = context->device;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream stream, uint8_t, uint32_t* streamId) {
  if (streamId == nullptr) return Result(CUPTI_ERROR_INVALID_PARAMETER);
  // The simulated driver hands out no stream handles (functionParams are zero): NULL is the
  // default stream, id 0.
  if (stream != nullptr) return Result(CUPTI_ERROR_INVALID_STREAM);
  *streamId = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  Fake::Get().Finalize();
  return CUPTI_SUCCESS;
}

// ================================ simgpu control API ==========================================

int simgpu_control_version(void) { return SIMGPU_CONTROL_VERSION; }

uint64_t simgpu_now(void) { return gpuattr::simgpu::Now(); }

void simgpu_set_device_clock(uint64_t (*now)(void)) { gpuattr::simgpu::SetDeviceClock(now); }

uint32_t simgpu_api_enter(int domain, uint32_t cbid, const char* symbol, uint32_t device,
                          uint32_t stream) {
  using namespace gpuattr::simgpu;
  Fake& fake = Fake::Get();
  auto call = std::make_unique<OpenCall>();
  call->outer = {domain, cbid, fake.NextCorrelationId(), 0, Now()};
  call->symbol = symbol != nullptr ? symbol : "";
  call->device = device;
  call->stream = stream;
  const uint32_t nested_cbid = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? NestedDriverCbid(cbid) : 0;
  if (nested_cbid != 0 && fake.nested() != NestedDriver::kOff) {
    const uint32_t id = fake.nested() == NestedDriver::kSameId ? call->outer.correlation_id
                                                               : fake.NextCorrelationId();
    call->nested = {CUPTI_CB_DOMAIN_DRIVER_API, nested_cbid, id, 0, 0};
  }
  OpenCall& open = *call;
  tls_calls.push_back(std::move(call));

  bool created = false;
  CUctx_st* context = fake.ContextFor(device, &created);
  // The first call on a device enters with no context; the context appears inside it.
  FireApi(open, open.outer, CUPTI_API_ENTER, created ? nullptr : context);
  if (created) {
    FireResource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, context, nullptr);
    if (fake.store().IsEnabled(CUPTI_ACTIVITY_KIND_DEVICE)) AppendDeviceRecord(device);
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
  Fake& fake = Fake::Get();
  ActivityStore& store = fake.store();
  CUctx_st* context = fake.ExistingContext(a->device);
  const uint32_t context_id = context != nullptr ? context->id : 0;
  DeviceRecord out;
  out.start_ns = a->start_ns;
  out.end_ns = a->end_ns;
  switch (a->type) {
    case SIMGPU_ACTIVITY_KERNEL: {
      uint32_t kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      if (!store.IsEnabled(kind)) kind = CUPTI_ACTIVITY_KIND_KERNEL;
      if (!store.IsEnabled(kind)) return 0;
      CUpti_ActivityKernel10 r{};
      r.kind = static_cast<CUpti_ActivityKind>(kind);
      r.deviceId = a->device;
      r.contextId = context_id;
      r.streamId = a->stream;
      r.gridX = a->grid[0];
      r.gridY = a->grid[1];
      r.gridZ = a->grid[2];
      r.blockX = a->block[0];
      r.blockY = a->block[1];
      r.blockZ = a->block[2];
      r.staticSharedMemory = a->static_shared_memory;
      r.dynamicSharedMemory = a->dynamic_shared_memory;
      r.registersPerThread = a->registers_per_thread;
      r.correlationId = a->correlation_id;
      r.name = fake.Intern(a->name);
      r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
      FillGraph(r, *a);
      std::memcpy(out.bytes.data(), &r, sizeof(r));
      out.size = sizeof(r);
      out.start_offset = offsetof(CUpti_ActivityKernel10, start);
      out.end_offset = offsetof(CUpti_ActivityKernel10, end);
      out.completed_offset = offsetof(CUpti_ActivityKernel10, completed);
      break;
    }
    case SIMGPU_ACTIVITY_MEMCPY: {
      if (a->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP &&
          store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) {
        CUpti_ActivityMemcpyPtoP4 r{};
        r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
        r.copyKind = a->copy_kind;
        r.srcKind = a->src_kind;
        r.dstKind = a->dst_kind;
        r.bytes = a->bytes;
        r.deviceId = a->device;
        r.contextId = context_id;
        r.streamId = a->stream;
        r.srcDeviceId = a->device;
        r.srcContextId = context_id;
        r.dstDeviceId = a->peer_device;
        CUctx_st* peer = fake.ExistingContext(a->peer_device);
        r.dstContextId = peer != nullptr ? peer->id : 0;
        r.correlationId = a->correlation_id;
        FillGraph(r, *a);
        std::memcpy(out.bytes.data(), &r, sizeof(r));
        out.size = sizeof(r);
        out.start_offset = offsetof(CUpti_ActivityMemcpyPtoP4, start);
        out.end_offset = offsetof(CUpti_ActivityMemcpyPtoP4, end);
        break;
      }
      if (!store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return 0;
      CUpti_ActivityMemcpy6 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      r.copyKind = a->copy_kind;
      r.srcKind = a->src_kind;
      r.dstKind = a->dst_kind;
      r.bytes = a->bytes;
      r.deviceId = a->device;
      r.contextId = context_id;
      r.streamId = a->stream;
      r.correlationId = a->correlation_id;
      r.runtimeCorrelationId = a->correlation_id;
      r.copyCount = 1;
      FillGraph(r, *a);
      std::memcpy(out.bytes.data(), &r, sizeof(r));
      out.size = sizeof(r);
      out.start_offset = offsetof(CUpti_ActivityMemcpy6, start);
      out.end_offset = offsetof(CUpti_ActivityMemcpy6, end);
      break;
    }
    case SIMGPU_ACTIVITY_MEMSET: {
      if (!store.IsEnabled(CUPTI_ACTIVITY_KIND_MEMSET)) return 0;
      CUpti_ActivityMemset4 r{};
      r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      r.value = a->memset_value;
      r.bytes = a->bytes;
      r.deviceId = a->device;
      r.contextId = context_id;
      r.streamId = a->stream;
      r.correlationId = a->correlation_id;
      r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      FillGraph(r, *a);
      std::memcpy(out.bytes.data(), &r, sizeof(r));
      out.size = sizeof(r);
      out.start_offset = offsetof(CUpti_ActivityMemset4, start);
      out.end_offset = offsetof(CUpti_ActivityMemset4, end);
      break;
    }
    default:
      return -1;
  }
  store.SubmitDeviceRecord(out);
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
