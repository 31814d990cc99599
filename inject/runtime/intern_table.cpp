#include "runtime/intern_table.h"

#include <cstdlib>
#include <cstring>

#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

constexpr uint32_t kArenaChunkBytes = 64 * 1024;

uint64_t HashBytes(std::string_view text) noexcept {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

uint64_t HashKey(const PathKey& key) noexcept {
  uint64_t x = (static_cast<uint64_t>(key.parent) << 32) ^ key.name ^
               (static_cast<uint64_t>(key.domain) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 30;  // splitmix64 finaliser
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

std::string_view Truncate(std::string_view text) noexcept {
  return text.size() > wire::kMaxStringBytes ? text.substr(0, wire::kMaxStringBytes) : text;
}

}  // namespace

uint32_t StringTable::Probe(std::string_view text, uint64_t hash,
                            uint32_t* free_slot) const noexcept {
  for (uint32_t i = 0; i < kSlots; ++i) {
    const uint32_t index = static_cast<uint32_t>(hash + i) & (kSlots - 1);
    const Slot& slot = slots_[index];
    const uint32_t id = slot.id.load(std::memory_order_acquire);
    if (id == 0) {
      if (free_slot != nullptr) *free_slot = index;
      return 0;
    }
    if (slot.hash == hash && slot.length == text.size() &&
        std::memcmp(slot.bytes, text.data(), text.size()) == 0) {
      return id;
    }
  }
  return 0;
}

uint32_t StringTable::Find(std::string_view text) const noexcept {
  text = Truncate(text);
  return Probe(text, HashBytes(text), nullptr);
}

const char* StringTable::CopyBytes(std::string_view text) noexcept {
  if (text.empty()) return "";
  if (text.size() > arena_left_) {
    const uint32_t bytes =
        text.size() > kArenaChunkBytes ? static_cast<uint32_t>(text.size()) : kArenaChunkBytes;
    char* chunk = static_cast<char*>(std::malloc(bytes));
    if (chunk == nullptr) return nullptr;
    if (bytes == kArenaChunkBytes) {
      arena_ = chunk;
      arena_left_ = bytes;
    } else {
      std::memcpy(chunk, text.data(), text.size());  // an oversized string gets its own block
      return chunk;
    }
  }
  char* out = arena_;
  std::memcpy(out, text.data(), text.size());
  arena_ += text.size();
  arena_left_ -= static_cast<uint32_t>(text.size());
  return out;
}

uint32_t StringTable::Intern(std::string_view text) noexcept {
  text = Truncate(text);
  const uint64_t hash = HashBytes(text);
  if (uint32_t id = Probe(text, hash, nullptr); id != 0) return id;

  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t free_slot = kSlots;
  if (uint32_t id = Probe(text, hash, &free_slot); id != 0) return id;  // raced another inserter
  const uint32_t count = count_.load(std::memory_order_relaxed);
  const char* bytes = count < kMaxEntries && free_slot < kSlots ? CopyBytes(text) : nullptr;
  if (bytes == nullptr) {
    full_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint32_t id = count + 1;
  entries_[id] = Entry{bytes, static_cast<uint32_t>(text.size())};
  Slot& slot = slots_[free_slot];
  slot.length = static_cast<uint32_t>(text.size());
  slot.hash = hash;
  slot.bytes = bytes;
  count_.store(id, std::memory_order_release);
  slot.id.store(id, std::memory_order_release);
  return id;
}

uint32_t PathTable::Probe(const PathKey& key, uint32_t* free_slot) const noexcept {
  const uint64_t hash = HashKey(key);
  for (uint32_t i = 0; i < kSlots; ++i) {
    const uint32_t index = static_cast<uint32_t>(hash + i) & (kSlots - 1);
    const Slot& slot = slots_[index];
    const uint32_t id = slot.id.load(std::memory_order_acquire);
    if (id == 0) {
      if (free_slot != nullptr) *free_slot = index;
      return 0;
    }
    if (slot.key.parent == key.parent && slot.key.name == key.name &&
        slot.key.domain == key.domain) {
      return id;
    }
  }
  return 0;
}

uint32_t PathTable::Find(const PathKey& key) const noexcept { return Probe(key, nullptr); }

uint32_t PathTable::Intern(const PathKey& key) noexcept {
  if (uint32_t id = Probe(key, nullptr); id != 0) return id;

  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t free_slot = kSlots;
  if (uint32_t id = Probe(key, &free_slot); id != 0) return id;
  const uint32_t count = count_.load(std::memory_order_relaxed);
  if (count >= kMaxEntries || free_slot >= kSlots) {
    full_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint32_t id = count + 1;
  entries_[id] = key;
  slots_[free_slot].key = key;
  count_.store(id, std::memory_order_release);
  slots_[free_slot].id.store(id, std::memory_order_release);
  return id;
}

}  // namespace gpuattr::inject
