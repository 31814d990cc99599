// Attach and detach against the fake CUPTI, the way docs/attach.md and cupti-notes §5 use them:
// cuptiFinalize from inside an API EXIT callback while another thread keeps launching, then a
// re-attach from a third thread; an armed process (an injection that subscribes nothing) that a
// subscriber joins mid-run; and the clock records carry with and without a timestamp callback.
// Each TEST_CASE runs in its own process under ctest, so the fake's global state starts fresh.
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
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
using gpuattr::simgpu::WorkResult;
using gpuattr::simgpu::testing::Fake;
using gpuattr::simgpu::testing::FakeCupti;

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t RealtimeNs() { return ClockNs(CLOCK_REALTIME); }

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void SleepUs(long us) {
  const timespec pause{0, us * 1000};
  nanosleep(&pause, nullptr);
}

// Polls `done` for up to 20 s (a loaded machine is slow, not wrong).
template <typename Done>
bool WaitFor(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    SleepUs(200);
  }
  return true;
}

struct KernelSeen {
  uint64_t start;
  uint64_t end;
};

// What the client saw. Callbacks run on app threads, the fake's worker and flushing threads.
struct Seen {
  std::mutex mu;                                   // leaf
  std::map<uint32_t, KernelSeen> kernels;          // by correlation id
  std::map<uint32_t, KernelSeen> runtime_records;  // by correlation id
  std::set<uint32_t> callback_ids;                 // API callbacks, by correlation id
  long outstanding_buffers = 0;                    // requested, not yet handed back
  size_t max_records_per_buffer = 0;
};

Seen& State() {
  static Seen seen;
  return seen;
}

// The phases of a detach/re-attach run, as the launching thread sees them.
enum Phase : int {
  kAttached = 0,
  kFinalizing = 1,  // the detaching callback is about to unsubscribe and finalize
  kDetached = 2,    // cuptiFinalize has returned
  kReattaching = 3,
  kReattached = 4,  // every subscribe, registration and enable of the re-attach has returned
};
std::atomic<int> g_phase{kAttached};
std::atomic<int> g_calls_while_detached{0};  // any client callback that began in kDetached
// Catch2 assertions are not thread-safe: callbacks on app threads count failures here instead.
std::atomic<int> g_detach_failures{0};
std::atomic<CUpti_SubscriberHandle> g_subscriber{nullptr};
std::atomic<pid_t> g_detach_tid{0};  // the thread whose next API EXIT callback detaches
std::atomic<bool> g_detach_requested{false};
std::atomic<long> g_worker_deliveries{0};

void CountIfDetached() {
  if (g_phase.load() == kDetached) g_calls_while_detached.fetch_add(1);
}

// Runs on: the app thread making the API call. The detach recipe of cupti-notes §5, step 3.
void OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  CountIfDetached();
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  {
    std::lock_guard<std::mutex> lock(State().mu);
    State().callback_ids.insert(d->correlationId);
  }
  if (d->callbackSite == CUPTI_API_EXIT && Tid() == g_detach_tid.load() &&
      g_detach_requested.exchange(false)) {
    g_phase = kFinalizing;
    if (Fake().cuptiUnsubscribe(g_subscriber.load()) != CUPTI_SUCCESS) g_detach_failures += 1;
    if (Fake().cuptiFinalize() != CUPTI_SUCCESS) g_detach_failures += 1;
    g_phase = kDetached;
  }
}

// Runs on: the thread generating records, under the fake's internal lock.
void OnRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CountIfDetached();
  *size = 16 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  std::lock_guard<std::mutex> lock(State().mu);
  *max_records = State().max_records_per_buffer;
  ++State().outstanding_buffers;
}

// Runs on: the fake's worker thread, or a thread calling cuptiActivityFlushAll/cuptiFinalize.
void OnCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CountIfDetached();
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  if (std::strcmp(name, "Cupti_Worker") == 0) g_worker_deliveries.fetch_add(1);
  std::vector<std::pair<uint32_t, KernelSeen>> kernels;
  std::vector<std::pair<uint32_t, KernelSeen>> runtime;
  CUpti_Activity* record = nullptr;
  while (Fake().cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      kernels.push_back({k->correlationId, {k->start, k->end}});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      runtime.push_back({a->correlationId, {a->start, a->end}});
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(State().mu);
  --State().outstanding_buffers;
  for (const auto& [id, k] : kernels) State().kernels[id] = k;
  for (const auto& [id, r] : runtime) State().runtime_records[id] = r;
}

