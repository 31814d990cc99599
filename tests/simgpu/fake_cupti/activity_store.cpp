#include "activity_store.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace gpuattr::simgpu {
namespace {

thread_local bool tls_on_worker = false;  // the calling thread is a worker of the store

}  // namespace

uint64_t ThreadKey() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t key = next.fetch_add(1);
  return key;
}

namespace {
std::atomic<uint64_t (*)()> device_clock{nullptr};
}  // namespace

void SetDeviceClock(uint64_t (*now)()) { device_clock.store(now, std::memory_order_release); }

uint64_t DeviceClockNs() {
  if (uint64_t(*now)() = device_clock.load(std::memory_order_acquire); now != nullptr) {
    return now();
  }
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

ActivityStore::ActivityStore(uint64_t (*cupti_now)(), uint32_t seed, bool shuffle)
    : cupti_now_(cupti_now), shuffle_(shuffle), rng_(seed) {}

void ActivityStore::RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                      CUpti_BuffersCallbackCompleteFunc completed) {
  std::lock_guard<std::mutex> lock(mu_);
  requested_ = requested;
  completed_ = completed;
  requested_v2_ = nullptr;
  completed_v2_ = nullptr;
  EnsureWorker();
}

void ActivityStore::RegisterCallbacksV2(cupti_v2::RequestFunc requested,
                                        cupti_v2::CompleteFunc completed) {
  std::lock_guard<std::mutex> lock(mu_);
  requested_ = nullptr;
  completed_ = nullptr;
  requested_v2_ = requested;
  completed_v2_ = completed;
  EnsureWorker();
}

void ActivityStore::SetEnabled(uint32_t kind, bool enabled) {
  if (kind < enabled_.size()) enabled_[kind].store(enabled);
}

bool ActivityStore::IsEnabled(uint32_t kind) const {
  return kind < enabled_.size() && enabled_[kind].load();
}

void ActivityStore::AppendHostRecord(const void* record, size_t size) {
  uint32_t kind = 0;
  std::memcpy(&kind, record, sizeof(kind));
  std::lock_guard<std::mutex> lock(mu_);
  // Checked again under mu_: a cuptiFinalize on another thread disables kinds under it.
  if (!IsEnabled(kind)) return;
  Buffer* buffer = BufferFor(ThreadKey(), size);
  if (buffer != nullptr) Append(buffer, static_cast<const uint8_t*>(record), size);
}

void ActivityStore::SubmitDeviceRecord(const DeviceRecord& record) {
  uint32_t kind = 0;
  std::memcpy(&kind, record.bytes.data(), sizeof(kind));
  std::lock_guard<std::mutex> lock(mu_);
  if (!IsEnabled(kind)) return;
  EnsureWorker();
  // No wakeup: the worker places pending records on its period, like the real library's, and
  // whoever needs them placed sooner (DrainPending) wakes it. A futex wake per kernel would cost
  // the simulated app more than everything the profiler does (docs/benchmarks.md §End to end).
  pending_.push_back(record);
}

void ActivityStore::DrainPending(std::unique_lock<std::mutex>& lock) {
  Worker* worker = worker_;
  if (!pending_.empty() && worker != nullptr &&
      std::this_thread::get_id() != worker->thread.get_id()) {
    // Device records are written by the worker into buffers it requested: let it catch up.
    work_cv_.notify_all();
    placed_cv_.wait(lock, [this, worker] { return pending_.empty() || worker_ != worker; });
  }
  if (!pending_.empty()) PlacePending(kNoWorkerKey);  // no worker (forked child), or we are it
}

void ActivityStore::FlushAll(bool forced) {
  std::unique_lock<std::mutex> lock(mu_);
  DrainPending(lock);
  std::vector<Buffer*> ready = TakeDeliverable(forced ? Take::kEverything : Take::kComplete);
  const Completion completed = CompletionLocked();
  const uint64_t worker_batches = worker_batches_taken_;
  lock.unlock();
  Deliver(ready, completed);
  if (tls_on_worker)
    return;  // called from bufferCompleted on the worker: it cannot wait for itself
  // Buffers the worker took before this flush are handed back before it returns.
  lock.lock();
  delivered_cv_.wait(
      lock, [this, worker_batches] { return worker_batches_delivered_ >= worker_batches; });
}

void ActivityStore::SetFlushPeriodMs(uint32_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_period_ms_ = ms;
  work_cv_.notify_all();
}

size_t ActivityStore::TakeDropped() {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t dropped = dropped_;
  dropped_ = 0;
  return dropped;
}

