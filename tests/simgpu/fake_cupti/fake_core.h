// The fake libcupti.so.13's state: subscribers and their callbacks, the activity stores, the
// driver objects (contexts, graphs) the simulated driver creates, and the CUPTI clock. The CUPTI
// entry points (fake_cupti.cpp, fake_cupti_v2.cpp) and the simgpu_ control API
// (simgpu_control.cpp) are thin functions over it (cupti-notes §3, §4, §8).
//
// Modes (SIMGPU_CUPTI_MODE). Unset: CUDA 13.0's rules — one subscriber, and an activity API that
// is process-global (one ActivityStore). The V2 names exist but answer NOT_SUPPORTED, as on a
// pre-r610 driver, and allowMultipleSubscribers is ignored as the 13.0 library ignores bytes past
// its 32-byte struct, so a client must probe rather than trust the names. `multi_subscriber`:
// CUDA 13.3+ on an r610+ driver (cupti-notes §6, CUPTI 13.4 §2.4): the first subscriber's
// allowMultipleSubscribers decides whether later subscribes succeed; every subscriber has its own
// callbacks, enables and correlationData slot, and its own ActivityStore (kinds, buffer
// callbacks, clock, drops) reached through the V2 functions; cuptiActivityFlushAll flushes every
// store with the same flag; once V2 activity functions were used, the V1 ones answer 39 and the
// other way round; cuptiFinalize returns at once while more than one subscriber is subscribed.
// `nodriver`: every call that needs a driver fails with UNKNOWN. `conflict:NAME`: NAME holds the
// slot.
//
// Threads: every entry point may be called from any thread. API and resource callbacks run on the
// thread that called simgpu_api_enter/exit or a graph control function (the "app thread"); buffer
// callbacks as described in activity_store.h.
//
// Locks (outer to inner): cb_mu_ (subscribers, enable state) and objects_mu_ (contexts, graphs,
// interned names, attributes) are independent leaves, never held while a client callback runs;
// the stores' locks are separate and documented in activity_store.h. A client may call any CUPTI
// function from inside any callback, cuptiFinalize included.
//
// Dispatch takes no lock, as a real CUPTI's must not (the shim's per-launch cost is measured on
// this path, docs/benchmarks.md): every change to the subscribers or their enables publishes a new
// immutable Dispatch snapshot, and a callback counts itself in callbacks_running_ before it reads
// the snapshot. A replaced snapshot is freed once no callback is running, so no reader holds it.
//
// cuptiFinalize (cupti-notes §5): it first stops dispatch (the subscribers and their enables are
// gone, so no callback starts afterwards) and waits until the API/resource callbacks already
// running on other threads have returned, not counting those of threads that are themselves
// inside cuptiFinalize (its own caller's callback, when called from one, and a racing finalizer).
// A client whose callback on thread B waits for thread A while A finalizes therefore deadlocks
// here; what the real library does then is unknown (the docs say only that it "blocks all
// application threads until teardown ends"). API calls that entered before and exit after it get
// no EXIT callback and no API record. Then the stores are reset (forced flush on the calling
// thread, worker stopped, kinds disabled, buffer callbacks forgotten), and the timestamp callback,
// the thread-id type and the attributes go back to their defaults. Driver state (contexts, graphs,
// the correlation counter) survives. Calls that race with it on other threads (an enable, a
// subscribe) see either state; the real library can crash there (Kineto commit c7c76c36).
//
// API records carry the process-wide CUPTI clock in every store (no test client enables the API
// kinds on a subscriber with a clock of its own).
#ifndef GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_CORE_H_
#define GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_CORE_H_

#include <cupti.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "activity_store.h"

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

// A subscriber handle. Handles are never freed, so a stale one stays safe to compare; neither is
// its store (device work may still be submitted to it on another thread when it unsubscribes).
struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::string name;
  size_t slot = 0;  // its correlationData slot
  bool live = false;
  // Under Fake::cb_mu_.
  std::array<bool, CUPTI_CB_DOMAIN_SIZE> domain_all{};
  std::map<std::pair<int, uint32_t>, bool> overrides;
  std::unique_ptr<gpuattr::simgpu::ActivityStore> store;  // its V2 activity state
};

namespace gpuattr::simgpu {

inline constexpr size_t kMaxSubscribers = 8;  // correlationData slots per API call
using Subscriber = CUpti_Subscriber_st;

enum class Mode { kNormal, kMultiSubscriber, kNoDriver, kConflict };
enum class NestedDriver { kSameId, kNewId, kOff };
enum class ActivityFamily : uint8_t { kNone, kV1, kV2 };

uint64_t RealtimeNs();
// The process-wide CUPTI clock: the registered timestamp callback, CLOCK_REALTIME otherwise.
uint64_t Now();
void SetTimestampCallback(CUpti_TimestampCallbackFunc callback);

// Records `result` as the calling thread's last error when it is one, and returns it.
CUptiResult Result(CUptiResult result);
CUptiResult TakeLastError();

class Fake {
 public:
  // Never destroyed: clients call in from atexit handlers and from threads that outlive statics.
  static Fake& Get();