uint64_t MonotonicClock() { return MonotonicNs(); }

// A fresh fake and empty bookkeeping. Under ctest each TEST_CASE runs in its own process; this
// keeps them independent when the binary runs them all in one.
void Fresh() {
  Fake().cuptiFinalize();
  {
    std::lock_guard<std::mutex> lock(State().mu);
    State().kernels.clear();
    State().runtime_records.clear();
    State().callback_ids.clear();
    State().outstanding_buffers = 0;
    State().max_records_per_buffer = 0;
  }
  g_phase = kAttached;
  g_calls_while_detached = 0;
  g_detach_failures = 0;
  g_subscriber = nullptr;
  g_detach_tid = 0;
  g_detach_requested = false;
  g_worker_deliveries = 0;
}

// Subscribes and enables what the shim enables (runtime API callbacks, kernels, runtime records)
// on the calling thread, with the shim's CLOCK_MONOTONIC timestamp callback.
void Attach(bool driver_callbacks) {
  FakeCupti& f = Fake();
  CUpti_SubscriberHandle subscriber = nullptr;
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "attach-test";
  REQUIRE(f.cuptiSubscribe_v2(&subscriber, OnCallback, nullptr, &params) == CUPTI_SUCCESS);
  g_subscriber = subscriber;
  REQUIRE(f.cuptiActivityRegisterTimestampCallback(MonotonicClock) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiActivityRegisterCallbacks(OnRequested, OnCompleted) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  if (driver_callbacks) {
    REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  }
  REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
}

// One launch of the launching thread, with the phase at its ENTER and after its EXIT.
struct Launch {
  uint32_t id;
  int phase_before;
  int phase_after;
  uint64_t start_ns;
  uint64_t end_ns;
};

// A kernel through the control API, as the simulated driver issues one (times CLOCK_MONOTONIC).
Launch LaunchKernel(uint32_t stream, uint64_t earliest_start_ns, uint64_t duration_ns) {
  FakeCupti& f = Fake();
  Launch launch{};
  launch.phase_before = g_phase.load();
  launch.id =
      f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "_Z1kv", 0, stream);
  SimgpuActivity a{};
  a.type = SIMGPU_ACTIVITY_KERNEL;
  a.correlation_id = launch.id;
  a.stream = stream;
  a.start_ns = std::max(MonotonicNs(), earliest_start_ns);
  a.end_ns = a.start_ns + duration_ns;
  a.name = "_Z1kv";
  a.grid[0] = a.grid[1] = a.grid[2] = 1;
  a.block[0] = a.block[1] = a.block[2] = 1;
  f.simgpu_activity_submit(&a);
  f.simgpu_api_exit(0);
  launch.phase_after = g_phase.load();
  launch.start_ns = a.start_ns;
  launch.end_ns = a.end_ns;
  return launch;
}