void ActivityStore::Reset() {
  std::vector<Buffer*> ready;
  Completion completed;
  Worker* worker = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Nothing is recorded from here on: app threads re-check their kind under mu_.
    for (auto& kind : enabled_) kind.store(false);
    DrainPending(lock);
    ready = TakeDeliverable(Take::kEverything);
    completed = CompletionLocked();
    worker = worker_;
    worker_ = nullptr;
    if (worker != nullptr) worker->stop = true;
    work_cv_.notify_all();
    placed_cv_.notify_all();
    requested_ = nullptr;
    completed_ = nullptr;
    requested_v2_ = nullptr;
    completed_v2_ = nullptr;
    dropped_ = 0;
    flush_period_ms_ = 0;
  }
  Deliver(ready, completed);
  if (worker == nullptr) return;
  if (std::this_thread::get_id() == worker->thread.get_id()) {
    // Finalized from bufferCompleted on the worker itself: it ends when that callback returns
    // and still reads its Worker then, so the Worker is leaked.
    worker->thread.detach();
    return;
  }
  // The worker may be inside bufferCompleted (mu_ released); it sees `stop` afterwards.
  worker->thread.join();
  delete worker;
}

void ActivityStore::PrepareFork() { mu_.lock(); }

void ActivityStore::ParentAfterFork() { mu_.unlock(); }

void ActivityStore::ChildAfterFork() {
  // The child has only the forking thread: the worker is gone, and the parent's buffers are the
  // parent's records (delivering them here would report them twice, under the child's pid).
  worker_ = nullptr;
  worker_batches_delivered_ = worker_batches_taken_;  // what its worker delivers is the parent's
  current_.clear();
  closed_.clear();
  pending_.clear();
  mu_.unlock();
}

ActivityStore::Buffer* ActivityStore::BufferFor(uint64_t owner, size_t record_size) {
  auto it = current_.find(owner);
  if (it != current_.end()) {
    Buffer* buffer = it->second;
    const bool fits = buffer->size - buffer->used >= record_size &&
                      (buffer->max_records == 0 || buffer->records < buffer->max_records);
    if (fits) return buffer;
    closed_.push_back(buffer);
    current_.erase(it);
  }
  if (requested_ == nullptr && requested_v2_ == nullptr) {
    ++dropped_;
    return nullptr;
  }
  auto buffer = std::make_unique<Buffer>();
  // Called with mu_ held, as the real library calls it under its internal lock (see header).
  if (requested_ != nullptr) {
    requested_(&buffer->data, &buffer->size, &buffer->max_records);
  } else {
    cupti_v2::BufferRequestInfo info{sizeof(info)};
    requested_v2_(&buffer->data, &buffer->size, &buffer->max_records, &info);
  }
  if (buffer->data == nullptr) {
    ++dropped_;
    return nullptr;
  }
  if (reinterpret_cast<uintptr_t>(buffer->data) % 8 != 0 || buffer->size < record_size) {
    buffer->rejected = true;
    closed_.push_back(buffer.release());
    ++dropped_;
    return nullptr;
  }
  Buffer* raw = buffer.release();
  current_[owner] = raw;
  return raw;
}

void ActivityStore::Append(Buffer* buffer, const uint8_t* bytes, size_t size) {
  std::memcpy(buffer->data + buffer->used, bytes, size);
  buffer->layout.emplace_back(buffer->used, size);
  buffer->used += size;
  ++buffer->records;
  // A buffer that can take no further record is full: it leaves its thread and waits, in
  // closed_, for its records to complete.
  constexpr size_t kSmallestRecord = 24;
  const bool full = (buffer->max_records != 0 && buffer->records >= buffer->max_records) ||
                    buffer->size - buffer->used < kSmallestRecord;
  if (!full) return;
  for (auto it = current_.begin(); it != current_.end(); ++it) {
    if (it->second == buffer) {
      current_.erase(it);
      closed_.push_back(buffer);
      return;
    }
  }
}

void ActivityStore::PlacePending(uint64_t owner) {
  while (!pending_.empty()) {
    DeviceRecord record = pending_.front();
    pending_.pop_front();
    Buffer* buffer = BufferFor(owner, record.size);
    if (buffer == nullptr) continue;
    const size_t offset = buffer->used;
    Append(buffer, record.bytes.data(), record.size);
    record.start_offset += offset;
    record.end_offset += offset;
    if (record.completed_offset != 0) record.completed_offset += offset;
    buffer->complete_at = std::max(buffer->complete_at, record.end_ns);
    buffer->stamps.push_back(record);
  }
}

int64_t ActivityStore::CuptiOffset() const {
  const uint64_t device_now = DeviceClockNs();
  const int64_t offset = static_cast<int64_t>(cupti_now_.load()() - device_now);
  return offset > -1000000 && offset < 1000000 ? 0 : offset;
}

