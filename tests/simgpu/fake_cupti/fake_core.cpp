#include "fake_core.h"

#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "cupti/cupti_v2_abi.h"

namespace gpuattr::simgpu {
namespace {

std::atomic<CUpti_TimestampCallbackFunc> g_timestamp_callback{nullptr};
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

uint32_t EnvSeed() {
  const char* seed = std::getenv("SIMGPU_CUPTI_SEED");
  return seed != nullptr ? static_cast<uint32_t>(std::strtoul(seed, nullptr, 10)) : 1u;
}

bool EnvFlag(const char* name, bool fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::strcmp(value, "0") != 0;
}

// What a subscribe asked for: allowMultipleSubscribers exists from the 40-byte struct on.
bool AsksForSeveral(const CUpti_SubscriberParams* params) {
  if (params == nullptr || params->structSize < cupti_v2::kSubscriberParamsSize) return false;
  return reinterpret_cast<const cupti_v2::SubscriberParams*>(params)->allow_multiple_subscribers ==
         1;
}

thread_local int tls_callback_depth = 0;  // API and resource callbacks the thread is inside of

}  // namespace

uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Now() {
  CUpti_TimestampCallbackFunc callback = g_timestamp_callback.load();
  return callback != nullptr ? callback() : RealtimeNs();
}

void SetTimestampCallback(CUpti_TimestampCallbackFunc callback) {
  g_timestamp_callback.store(callback);
}

CUptiResult Result(CUptiResult result) {
  if (result != CUPTI_SUCCESS) tls_last_error = result;
  return result;
}

CUptiResult TakeLastError() {
  const CUptiResult last = tls_last_error;
  tls_last_error = CUPTI_SUCCESS;
  return last;
}

Fake::Fake()
    : store_(&Now, EnvSeed(), EnvFlag("SIMGPU_CUPTI_SHUFFLE", true)),
      attributes_(DefaultAttributes()) {
  const char* mode = std::getenv("SIMGPU_CUPTI_MODE");
  if (mode != nullptr && std::strcmp(mode, "nodriver") == 0) mode_ = Mode::kNoDriver;
  if (mode != nullptr && std::strcmp(mode, "multi_subscriber") == 0) {
    mode_ = Mode::kMultiSubscriber;
  }
  if (mode != nullptr && std::strncmp(mode, "conflict:", 9) == 0) {
    mode_ = Mode::kConflict;
    conflict_name_ = mode + 9;
  }
  const char* nested = std::getenv("SIMGPU_CUPTI_NESTED_DRIVER");
  if (nested != nullptr && std::strcmp(nested, "new-id") == 0) nested_ = NestedDriver::kNewId;
  if (nested != nullptr && std::strcmp(nested, "off") == 0) nested_ = NestedDriver::kOff;
  pthread_atfork([] { Get().ForEachStore([](ActivityStore& store) { store.PrepareFork(); }); },
                 [] { Get().ForEachStore([](ActivityStore& store) { store.ParentAfterFork(); }); },
                 [] {
                   Get().ForEachStore([](ActivityStore& store) { store.ChildAfterFork(); });
                   // Only the forking thread exists: its callbacks are the only ones running.
                   Get().callbacks_running_.store(tls_callback_depth);
                   Get().finalizers_waiting_.store(0);
                 });
}

Fake& Fake::Get() {
  static Fake* fake = new Fake();
  return *fake;
}

// --- subscription ---------------------------------------------------------------------------

Subscriber* Fake::LiveLocked(CUpti_SubscriberHandle handle) {
  // Only handles this library made are looked at: a client may pass any pointer.
  for (const auto& subscriber : subscribers_) {
    if (subscriber.get() == handle) return subscriber->live ? subscriber.get() : nullptr;
  }
  return nullptr;
}

size_t Fake::LiveCountLocked() const {
  size_t live = 0;
  for (const auto& subscriber : subscribers_) live += subscriber->live ? 1 : 0;
  return live;
}

CUptiResult Fake::Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback,
                            void* userdata, const CUpti_SubscriberParams* params) {
  if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
  if (handle == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(cb_mu_);
  const size_t live = LiveCountLocked();
  const Subscriber* first = nullptr;
  for (const auto& subscriber : subscribers_) {
    if (subscriber->live && first == nullptr) first = subscriber.get();
  }
  // The name CUPTI gives the first subscriber: to a refused one, and to a later one that was let
  // in (several allowed).
  std::string first_name;
  if (first != nullptr) first_name = first->name.empty() ? "CUPTI" : first->name;
  std::string holder;
  if (mode_ == Mode::kConflict) holder = conflict_name_;
  const bool joins = live > 0 && multiple_allowed_ && live < kMaxSubscribers;
  if (live > 0 && !joins) holder = first_name;
  if ((!holder.empty() || joins) && params != nullptr && params->oldSubscriberName != nullptr &&
      params->oldSubscriberSize > 0) {
    const std::string& name = holder.empty() ? first_name : holder;
    std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", name.c_str());
  }
  if (!holder.empty()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  // Kept for the life of the process: a client may still pass a handle it unsubscribed, and
  // a recycled address must not make that handle valid again.
  auto* subscriber = subscribers_.emplace_back(std::make_unique<Subscriber>()).get();
  subscriber->callback = callback;
  subscriber->userdata = userdata;
  subscriber->live = true;
  if (params != nullptr && params->subscriberName != nullptr) {
    subscriber->name =
        std::string(params->subscriberName).substr(0, CUPTI_SUBSCRIBER_NAME_MAX_LEN - 1);
  }
  if (live == 0) multiple_allowed_ = mode_ == Mode::kMultiSubscriber && AsksForSeveral(params);
  std::array<bool, kMaxSubscribers> taken{};
  for (const auto& other : subscribers_) {
    if (other->live && other.get() != subscriber) taken[other->slot] = true;
  }
  while (taken[subscriber->slot]) ++subscriber->slot;
  if (mode_ == Mode::kMultiSubscriber) {
    subscriber->store = std::make_unique<ActivityStore>(&RealtimeNs, EnvSeed() + subscriber->slot,
                                                        EnvFlag("SIMGPU_CUPTI_SHUFFLE", true));
    subscriber_stores_[subscriber->slot].store(subscriber->store.get());
  }
  PublishLocked();
  *handle = subscriber;
  return CUPTI_SUCCESS;
}

CUptiResult Fake::Unsubscribe(CUpti_SubscriberHandle handle) {
  ActivityStore* store = nullptr;
  {
    std::lock_guard<std::mutex> lock(cb_mu_);
    Subscriber* subscriber = LiveLocked(handle);
    if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    subscriber->live = false;
    subscriber->domain_all.fill(false);
    subscriber->overrides.clear();
    subscriber_stores_[subscriber->slot].store(nullptr);
    store = subscriber->store.get();
    PublishLocked();
  }
  // Its activity ends with it: what it had is handed back on this thread.
  if (store != nullptr) store->Reset();
  return CUPTI_SUCCESS;
}

CUptiResult Fake::EnableCallback(uint32_t enable, CUpti_SubscriberHandle handle, int domain,
                                 uint32_t cbid) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  Subscriber* subscriber = LiveLocked(handle);
  if (subscriber == nullptr || !ValidDomain(domain)) return CUPTI_ERROR_INVALID_PARAMETER;
  subscriber->overrides[{domain, cbid}] = enable != 0;
  PublishLocked();
  return CUPTI_SUCCESS;
}

CUptiResult Fake::EnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, int domain) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  Subscriber* subscriber = LiveLocked(handle);
  if (subscriber == nullptr || !ValidDomain(domain)) return CUPTI_ERROR_INVALID_PARAMETER;
  SetDomainLocked(*subscriber, domain, enable != 0);
  PublishLocked();
  return CUPTI_SUCCESS;
}