// A thread launching 1 us kernels on stream 1 in a loop until stopped.
class Launcher {
 public:
  Launcher() : thread_([this] { Run(); }) {}
  ~Launcher() { Stop(); }

  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_.size();
  }
  size_t CountIn(int phase) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const Launch& l : launches_) n += l.phase_before == phase ? 1 : 0;
    return n;
  }
  std::vector<Launch> Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }

 private:
  void Run() {
    uint64_t stream_end = 0;
    while (!stop_) {
      const Launch launch = LaunchKernel(1, stream_end, 1000);
      stream_end = launch.end_ns;
      {
        std::lock_guard<std::mutex> lock(mu_);
        launches_.push_back(launch);
      }
      SleepUs(20);
    }
  }

  std::atomic<bool> stop_{false};
  std::mutex mu_;  // leaf
  std::vector<Launch> launches_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("cuptiFinalize inside an EXIT callback while another thread launches, then re-attach",
          "[simgpu][attach]") {
  Fresh();
  FakeCupti& f = Fake();
  {
    std::lock_guard<std::mutex> lock(State().mu);
    State().max_records_per_buffer = 4;  // full buffers: the worker delivers without a flush
  }
  Attach(/*driver_callbacks=*/true);
  REQUIRE(f.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS);
  size_t buffer_size = 8u << 20;
  size_t value_size = sizeof(buffer_size);
  REQUIRE(f.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size,
                                      &buffer_size) == CUPTI_SUCCESS);

  Launcher launcher;
  REQUIRE(WaitFor([&] { return launcher.Count() >= 200; }));
  // A kernel that cannot finish before the detach: the forced flush hands it back unfinished.
  const Launch unfinished = LaunchKernel(2, 0, 60ull * 1000000000);
  REQUIRE(g_worker_deliveries.load() > 0);

  // Detach: the next API EXIT callback on thread D unsubscribes and finalizes (cupti-notes §5).
  std::thread detacher([&] {
    g_detach_tid = Tid();
    g_detach_requested = true;
    while (g_phase.load() < kDetached) {
      f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, nullptr, 0, 0);
      f.simgpu_api_exit(0);
    }
  });
  detacher.join();
  REQUIRE(g_phase.load() == kDetached);
  {
    std::lock_guard<std::mutex> lock(State().mu);
    CHECK(State().outstanding_buffers == 0);  // every buffer was handed back before it returned
    REQUIRE(State().kernels.count(unfinished.id) == 1);
    CHECK(State().kernels[unfinished.id].start == 0);
    CHECK(State().kernels[unfinished.id].end == 0);
  }
  // Everything CUPTI holds went back to a fresh process's state.
  CHECK(f.cuptiEnableCallback(1, g_subscriber.load(), CUPTI_CB_DOMAIN_RUNTIME_API, 505) ==
        CUPTI_ERROR_INVALID_PARAMETER);
  value_size = sizeof(buffer_size);
  REQUIRE(f.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size,
                                      &buffer_size) == CUPTI_SUCCESS);
  CHECK(buffer_size == 3200000);
  CUpti_ActivityThreadIdType id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
  REQUIRE(f.cuptiGetThreadIdType(&id_type) == CUPTI_SUCCESS);
  CHECK(id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  uint64_t timestamp = 0;
  REQUIRE(f.cuptiGetTimestamp(&timestamp) == CUPTI_SUCCESS);
  const uint64_t realtime = RealtimeNs();
  CHECK(timestamp + 1000000000 > realtime);  // CLOCK_REALTIME again, not our monotonic clock
  CHECK(timestamp < realtime + 1000000000);

  // Detached: the launcher carries on, unseen.
  const size_t detached_before = launcher.CountIn(kDetached);
  REQUIRE(WaitFor([&] { return launcher.CountIn(kDetached) >= detached_before + 100; }));

  // Re-attach from another thread (the shim's flush thread opening the next window).
  const long worker_deliveries_before = g_worker_deliveries.load();
  std::thread flush_thread([&] {
    g_phase = kReattaching;
    Attach(/*driver_callbacks=*/false);
    g_phase = kReattached;
  });
  flush_thread.join();
  REQUIRE(WaitFor([&] { return launcher.CountIn(kReattached) >= 100; }));
  const std::vector<Launch> launches = launcher.Stop();
  // A fresh worker delivers full buffers again.
  CHECK(WaitFor([&] { return g_worker_deliveries.load() > worker_deliveries_before; }));
  SleepUs(2000);  // every 1 us kernel has finished
  REQUIRE(f.cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  CHECK(g_calls_while_detached.load() == 0);
  CHECK(g_detach_failures.load() == 0);
  std::unique_lock<std::mutex> lock(State().mu);
  uint32_t last_attached_id = 0;
  uint32_t first_reattached_id = 0;
  size_t checked[5] = {};
  for (const Launch& l : launches) {
    INFO("launch " << l.id << " phases " << l.phase_before << ".." << l.phase_after);
    const bool has_kernel = State().kernels.count(l.id) != 0;
    if (l.phase_after == kAttached) {
      // Ended before the detach began: delivered by the worker or by the forced flush, whole or
      // (still running then) with start = end = 0.
      REQUIRE(has_kernel);
      const KernelSeen k = State().kernels[l.id];
      CHECK(((k.start == l.start_ns && k.end == l.end_ns) || (k.start == 0 && k.end == 0)));
      CHECK(State().runtime_records.count(l.id) == 1);
      CHECK(State().callback_ids.count(l.id) == 1);
      last_attached_id = l.id;
      ++checked[kAttached];
    } else if (l.phase_before == kDetached && l.phase_after == kDetached) {
      // Nothing enabled, nobody subscribed: no callback, no record of any kind.
      CHECK_FALSE(has_kernel);
      CHECK(State().runtime_records.count(l.id) == 0);
      CHECK(State().callback_ids.count(l.id) == 0);
      ++checked[kDetached];
    } else if (l.phase_before == kReattached) {
      REQUIRE(has_kernel);
      CHECK(State().kernels[l.id].start == l.start_ns);
      CHECK(State().kernels[l.id].end == l.end_ns);
      CHECK(State().runtime_records.count(l.id) == 1);
      CHECK(State().callback_ids.count(l.id) == 1);
      if (first_reattached_id == 0) first_reattached_id = l.id;
      ++checked[kReattached];
    }
  }
  CHECK(checked[kAttached] >= 200);
  CHECK(checked[kDetached] >= 100);
  CHECK(checked[kReattached] >= 100);
  // Correlation ids are the driver's: they kept counting through the detach.
  CHECK(first_reattached_id > last_attached_id);
  CHECK(first_reattached_id > unfinished.id);

  lock.unlock();  // the store's lock comes first (buffer callbacks take State().mu under it)
  CHECK(f.cuptiUnsubscribe(g_subscriber.load()) == CUPTI_SUCCESS);
  CHECK(f.cuptiFinalize() == CUPTI_SUCCESS);
}

TEST_CASE("cuptiFinalize returns only after callbacks running on other threads have returned",
          "[simgpu][attach]") {
  Fresh();
  FakeCupti& f = Fake();
  static std::atomic<bool> inside{false};
  static std::atomic<bool> finished{false};
  CUpti_SubscriberHandle subscriber = nullptr;
  REQUIRE(f.cuptiSubscribe(
              &subscriber,
              [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
                if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_ENTER) {
                  return;
                }
                inside = true;
                SleepUs(50000);
                finished = true;
              },
              nullptr) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  std::thread app([&] {
    f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, nullptr, 0, 0);
    f.simgpu_api_exit(0);  // no EXIT callback: finalized in between
  });
  REQUIRE(WaitFor([] { return inside.load(); }));
  REQUIRE(f.cuptiFinalize() == CUPTI_SUCCESS);
  CHECK(finished.load());
  app.join();
}

