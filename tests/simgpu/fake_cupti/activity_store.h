// ActivityStore: the fake CUPTI's activity buffers, its worker thread and its global lock. There
// is one for the process (CUDA 13.0's activity API), and in the multi-subscriber mode one per
// subscriber besides (fake_core.h), each with its own buffer callbacks (V1, or V2 with an info
// struct), kinds, drops and CUPTI clock.
//
// It reproduces the buffer behaviours of the real 13.0 library that a client must survive
// (cupti-notes §4.5, §8.3):
//
//   app thread T ──API record──▶ T's current buffer   (bufferRequested runs on T, under mu_)
//   app thread  ──device work──▶ pending_ ──worker──▶ worker's current buffer (requested on the
//                                                     worker, under mu_; timestamps appear only
//                                                     once the work has finished)
//   full buffer ──▶ closed_ ──worker, when complete──▶ bufferCompleted (worker thread, mu_
//   released) FlushAll(0)      delivers every buffer whose records are all complete, on the
//   caller's thread FlushAll(FORCED) delivers everything; unfinished device records carry start =
//   end = 0 Both return only once the buffers the worker had taken for delivery before the flush
//   have been handed back too: bufferCompleted completes before the flush returns (cupti-notes
//   §4.5).
//
// Record order inside a delivered buffer is shuffled (seeded), buffers arrive in no order. A NULL
// or misaligned buffer drops the record and counts it (a misaligned one is handed back empty).
//
// Clocks: device work is timed on the device clock, DeviceClockNs (CLOCK_MONOTONIC, or the
// simulated clock simgpu_set_device_clock gave); a device record is complete once its end has
// passed on it. Its timestamps are written into the buffer when it is delivered, converted to the
// CUPTI clock by the offset between the CUPTI clock and the device clock measured then (as the
// real library converts GPU timestamps to its CPU timebase when it processes them, cupti-notes
// §4.7). The offset is 0 when the two clocks agree within 1 ms, i.e. when the client registered
// the device clock (the shim's CLOCK_MONOTONIC, or the simulated clock it was given).
//
// Locking: mu_ models CUPTI's internal lock. bufferRequested is invoked WITH mu_ held, and
// TakeDropped() takes mu_, so a client that calls cuptiActivityGetNumDroppedRecords while holding
// a lock that its bufferRequested also takes deadlocks here exactly as with the real library
// (Kineto's ABBA bug). bufferCompleted is always invoked with mu_ released. mu_ is the innermost
// lock of the fake: nothing else is locked while it is held.
//
// Reset (cuptiFinalize) may run on any thread, also inside a client callback and concurrently
// with app threads producing records: it disables every kind and forgets the callbacks under mu_
// (so nothing is recorded after it), delivers everything (forced) on the calling thread and stops
// the worker. A later RegisterCallbacks or device record starts a fresh worker.
#ifndef GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_ACTIVITY_STORE_H_
#define GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_ACTIVITY_STORE_H_

#include <cupti.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cupti/cupti_v2_abi.h"

namespace gpuattr::simgpu {

// A record whose timestamps are written only when the device work completes.
struct DeviceRecord {
  std::array<uint8_t, 216> bytes{};  // the record, with its timestamps still zero
  size_t size = 0;
  size_t start_offset = 0;  // where start/end (and completed, for kernels) go
  size_t end_offset = 0;
  size_t completed_offset = 0;  // 0: the record has no `completed` field
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class ActivityStore {
 public:
  // `cupti_now` is the CUPTI clock; `seed` drives the shuffle.
  ActivityStore(uint64_t (*cupti_now)(), uint32_t seed, bool shuffle);
  ActivityStore(const ActivityStore&) = delete;
  ActivityStore& operator=(const ActivityStore&) = delete;

  void RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                         CUpti_BuffersCallbackCompleteFunc completed);
  // A subscriber's buffer callbacks (cuptiActivityRegisterCallbacks_v2): they replace the V1 pair.
  void RegisterCallbacksV2(cupti_v2::RequestFunc requested, cupti_v2::CompleteFunc completed);
  void SetEnabled(uint32_t kind, bool enabled);
  bool IsEnabled(uint32_t kind) const;

  // Appends an API-side record (API, external correlation, device) to the calling thread's
  // buffer, unless its kind (the record's first field) is disabled by then. Runs on: the app
  // thread making the call.
  void AppendHostRecord(const void* record, size_t size);

  // Queues device work (times on the device clock); the worker writes it. Dropped silently when
  // its kind is disabled by then. Runs on: any app thread.
  void SubmitDeviceRecord(const DeviceRecord& record);

  // cuptiActivityFlushAll: delivers synchronously on the calling thread before returning.
  void FlushAll(bool forced);
  void SetFlushPeriodMs(uint32_t ms);

