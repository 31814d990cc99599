// TraceBuilder: the decoding stage of a ProcessTrace. It checks each validated datagram against
// the protocol (a Hello first, once; a stream a trace reads), accounts its sequence number, and
// applies its records: definitions, host events and state to TraceData, launches to the
// LaunchJoin, device activities to the ReorderWindow.
//
// Nothing here is trusted to be consistent (trace_data.h): pops may not match pushes, ids may be
// undefined; every irregularity is counted, none is fatal. A datagram that breaks the protocol is
// refused whole (kDataLoss) before any of its records is applied.
//
// Single-threaded, owned by one ProcessTrace (the ingest thread while its connection lives).
#ifndef GPUATTR_COLLECTOR_ANALYSIS_TRACE_BUILDER_H_
#define GPUATTR_COLLECTOR_ANALYSIS_TRACE_BUILDER_H_

#include <cstdint>

#include "analysis/launch_join.h"
#include "analysis/reorder_window.h"
#include "analysis/trace_data.h"
#include "base/status.h"
#include "wire/codec.h"

namespace gpuattr::collector {

// The Hello's own checks (magic, protocol version, a known mode), as one message each; the
// daemon's checks of a connection's first record are these too.
Status HelloStatus(const wire::Hello& hello);

class TraceBuilder {
 public:
  // All must outlive this.
  TraceBuilder(TraceData& data, LaunchJoin& launches, ReorderWindow& window)
      : data_(data), launches_(launches), window_(window) {}
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;

  // One datagram `reader` has validated (Open succeeded, positioned at its first record):
  // kDataLoss, applying nothing, when it breaks the protocol; else its records are applied.
  Status Consume(wire::MessageReader& reader);

  // The stream ended, its connection closed at `closed_ns` (the shim's clock; empty when not
  // known): open ranges close at the last timestamp (traced streams), or are left open (a
  // capture window's: they end after the window).
  void Finish(std::optional<uint64_t> closed_ns);

 private:
  Status CheckProtocol(wire::MessageReader& reader) const;
  void Apply(const wire::RecordView& record);
  void ApplyDefinition(const wire::RecordView& record);
  void ApplyHostEvent(const wire::RecordView& record);
  void ApplyDeviceWork(const wire::RecordView& record);
  void ApplyState(const wire::RecordView& record);
  void PushRange(const wire::RangeEvent& event, uint16_t flags);
  void PopRange(const wire::RangeEvent& event);
  void AddActivity(const ActivityRecord& activity);
  uint32_t InternShape(const wire::Kernel& kernel);
  void SeeTimestamp(uint64_t ns);
  void SeeActivityTimestamp(uint64_t ns);

  TraceData& data_;
  LaunchJoin& launches_;
  ReorderWindow& window_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_TRACE_BUILDER_H_
