#include "analysis/process_facts.h"

#include <algorithm>
#include <utility>

#include "analysis/refusal_catalogue.h"

namespace gpuattr::collector {
namespace {

bool LateAttach(const TraceData& data) {
  return data.window_begin && (data.window_begin_flags & wire::kWindowBeginFlagLateAttach) != 0;
}

std::vector<ProcessRefusal> Refusals(const TraceData& data) {
  std::vector<ProcessRefusal> refusals;
  for (const wire::Refusal& refusal : data.refusals) {
    refusals.push_back({&RefusalForWireCode(refusal.code),
                        refusal.cause_string ? StringOr(data, refusal.cause_string) : "",
                        refusal.cupti_result});
  }
  if (data.cupti_state && data.cupti_state->result != 0 && data.refusals.empty()) {
    refusals.push_back(
        {&RefusalForWireCode(static_cast<uint32_t>(wire::RefusalCode::kCuptiUnavailable)),
         "CuptiState without a Refusal record", data.cupti_state->result});
  }
  return refusals;
}

void AddLateAttachRefusals(const TraceData& data, std::vector<ProcessRefusal>& refusals) {
  const std::string how = "the shim was loaded into the running process by gpuattr attach";
  refusals.push_back({&NvtxBoundBeforeAttachRefusal(), how, 0});
  refusals.push_back({&LaunchesInFlightAtAttachRefusal(), how, 0});
  if ((data.window_begin_flags & wire::kWindowBeginFlagTorchLoaded) != 0) {
    refusals.push_back({&PytorchAnnotatorRequiresStartRefusal(),
                        "torch's Python bindings (libtorch_python) are loaded in the process", 0});
  }
}

bool StreamEnded(const TraceData& data) {
  return data.window_stream() ? data.window_end.has_value() : data.goodbye.has_value();
}

ProcessStatus StatusOf(const TraceData& data, bool measured, bool refused) {
  const bool fatal =
      std::any_of(data.refusals.begin(), data.refusals.end(), [](const wire::Refusal& r) {
        return r.code == static_cast<uint32_t>(wire::RefusalCode::kCuptiFatalError);
      });
  if (!StreamEnded(data) || fatal) return ProcessStatus::kTruncated;
  if (measured) return ProcessStatus::kComplete;
  return refused ? ProcessStatus::kRefused : ProcessStatus::kHostOnly;
}

}  // namespace

void AddProcessFacts(const TraceData& data, ProcessAnalysis& analysis) {
  if (data.hello) {
    const wire::Hello& hello = *data.hello;
    ProcessIdentity& process = analysis.process.emplace();
    process.pid = hello.pid;
    process.ppid = hello.ppid;
    process.rank = hello.rank;
    process.local_rank = hello.local_rank;
    if (hello.exe_string) process.exe = StringOr(data, hello.exe_string);
    process.monotonic_ns = hello.monotonic_ns;
    process.realtime_ns = hello.realtime_ns;
  }
  analysis.goodbye = data.goodbye.has_value();
  analysis.refusals = Refusals(data);
  analysis.status = StatusOf(data, analysis.device_measured, !analysis.refusals.empty());
  // What a late attach cannot know is said, never left a silent gap; it refuses parts of the
  // picture, not device time, so the status stands.
  if (LateAttach(data)) AddLateAttachRefusals(data, analysis.refusals);
  Loss& loss = analysis.loss;
  if (!StreamEnded(data)) {
    LostSpan& lost = loss.lost_span.emplace();
    lost.from_ns = data.last_timestamp_ns;
    if (data.closed_ns && *data.closed_ns >= lost.from_ns) lost.to_ns = data.closed_ns;
  }
  loss.shim = data.diagnostics;
  loss.lost_messages = data.lost_messages;
  loss.sequence_regressions = data.sequence_regressions;
  loss.unmatched_pops = data.unmatched_pops;
  loss.implicitly_closed_ranges = data.implicitly_closed;
  loss.unclosed_ranges = data.unclosed_ranges;
  loss.unmatched_range_ends = data.unmatched_range_ends;
  loss.unknown_records = data.unknown_records;
  if (data.diagnostics) {
    const wire::Diagnostics& d = *data.diagnostics;
    loss.dropped_records =
        d.ring_dropped_records + d.socket_dropped_records + d.cupti_dropped_records;
  }
  for (const auto& [tid, name] : data.thread_names) {
    analysis.threads.push_back({tid, StringOr(data, name)});
  }
  if (data.window_stream()) {
    analysis.window = CaptureWindow{data.window_begin, LateAttach(data), data.window_end};
  }
}

void AddOutsideRefusal(const RefusalEntry& refusal, std::string seen, ProcessAnalysis& analysis) {
  if (analysis.device_measured) return;
  analysis.refusals.push_back({&refusal, std::move(seen), 0});
  if (analysis.status == ProcessStatus::kHostOnly) analysis.status = ProcessStatus::kRefused;
}

}  // namespace gpuattr::collector
