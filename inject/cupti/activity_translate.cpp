#include "cupti/activity_translate.h"

#include <algorithm>

#include "wire/codec.h"

namespace gpuattr::inject {
namespace {

template <typename Body>
void AppendRecord(std::vector<uint8_t>* out, const Body& body) {
  const size_t at = out->size();
  out->resize(at + wire::PaddedRecordBytes(sizeof(Body)));
  wire::EncodeRecord(out->data() + at, wire::RecordTypeOf<Body>::kType, body);
}

uint32_t NonNegative(int32_t value) noexcept {
  return value < 0 ? 0u : static_cast<uint32_t>(value);
}

}  // namespace

wire::Kernel TranslateKernel(const CUpti_ActivityKernel10& kernel, uint32_t name_string) noexcept {
  wire::Kernel out{};
  out.start_ns = kernel.start;
  out.end_ns = kernel.end;
  out.graph_node_id = kernel.graphNodeId;
  out.correlation_id = kernel.correlationId;
  out.name_string = name_string;
  out.device = kernel.deviceId;
  out.stream = kernel.streamId;
  out.context = kernel.contextId;
  out.graph_id = kernel.graphId;
  out.grid[0] = NonNegative(kernel.gridX);
  out.grid[1] = NonNegative(kernel.gridY);
  out.grid[2] = NonNegative(kernel.gridZ);
  out.block[0] = NonNegative(kernel.blockX);
  out.block[1] = NonNegative(kernel.blockY);
  out.block[2] = NonNegative(kernel.blockZ);
  out.shared_memory_bytes =
      NonNegative(kernel.staticSharedMemory) + NonNegative(kernel.dynamicSharedMemory);
  out.registers_per_thread = kernel.registersPerThread;
  return out;
}

namespace {

// The fields CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 share, by name.
template <typename CuptiMemcpy>
wire::Memcpy TranslateCommonMemcpy(const CuptiMemcpy& memcpy) noexcept {
  wire::Memcpy out{};
  out.start_ns = memcpy.start;
  out.end_ns = memcpy.end;
  out.bytes = memcpy.bytes;
  out.graph_node_id = memcpy.graphNodeId;
  out.correlation_id = memcpy.correlationId;
  out.device = memcpy.deviceId;
  out.stream = memcpy.streamId;
  out.context = memcpy.contextId;
  out.graph_id = memcpy.graphId;
  out.copy_kind = memcpy.copyKind;
  out.src_kind = memcpy.srcKind;
  out.dst_kind = memcpy.dstKind;
  return out;
}

}  // namespace

wire::Memcpy TranslateMemcpy(const CUpti_ActivityMemcpy6& memcpy) noexcept {
  wire::Memcpy out = TranslateCommonMemcpy(memcpy);
  out.src_device = memcpy.deviceId;
  out.dst_device = memcpy.deviceId;
  out.peer = 0;
  return out;
}

wire::Memcpy TranslatePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& memcpy) noexcept {
  wire::Memcpy out = TranslateCommonMemcpy(memcpy);
  out.src_device = memcpy.srcDeviceId;
  out.dst_device = memcpy.dstDeviceId;
  out.peer = 1;
  return out;
}

wire::Memset TranslateMemset(const CUpti_ActivityMemset4& memset) noexcept {
  wire::Memset out{};
  out.start_ns = memset.start;
  out.end_ns = memset.end;
  out.bytes = memset.bytes;
  out.graph_node_id = memset.graphNodeId;
  out.correlation_id = memset.correlationId;
  out.device = memset.deviceId;
  out.stream = memset.streamId;
  out.context = memset.contextId;
  out.graph_id = memset.graphId;
  out.value = memset.value;
  return out;
}

TranslateCounts TranslateBuffer(const CuptiApi& api, uint8_t* buffer, size_t valid_size,
                                NameInterner& interner, std::vector<uint8_t>* out) {
  TranslateCounts counts;
  if (buffer == nullptr || valid_size == 0) return counts;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult result = api.cuptiActivityGetNextRecord(buffer, valid_size, &record);
    // MAX_LIMIT_REACHED is the normal end; INVALID_KIND (a kind this CUPTI cannot size) also
    // ends the walk, as in NVIDIA's samples: the rest of the buffer cannot be stepped over.
    if (result != CUPTI_SUCCESS) break;
    uint64_t start = 0;
    uint64_t end = 0;
    uint32_t correlation = 0;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        const uint32_t name = kernel->name != nullptr ? interner.Intern(kernel->name) : 0;
        const wire::Kernel body = TranslateKernel(*kernel, name);
        AppendRecord(out, body);
        start = body.start_ns;
        end = body.end_ns;
        correlation = body.correlation_id;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const wire::Memcpy body =
            TranslateMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
        AppendRecord(out, body);
        start = body.start_ns;
        end = body.end_ns;
        correlation = body.correlation_id;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const wire::Memcpy body =
            TranslatePeerMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
        AppendRecord(out, body);
        start = body.start_ns;
        end = body.end_ns;
        correlation = body.correlation_id;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const wire::Memset body =
            TranslateMemset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
        AppendRecord(out, body);
        start = body.start_ns;
        end = body.end_ns;
        correlation = body.correlation_id;
        break;
      }
      case CUPTI_ACTIVITY_KIND_DEVICE: {
        const auto* device = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
        const uint32_t name = device->name != nullptr ? interner.Intern(device->name) : 0;
        AppendRecord(out, wire::Device{device->id, name});
        ++counts.translated;
        continue;  // not a timed activity
      }
      default:
        ++counts.untranslated;
        continue;
    }
    ++counts.translated;
    if (start == 0 && end == 0) {
      ++counts.incomplete;
    } else {
      counts.last_complete_correlation = std::max(counts.last_complete_correlation, correlation);
    }
  }
  return counts;
}

}  // namespace gpuattr::inject
