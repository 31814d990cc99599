#include "activity_store.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace gpuattr::simgpu {

uint64_t ThreadKey() {
  static std::atomic<uint64_t> next{1};
  thread_local const uint64_t key = next.fetch_add(1);
  return key;
}

ActivityStore::ActivityStore(uint64_t (*now)(), uint32_t seed, bool shuffle)
    : now_(now), shuffle_(shuffle), rng_(seed) {}

void ActivityStore::RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                      CUpti_BuffersCallbackCompleteFunc completed) {
  std::lock_guard<std::mutex> lock(mu_);
  requested_ = requested;
  completed_ = completed;
  EnsureWorker();
}

void ActivityStore::SetEnabled(uint32_t kind, bool enabled) {
  if (kind < enabled_.size()) enabled_[kind].store(enabled);
}

bool ActivityStore::IsEnabled(uint32_t kind) const {
  return kind < enabled_.size() && enabled_[kind].load();
}

void ActivityStore::AppendHostRecord(const void* record, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  Buffer* buffer = BufferFor(ThreadKey(), size);
  if (buffer != nullptr) Append(buffer, static_cast<const uint8_t*>(record), size);
}

void ActivityStore::SubmitDeviceRecord(const DeviceRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  EnsureWorker();
  pending_.push_back(record);
  work_cv_.notify_all();
}

void ActivityStore::FlushAll(bool forced) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!pending_.empty() && worker_alive_ && std::this_thread::get_id() != worker_->get_id()) {
    // Device records are written by the worker into buffers it requested: let it catch up.
    work_cv_.notify_all();
    placed_cv_.wait(lock, [this] { return pending_.empty() || !worker_alive_; });
  }
  if (!pending_.empty()) PlacePending();  // no worker (finalized, forked child): place here
  std::vector<Buffer*> ready = TakeDeliverable(forced ? Take::kEverything : Take::kComplete);
  CUpti_BuffersCallbackCompleteFunc completed = completed_;
  lock.unlock();
  Deliver(ready, completed);
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
  FlushAll(/*forced=*/true);
  std::thread* worker = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    worker_alive_ = false;
    worker = worker_;
    worker_ = nullptr;
    work_cv_.notify_all();
  }
  if (worker != nullptr) {
    if (std::this_thread::get_id() == worker->get_id()) {
      worker->detach();
    } else {
      worker->join();
    }
    delete worker;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [owner, buffer] : current_) delete buffer;
  current_.clear();
  for (Buffer* buffer : closed_) delete buffer;
  closed_.clear();
  pending_.clear();
  requested_ = nullptr;
  completed_ = nullptr;
  for (auto& kind : enabled_) kind.store(false);
  dropped_ = 0;
  flush_period_ms_ = 0;
  stop_ = false;
}

void ActivityStore::PrepareFork() { mu_.lock(); }

void ActivityStore::ParentAfterFork() { mu_.unlock(); }

void ActivityStore::ChildAfterFork() {
  // The child has only the forking thread: the worker is gone, and the parent's buffers are the
  // parent's records (delivering them here would report them twice, under the child's pid).
  worker_ = nullptr;
  worker_alive_ = false;
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
  if (requested_ == nullptr) {
    ++dropped_;
    return nullptr;
  }
  auto buffer = std::make_unique<Buffer>();
  // Called with mu_ held, as the real library calls it under its internal lock (see header).
  requested_(&buffer->data, &buffer->size, &buffer->max_records);
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

void ActivityStore::PlacePending() {
  while (!pending_.empty()) {
    DeviceRecord record = pending_.front();
    pending_.pop_front();
    Buffer* buffer = BufferFor(worker_key_, record.size);
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

std::vector<ActivityStore::Buffer*> ActivityStore::TakeDeliverable(Take take) {
  const uint64_t now = now_();
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
  for (Buffer* buffer : ready) Finish(buffer, now);
  std::shuffle(ready.begin(), ready.end(), rng_);
  return ready;
}

void ActivityStore::Finish(Buffer* buffer, uint64_t now) {
  // The device writes a record's timestamps when the work finishes; unfinished ones stay 0.
  for (const DeviceRecord& stamp : buffer->stamps) {
    if (stamp.end_ns > now) continue;
    std::memcpy(buffer->data + stamp.start_offset, &stamp.start_ns, sizeof(uint64_t));
    std::memcpy(buffer->data + stamp.end_offset, &stamp.end_ns, sizeof(uint64_t));
    if (stamp.completed_offset != 0) {
      std::memcpy(buffer->data + stamp.completed_offset, &stamp.end_ns, sizeof(uint64_t));
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
  if (worker_alive_) return;
  worker_alive_ = true;
  worker_ = new std::thread([this] { WorkerMain(); });
}

void ActivityStore::Deliver(const std::vector<Buffer*>& buffers,
                            CUpti_BuffersCallbackCompleteFunc completed) {
  for (Buffer* buffer : buffers) {
    // ctx = NULL and streamId = 0: buffers are global since CUDA 6.0.
    if (completed != nullptr) {
      completed(nullptr, 0, buffer->data, buffer->size, buffer->rejected ? 0 : buffer->used);
    }
    delete buffer;
  }
}

void ActivityStore::WorkerMain() {
  pthread_setname_np(pthread_self(), "Cupti_Worker");
  std::unique_lock<std::mutex> lock(mu_);
  worker_key_ = ThreadKey();
  while (!stop_) {
    PlacePending();
    placed_cv_.notify_all();
    // Periodic delivery, with or without cuptiActivityFlushPeriod: full and complete buffers only.
    std::vector<Buffer*> ready = TakeDeliverable(Take::kFullAndComplete);
    if (!ready.empty()) {
      CUpti_BuffersCallbackCompleteFunc completed = completed_;
      lock.unlock();
      Deliver(ready, completed);
      lock.lock();
      continue;
    }
    const auto period = std::chrono::milliseconds(flush_period_ms_ > 0 ? flush_period_ms_ : 5);
    work_cv_.wait_for(lock, period, [this] { return stop_ || !pending_.empty(); });
  }
  placed_cv_.notify_all();
}

}  // namespace gpuattr::simgpu