CUptiResult Fake::EnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  Subscriber* subscriber = LiveLocked(handle);
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  for (int domain = 1; domain < CUPTI_CB_DOMAIN_SIZE; ++domain) {
    SetDomainLocked(*subscriber, domain, enable != 0);
  }
  PublishLocked();
  return CUPTI_SUCCESS;
}

CUptiResult Fake::GetCallbackState(uint32_t* enable, CUpti_SubscriberHandle handle, int domain,
                                   uint32_t cbid) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  Subscriber* subscriber = LiveLocked(handle);
  if (enable == nullptr || subscriber == nullptr || !ValidDomain(domain)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  auto it = subscriber->overrides.find({domain, cbid});
  *enable =
      (it != subscriber->overrides.end() ? it->second : subscriber->domain_all[domain]) ? 1 : 0;
  return CUPTI_SUCCESS;
}

void Fake::Fire(int domain, uint32_t cbid, void* data, uint64_t* correlation_slots) {
  callbacks_running_.fetch_add(1);
  const Dispatch* dispatch = dispatch_.load();
  if (dispatch != nullptr) {
    for (const DispatchEntry& entry : dispatch->entries) {
      if (!entry.Enabled(domain, cbid)) continue;
      if (correlation_slots != nullptr) {
        static_cast<CUpti_CallbackData*>(data)->correlationData = &correlation_slots[entry.slot];
      }
      ++tls_callback_depth;
      entry.callback(entry.userdata, static_cast<CUpti_CallbackDomain>(domain), cbid, data);
      --tls_callback_depth;
    }
  }
  callbacks_running_.fetch_sub(1);
  // Both sides use sequentially consistent operations: either the finalizer's predicate sees
  // the decrement, or this load sees the finalizer waiting and wakes it under its lock.
  if (finalizers_waiting_.load() > 0) {
    std::lock_guard<std::mutex> lock(cb_mu_);
    callbacks_idle_.notify_all();
  }
}