  Mode mode() const { return mode_; }
  bool no_driver() const { return mode_ == Mode::kNoDriver; }
  bool multi_mode() const { return mode_ == Mode::kMultiSubscriber; }
  ActivityStore& store() { return store_; }

  // --- subscription and callbacks ---------------------------------------------------------------
  CUptiResult Subscribe(CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* userdata,
                        const CUpti_SubscriberParams* params);
  CUptiResult Unsubscribe(CUpti_SubscriberHandle handle);
  CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle handle, int domain,
                             uint32_t cbid);
  CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, int domain);
  CUptiResult EnableAllDomains(uint32_t enable, CUpti_SubscriberHandle handle);
  CUptiResult GetCallbackState(uint32_t* enable, CUpti_SubscriberHandle handle, int domain,
                               uint32_t cbid);

  // Invokes every subscriber's callback that has (domain, cbid) enabled, counted in
  // callbacks_running_ so that Finalize can wait for it. For API callbacks `correlation_slots`
  // holds one correlationData slot per subscriber slot, put into the data per subscriber.
  // Lock-free (see the header comment). Runs on: the app thread.
  void Fire(int domain, uint32_t cbid, void* data, uint64_t* correlation_slots);

  // --- the activity API -------------------------------------------------------------------------
  // Claims the V1 or V2 activity functions for the process (multi-subscriber mode); 39 when the
  // other family has them.
  CUptiResult ClaimFamily(ActivityFamily family);
  // The store of a live subscriber in multi-subscriber mode, null otherwise.
  ActivityStore* StoreOf(CUpti_SubscriberHandle handle);
  // Calls `visit` with the process-wide store and every live subscriber's (the multi-subscriber
  // mode has them; the others look at none: this runs at every API exit and device record).
  template <typename Visit>
  void ForEachStore(Visit&& visit) {
    visit(store_);
    if (mode_ != Mode::kMultiSubscriber) return;
    for (auto& slot : subscriber_stores_) {
      if (ActivityStore* store = slot.load()) visit(*store);
    }
  }
  // The value of CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE: 0 one, 1 several, 2 not decided.
  uint8_t MultipleSubscriberState();

  // --- clock, thread ids, attributes ------------------------------------------------------------
  CUptiResult SetThreadIdType(uint32_t type);
  CUptiResult SetAttribute(uint32_t attr, size_t* size, const void* value);
  CUptiResult GetAttribute(uint32_t attr, size_t* size, void* value);

  // cuptiFinalize (see the header comment); false when it returned at once (several subscribers).
  // Runs on: any thread, also inside a callback.
  bool Finalize();

  // --- driver objects ---------------------------------------------------------------------------
  // The context of `device`, creating it (and reporting that) on first use.
  CUctx_st* ContextFor(uint32_t device, bool* created);
  CUctx_st* ExistingContext(uint32_t device);
  CUctx_st* AnyContext();
  const char* Intern(const char* name);
  CUgraph_st* NewGraph();
  CUgraph_st* FindGraph(uint32_t id);
  CUgraphNode_st* NewNode(CUgraph_st* graph, int type);
  CUgraphExec_st* NewExec();
  uint32_t NextCorrelationId() { return next_correlation_id_.fetch_add(1); }
  NestedDriver nested() const { return nested_; }

 private:
  Fake();
  static bool ValidDomain(int domain) { return domain > 0 && domain < CUPTI_CB_DOMAIN_SIZE; }
  Subscriber* LiveLocked(CUpti_SubscriberHandle handle);
  size_t LiveCountLocked() const;
  static void SetDomainLocked(Subscriber& subscriber, int domain, bool enable);
  void PublishLocked();

  ActivityStore store_;
  Mode mode_ = Mode::kNormal;
  std::string conflict_name_;
  NestedDriver nested_ = NestedDriver::kSameId;
  std::atomic<uint32_t> next_correlation_id_{1};
  std::atomic<ActivityFamily> family_{ActivityFamily::kNone};

  // What Fire reads: the subscribers' callbacks and enables, never changed once published.
  struct DispatchEntry {
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    size_t slot = 0;
    std::array<bool, CUPTI_CB_DOMAIN_SIZE> domain_all{};
    std::array<std::vector<int8_t>, CUPTI_CB_DOMAIN_SIZE> overrides;  // by cbid: 1 on, -1 off
    bool Enabled(int domain, uint32_t cbid) const;
  };
  struct Dispatch {
    std::vector<DispatchEntry> entries;
  };

  std::mutex cb_mu_;                        // leaf lock; never held while a client callback runs
  std::condition_variable callbacks_idle_;  // callbacks_running_ fell
  std::atomic<int> callbacks_running_{0};   // Fire calls in progress, all threads
  std::atomic<int> finalizers_waiting_{0};  // Finalize calls waiting for callbacks_running_
  int callbacks_in_finalize_ = 0;           // of those, the ones whose thread is inside Finalize
  bool multiple_allowed_ = false;           // the first live subscriber asked for several
  std::vector<std::unique_ptr<Subscriber>> subscribers_;  // every one ever made
  std::array<std::atomic<ActivityStore*>, kMaxSubscribers> subscriber_stores_{};  // live, by slot
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

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_FAKE_CORE_H_