std::vector<ActivityStore::Buffer*> ActivityStore::TakeDeliverable(Take take) {
  const uint64_t now = DeviceClockNs();
  std::vector<Buffer*> ready;
  auto complete = [now](const Buffer* b) { return b->rejected || b->complete_at <= now; };
  for (auto it = closed_.begin(); it != closed_.end();) {
    if (take == Take::kEverything || complete(*it)) {
      ready.push_back(*it);
      it = closed_.erase(it);
    } else {
      ++it;
    }
  }
  if (take != Take::kFullAndComplete) {
    for (auto it = current_.begin(); it != current_.end();) {
      Buffer* b = it->second;
      if (take == Take::kEverything || (b->records > 0 && complete(b))) {
        ready.push_back(b);
        it = current_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!ready.empty()) {
    const int64_t offset = CuptiOffset();
    for (Buffer* buffer : ready) Finish(buffer, now, offset);
  }
  std::shuffle(ready.begin(), ready.end(), rng_);
  return ready;
}

void ActivityStore::Finish(Buffer* buffer, uint64_t monotonic_now, int64_t cupti_offset) {
  // The device writes a record's timestamps when the work finishes; unfinished ones stay 0.
  // Finished ones are converted to the CUPTI clock now.
  for (const DeviceRecord& stamp : buffer->stamps) {
    if (stamp.end_ns > monotonic_now) continue;
    const uint64_t start = stamp.start_ns + static_cast<uint64_t>(cupti_offset);
    const uint64_t end = stamp.end_ns + static_cast<uint64_t>(cupti_offset);
    std::memcpy(buffer->data + stamp.start_offset, &start, sizeof(uint64_t));
    std::memcpy(buffer->data + stamp.end_offset, &end, sizeof(uint64_t));
    if (stamp.completed_offset != 0) {
      std::memcpy(buffer->data + stamp.completed_offset, &end, sizeof(uint64_t));
    }
  }
  if (!shuffle_ || buffer->layout.size() < 2) return;
  // No ordering guarantee inside a buffer (cupti-notes §4.6): repack the records shuffled.
  std::vector<uint8_t> copy(buffer->data, buffer->data + buffer->used);
  std::shuffle(buffer->layout.begin(), buffer->layout.end(), rng_);
  size_t out = 0;
  for (const auto& [offset, size] : buffer->layout) {
    std::memcpy(buffer->data + out, copy.data() + offset, size);
    out += size;
  }
}

void ActivityStore::EnsureWorker() {
  if (worker_ != nullptr) return;
  auto* worker = new Worker;
  // The new thread blocks on mu_ (held here) until `thread` is assigned.
  worker->thread = std::thread([this, worker] { WorkerMain(worker); });
  worker_ = worker;
}

void ActivityStore::Deliver(const std::vector<Buffer*>& buffers, Completion completion) {
  for (Buffer* buffer : buffers) {
    const size_t valid = buffer->rejected ? 0 : buffer->used;
    // ctx = NULL and streamId = 0: buffers are global since CUDA 6.0.
    if (completion.v1 != nullptr) completion.v1(nullptr, 0, buffer->data, buffer->size, valid);
    if (completion.v2 != nullptr) {
      cupti_v2::BufferCompleteInfo info{sizeof(info), ThreadKey(), nullptr, 0};
      completion.v2(buffer->data, buffer->size, valid, &info);
    }
    delete buffer;
  }
}

void ActivityStore::WorkerMain(Worker* self) {
  pthread_setname_np(pthread_self(), "Cupti_Worker");
  tls_on_worker = true;
  std::unique_lock<std::mutex> lock(mu_);
  self->key = ThreadKey();
  while (!self->stop) {
    PlacePending(self->key);
    placed_cv_.notify_all();
    // Periodic delivery, with or without cuptiActivityFlushPeriod: full and complete buffers only.
    std::vector<Buffer*> ready = TakeDeliverable(Take::kFullAndComplete);
    if (!ready.empty()) {
      const Completion completed = CompletionLocked();
      ++worker_batches_taken_;
      lock.unlock();
      Deliver(ready, completed);
      lock.lock();
      ++worker_batches_delivered_;
      delivered_cv_.notify_all();
      continue;
    }
    const auto period = std::chrono::milliseconds(flush_period_ms_ > 0 ? flush_period_ms_ : 5);
    work_cv_.wait_for(lock, period, [this, self] { return self->stop || !pending_.empty(); });
  }
}

}  // namespace gpuattr::simgpu
