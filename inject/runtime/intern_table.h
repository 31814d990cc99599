// Intern tables: strings and NVTX path nodes mapped to small integer ids, per process image.
//
// Who calls: app threads (NVTX handlers intern range names and paths; CUPTI callbacks read them),
// the gpuattr-flush thread (interns kernel and device names; scans for new entries to send).
//
// Lookups are lock-free: an open-addressing table whose slots are published by a release store of
// their id after the key is written; a reader that acquires a non-zero id may read the key. Only
// inserting a key never seen before takes `mutex_` (and may malloc, for the string bytes). Ids
// are dense, 1..size(), in insertion order, and never change or disappear, so the flush thread
// sends every definition exactly once per connection by remembering how far it got.
//
// Ordering guarantee used by the flush thread: entry `id` (and, for paths, the strings it refers
// to) is fully written before size() >= id is observable (release store of count_ after the
// entry, acquire load in size()).
//
// Memory: string bytes live in malloc'd arena chunks that are never freed, not even with the
// table, since ids (and the pointers behind them) must stay valid until the process is gone
// (tests/sanitizers/lsan.supp says so to LeakSanitizer).
//
// Capacity is fixed (no rehash, so readers never race a resize). When a table is full, Intern
// returns 0 ("none") and counts the failure; callers treat 0 as "unnamed".
//
// Lock order: mutex_ is a leaf lock; nothing is called while holding it except malloc. The fork
// prepare handler takes it (LockForFork) so a child never inherits it held.
#ifndef GPUATTR_INJECT_RUNTIME_INTERN_TABLE_H_
#define GPUATTR_INJECT_RUNTIME_INTERN_TABLE_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace gpuattr::inject {

class StringTable {
 public:
  static constexpr uint32_t kSlots = 1u << 16;
  static constexpr uint32_t kMaxEntries = kSlots / 2;  // load factor <= 0.5 keeps probes short

  constexpr StringTable() = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // Returns the id of `text` (truncated to wire::kMaxStringBytes), interning it on first sight;
  // 0 when the table is full. Runs on: any thread.
  uint32_t Intern(std::string_view text) noexcept;
  // Lock-free lookup only; 0 when absent.
  uint32_t Find(std::string_view text) const noexcept;

  // Number of entries published so far (ids 1..size()).
  uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // The text of an id in 1..size().
  std::string_view Get(uint32_t id) const noexcept {
    return {entries_[id].bytes, entries_[id].length};
  }
  uint64_t full_count() const noexcept { return full_.load(std::memory_order_relaxed); }
  void ResetFullCount() noexcept { full_.store(0, std::memory_order_relaxed); }

  void LockForFork() noexcept { mutex_.lock(); }
  void UnlockAfterFork() noexcept { mutex_.unlock(); }

 private:
  struct Slot {
    std::atomic<uint32_t> id{0};
    uint32_t length = 0;
    uint64_t hash = 0;
    const char* bytes = nullptr;
  };
  struct Entry {
    const char* bytes = nullptr;
    uint32_t length = 0;
  };

  uint32_t Probe(std::string_view text, uint64_t hash, uint32_t* free_slot) const noexcept;
  const char* CopyBytes(std::string_view text) noexcept;  // requires mutex_

  Slot slots_[kSlots];
  Entry entries_[kMaxEntries + 1];
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> full_{0};
  std::mutex mutex_;
  char* arena_ = nullptr;  // current chunk for string bytes; guarded by mutex_
  uint32_t arena_left_ = 0;
};

// The key of a path node: the range `name` (a string id) in `domain` (a string id, 0 for NVTX's
// default domain) pushed on top of the stack whose node is `parent` (0: empty stack).
struct PathKey {
  uint32_t parent = 0;
  uint32_t name = 0;
  uint32_t domain = 0;
};

class PathTable {
 public:
  static constexpr uint32_t kSlots = 1u << 17;
  static constexpr uint32_t kMaxEntries = kSlots / 2;

  constexpr PathTable() = default;
  PathTable(const PathTable&) = delete;
  PathTable& operator=(const PathTable&) = delete;

  // Returns the node id of `key`, interning it on first sight; 0 when the table is full.
  // Runs on: any thread (app threads on NVTX push).
  uint32_t Intern(const PathKey& key) noexcept;
  uint32_t Find(const PathKey& key) const noexcept;

  uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  const PathKey& Get(uint32_t id) const noexcept { return entries_[id]; }
  uint64_t full_count() const noexcept { return full_.load(std::memory_order_relaxed); }
  void ResetFullCount() noexcept { full_.store(0, std::memory_order_relaxed); }

  void LockForFork() noexcept { mutex_.lock(); }
  void UnlockAfterFork() noexcept { mutex_.unlock(); }

 private:
  struct Slot {
    std::atomic<uint32_t> id{0};
    PathKey key;
  };

  uint32_t Probe(const PathKey& key, uint32_t* free_slot) const noexcept;

  Slot slots_[kSlots];
  PathKey entries_[kMaxEntries + 1];
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> full_{0};
  std::mutex mutex_;
};

}  // namespace gpuattr::inject

#endif  // GPUATTR_INJECT_RUNTIME_INTERN_TABLE_H_
