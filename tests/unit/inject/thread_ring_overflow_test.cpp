// SpscRing's overflow (thread_ring.h): a ring whose buffer is larger than its resident part keeps
// a burst whole in the overflow and gives the overflow's pages back once drained; a ring whose
// consumer keeps up never touches the overflow. Residency is read with mincore(2).
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/thread_ring.h"
#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

// A private anonymous mapping of `pages` pages, as ThreadState's block is.
class MappedPages {
 public:
  explicit MappedPages(size_t pages)
      : page_bytes_(static_cast<size_t>(sysconf(_SC_PAGESIZE))), bytes_(pages * page_bytes_) {
    void* block = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(block != MAP_FAILED);
    data_ = static_cast<uint8_t*>(block);
  }
  ~MappedPages() { munmap(data_, bytes_); }
  MappedPages(const MappedPages&) = delete;
  MappedPages& operator=(const MappedPages&) = delete;

  uint8_t* data() const { return data_; }
  size_t page_bytes() const { return page_bytes_; }
  // How many of the pages [first, end) are resident.
  size_t ResidentPages(size_t first, size_t end) const {
    std::vector<unsigned char> resident(bytes_ / page_bytes_);
    REQUIRE(mincore(data_, bytes_, resident.data()) == 0);
    size_t count = 0;
    for (size_t page = first; page < end; ++page) count += resident[page] & 1;
    return count;
  }

 private:
  size_t page_bytes_;
  size_t bytes_;
  uint8_t* data_ = nullptr;
};

// Drains everything published; returns the timestamps in order.
std::vector<uint64_t> DrainTimestamps(SpscRing& ring) {
  std::vector<uint64_t> out;
  ring.Drain(ring.PublishedPosition(), [&](const uint8_t* record, uint32_t) {
    wire::RangeEvent event;
    std::memcpy(&event, record + sizeof(wire::RecordHeader), sizeof(event));
    out.push_back(event.timestamp_ns);
  });
  return out;
}

bool PushAt(SpscRing& ring, uint64_t timestamp) {
  return ring.Push(wire::RecordType::kRangePush, wire::RangeEvent{timestamp, 1, 1});
}

constexpr size_t kPages = 64;
constexpr size_t kResidentPages = 8;
constexpr uint32_t kRecordBytes = wire::PaddedRecordBytes(sizeof(wire::RangeEvent));

TEST_CASE("a burst beyond the resident part is kept whole, and its pages are given back",
          "[ring]") {
  MappedPages pages(kPages);
  const auto capacity = static_cast<uint32_t>(kPages * pages.page_bytes());
  const auto resident = static_cast<uint32_t>(kResidentPages * pages.page_bytes());
  SpscRing ring;
  ring.Init(pages.data(), capacity, nullptr, resident);
  REQUIRE(ring.resident_bytes() == resident);
  // Six times the resident part, with no consumer: nothing is dropped.
  const uint64_t records = 6 * resident / kRecordBytes;
  for (uint64_t i = 0; i < records; ++i) REQUIRE(PushAt(ring, i));
  CHECK(ring.dropped() == 0);
  CHECK(pages.ResidentPages(kResidentPages, kPages) >= 5 * kResidentPages - 1);

  const std::vector<uint64_t> drained = DrainTimestamps(ring);
  REQUIRE(drained.size() == records);
  for (uint64_t i = 0; i < records; ++i) REQUIRE(drained[i] == i);
  // Every overflow page the burst filled, bar the one the drain ended in, is given back; the
  // resident part keeps its pages.
  CHECK(pages.ResidentPages(kResidentPages, kPages) <= 1);
  CHECK(pages.ResidentPages(0, kResidentPages) == kResidentPages);

  // The next records go back to the start: the ring is empty and its start is free.
  REQUIRE(PushAt(ring, records));
  CHECK(DrainTimestamps(ring) == std::vector<uint64_t>{records});
  CHECK(pages.ResidentPages(kResidentPages, kPages) <= 1);
}

TEST_CASE("a ring whose consumer keeps up stays in its resident part", "[ring]") {
  MappedPages pages(kPages);
  const auto capacity = static_cast<uint32_t>(kPages * pages.page_bytes());
  const auto resident = static_cast<uint32_t>(kResidentPages * pages.page_bytes());
  SpscRing ring;
  ring.Init(pages.data(), capacity, nullptr, resident);
  // About ten times the whole buffer, drained every quarter of the resident part.
  const uint64_t per_drain = resident / 4 / kRecordBytes;
  uint64_t next = 0;
  for (int drain = 0; drain < 10 * 4 * static_cast<int>(kPages / kResidentPages); ++drain) {
    for (uint64_t i = 0; i < per_drain; ++i) REQUIRE(PushAt(ring, next + i));
    const std::vector<uint64_t> drained = DrainTimestamps(ring);
    REQUIRE(drained.size() == per_drain);
    REQUIRE(drained.front() == next);
    REQUIRE(drained.back() == next + per_drain - 1);
    next += per_drain;
  }
  CHECK(next * kRecordBytes > 10 * static_cast<uint64_t>(capacity) / 2);
  CHECK(ring.dropped() == 0);
  CHECK(pages.ResidentPages(kResidentPages, kPages) == 0);
}

TEST_CASE("a full ring with an overflow still drops and counts", "[ring]") {
  MappedPages pages(kPages);
  const auto capacity = static_cast<uint32_t>(kPages * pages.page_bytes());
  SpscRing ring;
  ring.Init(pages.data(), capacity, nullptr,
            static_cast<uint32_t>(kResidentPages * pages.page_bytes()));
  const uint64_t fits = capacity / kRecordBytes;
  uint64_t pushed = 0;
  for (uint64_t i = 0; i < fits + 100; ++i) pushed += PushAt(ring, i) ? 1 : 0;
  CHECK(pushed <= fits);
  CHECK(ring.dropped() == fits + 100 - pushed);
  CHECK(DrainTimestamps(ring).size() == pushed);
}

}  // namespace
}  // namespace gpuattr::inject