bool Fake::DispatchEntry::Enabled(int domain, uint32_t cbid) const {
  if (!ValidDomain(domain)) return false;
  const std::vector<int8_t>& by_cbid = overrides[domain];
  if (cbid < by_cbid.size() && by_cbid[cbid] != 0) return by_cbid[cbid] > 0;
  return domain_all[domain];
}

void Fake::SetDomainLocked(Subscriber& subscriber, int domain, bool enable) {
  subscriber.domain_all[domain] = enable;
  for (auto it = subscriber.overrides.begin(); it != subscriber.overrides.end();) {
    it = it->first.first == domain ? subscriber.overrides.erase(it) : std::next(it);
  }
}

// Makes the live subscribers and their enables what Fire sees from now on.
void Fake::PublishLocked() {
  auto next = std::make_unique<Dispatch>();
  for (const auto& subscriber : subscribers_) {
    if (!subscriber->live || subscriber->callback == nullptr) continue;
    DispatchEntry& entry = next->entries.emplace_back();
    entry.callback = subscriber->callback;
    entry.userdata = subscriber->userdata;
    entry.slot = subscriber->slot;
    entry.domain_all = subscriber->domain_all;
    for (const auto& [key, enabled] : subscriber->overrides) {
      std::vector<int8_t>& by_cbid = entry.overrides[key.first];
      if (by_cbid.size() <= key.second) by_cbid.resize(key.second + 1, 0);
      by_cbid[key.second] = enabled ? 1 : -1;
    }
  }
  if (next->entries.empty()) next.reset();
  dispatch_.store(next.get());
  if (current_dispatch_ != nullptr) retired_dispatches_.push_back(std::move(current_dispatch_));
  current_dispatch_ = std::move(next);
  // A callback that starts after this load sees the new snapshot, so none can hold an old one.
  if (callbacks_running_.load() == 0) retired_dispatches_.clear();
}

// --- the activity API -------------------------------------------------------------------------