  // The CUPTI clock of this store's records (a subscriber's timestamp callback, multi-subscriber
  // mode), and the thread-id type of its API records (cuptiSetThreadIdType for the process's
  // store, the attribute for a subscriber's).
  using Clock = uint64_t (*)();
  void SetClock(Clock cupti_now) { cupti_now_.store(cupti_now); }
  Clock clock() const { return cupti_now_.load(); }
  uint64_t CuptiNow() const { return cupti_now_.load()(); }
  void SetThreadIdType(uint32_t type) { thread_id_type_.store(type); }
  uint32_t thread_id_type() const { return thread_id_type_.load(); }

  // Returns and resets the dropped-record counter (takes mu_, like the real library).
  size_t TakeDropped();

  // cuptiFinalize: see the header comment. Returns once every buffer has been handed back and
  // the worker has stopped (when called on the worker itself: once it has been told to stop).
  void Reset();

  // pthread_atfork handlers: the child has no worker thread (like the real library's child).
  void PrepareFork();
  void ParentAfterFork();
  void ChildAfterFork();

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t used = 0;
    size_t records = 0;
    size_t max_records = 0;  // 0: no limit
    bool rejected = false;   // misaligned or too small: handed back with validSize 0
    uint64_t complete_at = 0;
    std::vector<DeviceRecord> stamps;               // device records waiting for their timestamps
    std::vector<std::pair<size_t, size_t>> layout;  // (offset, size) of every record
  };
  enum class Take { kFullAndComplete, kComplete, kEverything };
  // One worker thread. A stopped worker is forgotten by the store at once (a fresh one may start
  // while it winds down), so each has its own stop flag; read and written under mu_.
  struct Worker {
    std::thread thread;
    bool stop = false;
    uint64_t key = 0;  // ThreadKey() of the worker: the owner of its current buffer
  };
  // Owner of the buffer that device records go to when no worker places them (finalized before
  // the worker caught up, forked child); ThreadKey() never returns it.
  static constexpr uint64_t kNoWorkerKey = 0;

  // All of these run with mu_ held.
  Buffer* BufferFor(uint64_t owner, size_t record_size);
  void Append(Buffer* buffer, const uint8_t* bytes, size_t size);
  void PlacePending(uint64_t owner);
  // Brings pending_ into buffers: lets the worker place it (waiting on `lock`), or places it here.
  void DrainPending(std::unique_lock<std::mutex>& lock);
  std::vector<Buffer*> TakeDeliverable(Take take);
  void Finish(Buffer* buffer, uint64_t monotonic_now, int64_t cupti_offset);
  int64_t CuptiOffset() const;
  void EnsureWorker();

  // Runs with mu_ released.
  // The completion callback of either API, as it was when a batch was taken.
  struct Completion {
    CUpti_BuffersCallbackCompleteFunc v1 = nullptr;
    cupti_v2::CompleteFunc v2 = nullptr;
  };
  Completion CompletionLocked() const { return {completed_, completed_v2_}; }
  static void Deliver(const std::vector<Buffer*>& buffers, Completion completion);
  void WorkerMain(Worker* self);  // Runs on: the fake's worker thread ("Cupti_Worker").

  std::atomic<Clock> cupti_now_;
  std::atomic<uint32_t> thread_id_type_{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT};
  const bool shuffle_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;       // wakes the worker (pending work, stop)
  std::condition_variable placed_cv_;     // the worker drained pending_
  std::condition_variable delivered_cv_;  // a worker finished delivering a batch
  uint64_t worker_batches_taken_ = 0;     // batches of buffers workers took to deliver
  uint64_t worker_batches_delivered_ = 0;
  CUpti_BuffersCallbackRequestFunc requested_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed_ = nullptr;
  cupti_v2::RequestFunc requested_v2_ = nullptr;
  cupti_v2::CompleteFunc completed_v2_ = nullptr;
  std::array<std::atomic<bool>, CUPTI_ACTIVITY_KIND_COUNT> enabled_{};
  std::unordered_map<uint64_t, Buffer*> current_;  // owner (thread key) -> open buffer
  std::vector<Buffer*> closed_;                    // full or rejected, not yet delivered
  std::deque<DeviceRecord> pending_;
  size_t dropped_ = 0;
  uint32_t flush_period_ms_ = 0;
  std::mt19937 rng_;
  // The running worker; null before the first one, after Reset and in a forked child (whose
  // copy of the parent's Worker is leaked: it has no thread to join).
  Worker* worker_ = nullptr;
};

// The simulated device's clock in ns: CLOCK_MONOTONIC, or the clock SetDeviceClock gave
// (simulated time, simgpu_set_device_clock).
uint64_t DeviceClockNs();
void SetDeviceClock(uint64_t (*now)());

// A process-unique key for the calling thread (buffers are per thread).
uint64_t ThreadKey();

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_ACTIVITY_STORE_H_
