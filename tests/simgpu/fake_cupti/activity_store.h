// ActivityStore: the fake CUPTI's activity buffers, its worker thread and its global lock.
//
// It reproduces the buffer behaviours of the real 13.0 library that a client must survive
// (cupti-notes §4.5, §8.3):
//
//   app thread T ──API record──▶ T's current buffer   (bufferRequested runs on T, under mu_)
//   app thread  ──device work──▶ pending_ ──worker──▶ worker's current buffer (requested on the
//                                                     worker, under mu_; timestamps appear only
//                                                     once the work has finished on the CUPTI clock)
//   full buffer ──▶ closed_ ──worker, when complete──▶ bufferCompleted (worker thread, mu_ released)
//   FlushAll(0)      delivers every buffer whose records are all complete, on the caller's thread
//   FlushAll(FORCED) delivers everything; unfinished device records carry start = end = 0
//
// Record order inside a delivered buffer is shuffled (seeded), buffers arrive in no order. A NULL
// or misaligned buffer drops the record and counts it (a misaligned one is handed back empty).
//
// Locking: mu_ models CUPTI's internal lock. bufferRequested is invoked WITH mu_ held, and
// TakeDropped() takes mu_, so a client that calls cuptiActivityGetNumDroppedRecords while holding
// a lock that its bufferRequested also takes deadlocks here exactly as with the real library
// (Kineto's ABBA bug). bufferCompleted is always invoked with mu_ released. mu_ is the innermost
// lock of the fake: nothing else is locked while it is held.
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

namespace gpuattr::simgpu {

// A record whose timestamps are written only when the device work completes.
struct DeviceRecord {
  std::array<uint8_t, 216> bytes{};  // the record, with its timestamps still zero
  size_t size = 0;
  size_t start_offset = 0;           // where start/end (and completed, for kernels) go
  size_t end_offset = 0;
  size_t completed_offset = 0;       // 0: the record has no `completed` field
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class ActivityStore {
 public:
  // `now` is the CUPTI clock; `seed` drives the shuffle.
  ActivityStore(uint64_t (*now)(), uint32_t seed, bool shuffle);
  ActivityStore(const ActivityStore&) = delete;
  ActivityStore& operator=(const ActivityStore&) = delete;

  void RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                         CUpti_BuffersCallbackCompleteFunc completed);
  void SetEnabled(uint32_t kind, bool enabled);
  bool IsEnabled(uint32_t kind) const;

  // Appends an API-side record (API, external correlation, device) to the calling thread's
  // buffer. Runs on: the app thread making the call.
  void AppendHostRecord(const void* record, size_t size);

  // Queues device work; the worker writes it. Runs on: any app thread.
  void SubmitDeviceRecord(const DeviceRecord& record);

  // cuptiActivityFlushAll: delivers synchronously on the calling thread before returning.
  void FlushAll(bool forced);
  void SetFlushPeriodMs(uint32_t ms);

  // Returns and resets the dropped-record counter (takes mu_, like the real library).
  size_t TakeDropped();

  // cuptiFinalize: stops the worker and forgets buffers, callbacks and enabled kinds.
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
    std::vector<DeviceRecord> stamps;  // device records waiting for their timestamps
    std::vector<std::pair<size_t, size_t>> layout;  // (offset, size) of every record
  };
  enum class Take { kFullAndComplete, kComplete, kEverything };

  // All of these run with mu_ held.
  Buffer* BufferFor(uint64_t owner, size_t record_size);
  void Append(Buffer* buffer, const uint8_t* bytes, size_t size);
  void PlacePending();
  std::vector<Buffer*> TakeDeliverable(Take take);
  void Finish(Buffer* buffer, uint64_t now);
  void EnsureWorker();

  // Runs with mu_ released.
  static void Deliver(const std::vector<Buffer*>& buffers, CUpti_BuffersCallbackCompleteFunc completed);
  void WorkerMain();  // Runs on: the fake's worker thread ("Cupti_Worker").

  uint64_t (*now_)();
  const bool shuffle_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // wakes the worker (pending work, stop)
  std::condition_variable placed_cv_;  // the worker drained pending_
  CUpti_BuffersCallbackRequestFunc requested_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed_ = nullptr;
  std::array<std::atomic<bool>, CUPTI_ACTIVITY_KIND_COUNT> enabled_{};
  std::unordered_map<uint64_t, Buffer*> current_;  // owner (thread key) -> open buffer
  std::vector<Buffer*> closed_;                   // full or rejected, not yet delivered
  std::deque<DeviceRecord> pending_;
  size_t dropped_ = 0;
  uint32_t flush_period_ms_ = 0;
  std::mt19937 rng_;
  std::thread* worker_ = nullptr;  // leaked, not destroyed, in a forked child (it has no thread)
  bool worker_alive_ = false;
  bool stop_ = false;
  uint64_t worker_key_ = 0;
};

// A process-unique key for the calling thread (buffers are per thread).
uint64_t ThreadKey();

}  // namespace gpuattr::simgpu

#endif  // GPUATTR_TESTS_SIMGPU_FAKE_CUPTI_ACTIVITY_STORE_H_