TEST_CASE("two EXIT callbacks on two threads finalizing at once both return", "[simgpu][attach]") {
  Fresh();
  FakeCupti& f = Fake();
  // Each thread's EXIT callback waits until both are inside one, then finalizes: each finalizer
  // must not wait for the other's callback.
  static std::atomic<int> in_callback{0};
  CUpti_SubscriberHandle subscriber = nullptr;
  REQUIRE(f.cuptiSubscribe(
              &subscriber,
              [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
                if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) {
                  return;
                }
                in_callback.fetch_add(1);
                if (!WaitFor([] { return in_callback.load() >= 2; })) g_detach_failures += 1;
                if (Fake().cuptiFinalize() != CUPTI_SUCCESS) g_detach_failures += 1;
              },
              nullptr) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  std::atomic<int> returned{0};
  auto call = [&] {
    f.simgpu_api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, nullptr, 0, 0);
    f.simgpu_api_exit(0);
    returned.fetch_add(1);
  };
  std::thread a(call);
  std::thread b(call);
  a.join();
  b.join();
  CHECK(returned.load() == 2);
  CHECK(in_callback.load() == 2);
  CHECK(g_detach_failures.load() == 0);
  CHECK(f.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) ==
        CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_CASE("an armed process runs with no subscriber and a subscriber joins it mid-run",
          "[simgpu][attach][armed]") {
  // What the simulated driver sees in armed mode: an injection whose InitializeInjection
  // subscribes nothing (docs/attach.md). A subscriber arrives later, on another thread.
  Fresh();
  setenv("GPUATTR_CUPTI_LIBRARY", SIMGPU_FAKE_CUPTI_PATH, 1);
  setenv("CUDA_INJECTION64_PATH", SIMGPU_NULL_INJECTION_PATH, 1);
  Driver driver{/*launch_latency_ns=*/5000, /*graph_node_gap_ns=*/1000};
  std::mutex mu;  // leaf: guards results
  std::vector<WorkResult> results;
  std::atomic<size_t> started{0};
  std::atomic<size_t> completed{0};
  std::atomic<bool> stop{false};
  std::thread app([&] {
    DeviceWork work;
    work.name = "_Z6armedv";
    work.stream = 1;
    work.duration_ns = 2000;
    while (!stop) {
      started.fetch_add(1);
      const WorkResult r = driver.Submit(work, CaptureSite{"main", {}});
      {
        std::lock_guard<std::mutex> lock(mu);
        results.push_back(r);
      }
      completed.fetch_add(1);
      SleepUs(20);
    }
  });
  REQUIRE(WaitFor([&] { return completed.load() >= 100; }));
  const size_t before_attach = completed.load();
  size_t after_enables = 0;
  std::thread attacher([&] {
    Attach(/*driver_callbacks=*/false);
    after_enables = started.load();
  });
  attacher.join();
  REQUIRE(WaitFor([&] { return completed.load() >= after_enables + 100; }));
  stop = true;
  app.join();
  driver.Sync(0, std::nullopt);
  REQUIRE(Fake().cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  std::unique_lock<std::mutex> results_lock(mu);
  std::unique_lock<std::mutex> lock(State().mu);
  REQUIRE(results.size() >= after_enables + 100);
  for (size_t i = 0; i < results.size(); ++i) {
    const WorkResult& r = results[i];
    INFO("launch " << i);
    REQUIRE(r.executed);
    REQUIRE(r.correlation_id.has_value());  // the fake numbers calls with or without a subscriber
    // One stream, FIFO, on one clock from start to end: the attach moved nothing.
    CHECK(r.start_ns >= r.launch_ns + 5000);
    CHECK(r.start_ns < r.launch_ns + 1000000000);
    if (i > 0) CHECK(r.start_ns >= results[i - 1].end_ns);
    const uint32_t id = *r.correlation_id;
    if (i < before_attach) {
      CHECK(State().kernels.count(id) == 0);
      CHECK(State().callback_ids.count(id) == 0);
    } else if (i >= after_enables) {
      REQUIRE(State().kernels.count(id) == 1);
      CHECK(State().kernels[id].start == r.start_ns);
      CHECK(State().kernels[id].end == r.end_ns);
      CHECK(State().callback_ids.count(id) == 1);
      CHECK(State().runtime_records.count(id) == 1);
    }
  }
  lock.unlock();  // the store's lock comes first (buffer callbacks take State().mu under it)
  Fake().cuptiUnsubscribe(g_subscriber.load());
  Fake().cuptiFinalize();
}

TEST_CASE("without a timestamp callback records are on CLOCK_REALTIME, with one on its clock",
          "[simgpu][clock]") {
  Fresh();
  FakeCupti& f = Fake();
  REQUIRE(f.cuptiActivityRegisterCallbacks(OnRequested, OnCompleted) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(f.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);

  const uint64_t realtime_before = RealtimeNs();
  const Launch realtime = LaunchKernel(1, 0, 1000);
  const uint64_t realtime_after = RealtimeNs();
  SleepUs(1000);
  REQUIRE(f.cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  const int64_t offset = static_cast<int64_t>(RealtimeNs() - MonotonicNs());

  REQUIRE(f.cuptiActivityRegisterTimestampCallback(MonotonicClock) == CUPTI_SUCCESS);
  const Launch monotonic = LaunchKernel(1, realtime.end_ns, 1000);
  SleepUs(1000);
  REQUIRE(f.cuptiActivityFlushAll(0) == CUPTI_SUCCESS);

  std::unique_lock<std::mutex> lock(State().mu);
  REQUIRE(State().kernels.count(realtime.id) == 1);
  const KernelSeen k = State().kernels[realtime.id];
  // The device's CLOCK_MONOTONIC times, moved onto CLOCK_REALTIME when delivered.
  CHECK(k.end - k.start == 1000);
  const int64_t moved = static_cast<int64_t>(k.start - realtime.start_ns);
  CHECK(moved > offset - 1000000);
  CHECK(moved < offset + 1000000);
  REQUIRE(State().runtime_records.count(realtime.id) == 1);
  CHECK(State().runtime_records[realtime.id].start >= realtime_before);
  CHECK(State().runtime_records[realtime.id].end <= realtime_after);

  REQUIRE(State().kernels.count(monotonic.id) == 1);
  CHECK(State().kernels[monotonic.id].start == monotonic.start_ns);
  CHECK(State().kernels[monotonic.id].end == monotonic.end_ns);
  REQUIRE(State().runtime_records.count(monotonic.id) == 1);
  CHECK(State().runtime_records[monotonic.id].start >= monotonic.start_ns - 1000000000);
  CHECK(State().runtime_records[monotonic.id].start <= monotonic.start_ns);
  lock.unlock();  // the store's lock comes first (buffer callbacks take State().mu under it)
  f.cuptiFinalize();
}
