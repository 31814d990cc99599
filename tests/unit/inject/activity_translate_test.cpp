// Activity translation from real CUDA 13.0 record structs packed in a buffer, walked through a
// test double of cuptiActivityGetNextRecord installed in the CuptiApi table (the seam).
#include "cupti/activity_translate.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "wire/protocol.h"

namespace gpuattr::inject {
namespace {

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return sizeof(CUpti_ActivityAPI);
    default:
      return 0;
  }
}

// Stateless like the real one (cupti-notes §8.2): NULL yields the first record; the end, or a
// truncated record, yields MAX_LIMIT_REACHED with *record unchanged; kind 0 is INVALID_KIND.
CUptiResult CUPTIAPI FakeGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) +
             RecordSize((*record)->kind);
  }
  if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = RecordSize(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

class MapInterner final : public NameInterner {
 public:
  uint32_t Intern(std::string_view name) override {
    auto [it, inserted] = ids_.emplace(std::string(name), static_cast<uint32_t>(ids_.size() + 1));
    return it->second;
  }
  std::map<std::string, uint32_t> ids_;
};

class BufferBuilder {
 public:
  template <typename Record>
  BufferBuilder& Add(const Record& record) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(Record));
    std::memcpy(bytes_.data() + at, &record, sizeof(Record));
    return *this;
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

struct Decoded {
  std::vector<wire::RecordType> types;
  std::vector<std::vector<uint8_t>> bodies;

  template <typename Body>
  Body At(size_t i) const {
    Body out;
    REQUIRE(bodies.at(i).size() >= sizeof(Body));
    std::memcpy(&out, bodies[i].data(), sizeof(Body));
    return out;
  }
};

Decoded Decode(const std::vector<uint8_t>& encoded) {
  Decoded out;
  for (size_t at = 0; at < encoded.size();) {
    wire::RecordHeader header;
    std::memcpy(&header, encoded.data() + at, sizeof(header));
    REQUIRE(header.size % 8 == 0);
    REQUIRE(header.size >= sizeof(header));
    out.types.push_back(static_cast<wire::RecordType>(header.type));
    out.bodies.emplace_back(encoded.begin() + static_cast<std::ptrdiff_t>(at + sizeof(header)),
                            encoded.begin() + static_cast<std::ptrdiff_t>(at + header.size));
    at += header.size;
  }
  return out;
}

CUpti_ActivityKernel10 MakeKernel() {
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = 1000;
  kernel.end = 1500;
  kernel.deviceId = 1;
  kernel.contextId = 2;
  kernel.streamId = 7;
  kernel.gridX = 80;
  kernel.gridY = 2;
  kernel.gridZ = 1;
  kernel.blockX = 256;
  kernel.blockY = 1;
  kernel.blockZ = 1;
  kernel.staticSharedMemory = 1024;
  kernel.dynamicSharedMemory = 2048;
  kernel.registersPerThread = 64;
  kernel.correlationId = 42;
  kernel.name = "_Z4gemmPfS_";
  kernel.graphNodeId = 0x100000001ull;
  kernel.graphId = 9;
  return kernel;
}

TEST_CASE("kernel, memcpy, peer memcpy and memset records translate field by field",
          "[translate]") {
  CUpti_ActivityMemcpy6 memcpy_record{};
  memcpy_record.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  memcpy_record.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  memcpy_record.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  memcpy_record.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  memcpy_record.bytes = 1 << 20;
  memcpy_record.start = 2000;
  memcpy_record.end = 2400;
  memcpy_record.deviceId = 1;
  memcpy_record.streamId = 3;
  memcpy_record.correlationId = 43;

  CUpti_ActivityMemcpyPtoP4 peer{};
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  peer.bytes = 4096;
  peer.start = 3000;
  peer.end = 3100;
  peer.deviceId = 0;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  peer.correlationId = 44;

  CUpti_ActivityMemset4 memset_record{};
  memset_record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  memset_record.value = 0xAB;
  memset_record.bytes = 512;
  memset_record.start = 4000;
  memset_record.end = 4010;
  memset_record.streamId = 5;
  memset_record.correlationId = 45;

  BufferBuilder buffer;
  buffer.Add(MakeKernel()).Add(memcpy_record).Add(peer).Add(memset_record);
  CuptiApi api;
  api.cuptiActivityGetNextRecord = &FakeGetNextRecord;
  MapInterner names;
  std::vector<uint8_t> out;
  const TranslateCounts counts =
      TranslateBuffer(api, buffer.bytes().data(), buffer.bytes().size(), names, &out);
  CHECK(counts.translated == 4);
  CHECK(counts.untranslated == 0);
  CHECK(counts.incomplete == 0);
  CHECK(counts.last_complete_correlation == 45);

  const Decoded decoded = Decode(out);
  REQUIRE(decoded.types ==
          std::vector<wire::RecordType>{wire::RecordType::kKernel, wire::RecordType::kMemcpy,
                                        wire::RecordType::kMemcpy, wire::RecordType::kMemset});
  const auto kernel = decoded.At<wire::Kernel>(0);
  CHECK(kernel.start_ns == 1000);
  CHECK(kernel.end_ns == 1500);
  CHECK(kernel.correlation_id == 42);
  CHECK(kernel.name_string == names.ids_.at("_Z4gemmPfS_"));
  CHECK(kernel.device == 1);
  CHECK(kernel.context == 2);
  CHECK(kernel.stream == 7);
  CHECK(kernel.grid[0] == 80);
  CHECK(kernel.grid[1] == 2);
  CHECK(kernel.block[0] == 256);
  CHECK(kernel.shared_memory_bytes == 3072);
  CHECK(kernel.registers_per_thread == 64);
  CHECK(kernel.graph_node_id == 0x100000001ull);
  CHECK(kernel.graph_id == 9);

  const auto copy = decoded.At<wire::Memcpy>(1);
  CHECK(copy.bytes == (1u << 20));
  CHECK(copy.correlation_id == 43);
  CHECK(copy.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(copy.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK(copy.src_device == 1);
  CHECK(copy.peer == 0);

  const auto peer_copy = decoded.At<wire::Memcpy>(2);
  CHECK(peer_copy.peer == 1);
  CHECK(peer_copy.src_device == 0);
  CHECK(peer_copy.dst_device == 1);
  CHECK(peer_copy.correlation_id == 44);

  const auto set = decoded.At<wire::Memset>(3);
  CHECK(set.value == 0xAB);
  CHECK(set.bytes == 512);
  CHECK(set.stream == 5);
  CHECK(set.end_ns == 4010);
}

TEST_CASE(
    "zero-timestamp records are kept and counted (not complete), other kinds are counted only",
    "[translate]") {
  CUpti_ActivityKernel10 unfinished = MakeKernel();
  unfinished.start = 0;
  unfinished.end = 0;
  unfinished.correlationId = MakeKernel().correlationId + 1;  // the latest launch
  CUpti_ActivityAPI api_record{};
  api_record.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api_record.correlationId = 42;
  CUpti_ActivityDevice5 device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.id = 3;
  device.name = "NVIDIA H200";

  BufferBuilder buffer;
  buffer.Add(unfinished).Add(api_record).Add(device).Add(MakeKernel());
  CuptiApi api;
  api.cuptiActivityGetNextRecord = &FakeGetNextRecord;
  MapInterner names;
  std::vector<uint8_t> out;
  const TranslateCounts counts =
      TranslateBuffer(api, buffer.bytes().data(), buffer.bytes().size(), names, &out);
  CHECK(counts.translated == 3);
  CHECK(counts.untranslated == 1);
  CHECK(counts.incomplete == 1);
  // An unfinished record has not come back yet: the last complete one is the older kernel.
  CHECK(counts.last_complete_correlation == MakeKernel().correlationId);
  const Decoded decoded = Decode(out);
  REQUIRE(decoded.types.size() == 3);
  CHECK(decoded.At<wire::Kernel>(0).start_ns == 0);
  CHECK(decoded.types[1] == wire::RecordType::kDevice);
  CHECK(decoded.At<wire::Device>(1).device == 3);
  CHECK(decoded.At<wire::Device>(1).name_string == names.ids_.at("NVIDIA H200"));
  CHECK(decoded.At<wire::Kernel>(2).start_ns == 1000);
}

TEST_CASE("a truncated last record and an empty buffer translate nothing more", "[translate]") {
  BufferBuilder buffer;
  buffer.Add(MakeKernel()).Add(MakeKernel());
  CuptiApi api;
  api.cuptiActivityGetNextRecord = &FakeGetNextRecord;
  MapInterner names;
  std::vector<uint8_t> out;
  const size_t truncated = buffer.bytes().size() - 8;
  CHECK(TranslateBuffer(api, buffer.bytes().data(), truncated, names, &out).translated == 1);
  out.clear();
  CHECK(TranslateBuffer(api, buffer.bytes().data(), 0, names, &out).translated == 0);
  CHECK(out.empty());
}

}  // namespace
}  // namespace gpuattr::inject
