#include "cupti/mux_records.h"

#include <cmath>

namespace gpuattr::inject {
namespace {

template <typename Record>
Record* As(CUpti_Activity* record) {
  return reinterpret_cast<Record*>(record);
}
template <typename Record>
const Record* As(const CUpti_Activity* record) {
  return reinterpret_cast<const Record*>(record);
}

// CUPTI_TIMESTAMP_UNKNOWN (0) stays unknown. By value: the record structs are packed.
uint64_t Mapped(uint64_t time, const ClockMap& clock) { return time != 0 ? clock.Map(time) : 0; }

template <typename Record>
void MapStartEnd(Record* record, const ClockMap& clock) {
  record->start = Mapped(record->start, clock);
  record->end = Mapped(record->end, clock);
}

}  // namespace

uint64_t ClockMap::Map(uint64_t ours) const noexcept {
  if (identity) return ours;
  const int64_t since = static_cast<int64_t>(ours - anchor_ours);
  if (rate == 1.0) return anchor_theirs + static_cast<uint64_t>(since);
  return anchor_theirs + static_cast<uint64_t>(std::llround(static_cast<double>(since) * rate));
}

bool CorrelationOf(const CUpti_Activity* record, uint32_t* correlation) noexcept {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      *correlation = As<CUpti_ActivityKernel10>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      *correlation = As<CUpti_ActivityMemcpy6>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      *correlation = As<CUpti_ActivityMemcpyPtoP4>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      *correlation = As<CUpti_ActivityMemset4>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      *correlation = As<CUpti_ActivityAPI>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      *correlation = As<CUpti_ActivitySynchronization2>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      *correlation = As<CUpti_ActivityExternalCorrelation>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      *correlation = As<CUpti_ActivityCudaEvent2>(record)->correlationId;
      return true;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      *correlation = As<CUpti_ActivityGraphTrace2>(record)->correlationId;
      return true;
    default:
      return false;
  }
}

void MapRecordTimes(CUpti_Activity* record, const ClockMap& clock) noexcept {
  if (clock.identity) return;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* kernel = As<CUpti_ActivityKernel10>(record);
      MapStartEnd(kernel, clock);
      kernel->completed = Mapped(kernel->completed, clock);
      kernel->queued = Mapped(kernel->queued, clock);
      kernel->submitted = Mapped(kernel->submitted, clock);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return MapStartEnd(As<CUpti_ActivityMemcpy6>(record), clock);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return MapStartEnd(As<CUpti_ActivityMemcpyPtoP4>(record), clock);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return MapStartEnd(As<CUpti_ActivityMemset4>(record), clock);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return MapStartEnd(As<CUpti_ActivityAPI>(record), clock);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return MapStartEnd(As<CUpti_ActivitySynchronization2>(record), clock);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return MapStartEnd(As<CUpti_ActivityGraphTrace2>(record), clock);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return MapStartEnd(As<CUpti_ActivityOverhead3>(record), clock);
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* marker = As<CUpti_ActivityMarker2>(record);
      marker->timestamp = Mapped(marker->timestamp, clock);
      return;
    }
    default:
      return;
  }
}

}  // namespace gpuattr::inject
