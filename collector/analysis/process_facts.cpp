#include "analysis/process_facts.h"

#include <algorithm>

#include "analysis/refusal_catalogue.h"

namespace gpuattr::collector {
namespace {

std::vector<ProcessRefusal> Refusals(const TraceData& data, bool measured) {
  std::vector<ProcessRefusal> refusals;
  for (const wire::Refusal& refusal : data.refusals) {
    refusals.push_back({&RefusalForWireCode(refusal.code),
                        refusal.cause_string ? StringOr(data, refusal.cause_string) : "",
                        refusal.cupti_result});
  }
  if (!data.cupti_state && !measured) {
    refusals.push_back({&CudaNotInitializedRefusal(), "", 0});
  } else if (data.cupti_state && data.cupti_state->result != 0 && data.refusals.empty()) {
    refusals.push_back(
        {&RefusalForWireCode(static_cast<uint32_t>(wire::RefusalCode::kCuptiUnavailable)),
         "CuptiState without a Refusal record", data.cupti_state->result});
  }
  return refusals;
}

ProcessStatus StatusOf(const TraceData& data, bool measured) {
  if (!measured) return ProcessStatus::kRefused;
  const bool fatal =
      std::any_of(data.refusals.begin(), data.refusals.end(), [](const wire::Refusal& r) {
        return r.code == static_cast<uint32_t>(wire::RefusalCode::kCuptiFatalError);
      });
  const bool ended = data.window_stream() ? data.window_end.has_value() : data.goodbye.has_value();
  return !ended || fatal ? ProcessStatus::kTruncated : ProcessStatus::kComplete;
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
  analysis.status = StatusOf(data, analysis.device_measured);
  analysis.goodbye = data.goodbye.has_value();
  analysis.refusals = Refusals(data, analysis.device_measured);
  Loss& loss = analysis.loss;
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
  if (data.window_stream()) analysis.window = CaptureWindow{data.window_begin, data.window_end};
}

}  // namespace gpuattr::collector