CUptiResult Fake::ClaimFamily(ActivityFamily family) {
  if (mode_ != Mode::kMultiSubscriber) return CUPTI_SUCCESS;
  ActivityFamily expected = ActivityFamily::kNone;
  if (family_.compare_exchange_strong(expected, family) || expected == family) {
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

ActivityStore* Fake::StoreOf(CUpti_SubscriberHandle handle) {
  std::lock_guard<std::mutex> lock(cb_mu_);
  Subscriber* subscriber = LiveLocked(handle);
  return subscriber != nullptr ? subscriber->store.get() : nullptr;
}

uint8_t Fake::MultipleSubscriberState() {
  std::lock_guard<std::mutex> lock(cb_mu_);
  if (LiveCountLocked() == 0) return 2;
  return multiple_allowed_ ? 1 : 0;
}

// --- clock, thread ids, attributes ------------------------------------------------------------

CUptiResult Fake::SetThreadIdType(uint32_t type) {
  if (mode_ == Mode::kNoDriver) return CUPTI_ERROR_UNKNOWN;
  if (type >= CUPTI_ACTIVITY_THREAD_ID_TYPE_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  store_.SetThreadIdType(type);
  return CUPTI_SUCCESS;
}

CUptiResult Fake::SetAttribute(uint32_t attr, size_t* size, const void* value) {
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

CUptiResult Fake::GetAttribute(uint32_t attr, size_t* size, void* value) {
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

bool Fake::Finalize() {
  std::vector<ActivityStore*> subscriber_stores;
  {
    std::unique_lock<std::mutex> lock(cb_mu_);
    if (LiveCountLocked() > 1) return false;
    for (auto& subscriber : subscribers_) {
      if (subscriber->store != nullptr) subscriber_stores.push_back(subscriber->store.get());
      subscriber->live = false;
      subscriber->domain_all.fill(false);
      subscriber->overrides.clear();
    }
    for (auto& slot : subscriber_stores_) slot.store(nullptr);
    multiple_allowed_ = false;
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
  for (ActivityStore* store : subscriber_stores) store->Reset();
  family_.store(ActivityFamily::kNone);
  SetTimestampCallback(nullptr);
  store_.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  std::lock_guard<std::mutex> lock(objects_mu_);
  attributes_ = DefaultAttributes();
  return true;
}

// --- driver objects ---------------------------------------------------------------------------

CUctx_st* Fake::ContextFor(uint32_t device, bool* created) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  CUctx_st*& context = contexts_[device];
  *created = context == nullptr;
  if (context == nullptr) context = new CUctx_st{next_context_id_++, device};
  return context;
}

CUctx_st* Fake::ExistingContext(uint32_t device) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto it = contexts_.find(device);
  return it == contexts_.end() ? nullptr : it->second;
}

CUctx_st* Fake::AnyContext() {
  std::lock_guard<std::mutex> lock(objects_mu_);
  return contexts_.empty() ? nullptr : contexts_.begin()->second;
}

const char* Fake::Intern(const char* name) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  return names_.insert(name != nullptr ? name : "").first->c_str();
}

CUgraph_st* Fake::NewGraph() {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto* graph = new CUgraph_st{next_graph_id_++, {}};
  graphs_[graph->id] = graph;
  return graph;
}

CUgraph_st* Fake::FindGraph(uint32_t id) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto it = graphs_.find(id);
  return it == graphs_.end() ? nullptr : it->second;
}

CUgraphNode_st* Fake::NewNode(CUgraph_st* graph, int type) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto* node = new CUgraphNode_st{next_node_id_++, graph, type};
  graph->nodes.push_back(node);
  return node;
}

CUgraphExec_st* Fake::NewExec() {
  std::lock_guard<std::mutex> lock(objects_mu_);
  // Graph and exec ids never overlap. Execs live as long as the process (the simulated driver
  // never destroys one), owned here.
  return execs_.emplace_back(std::make_unique<CUgraphExec_st>(CUgraphExec_st{next_graph_id_++}))
      .get();
}

}  // namespace gpuattr::simgpu
