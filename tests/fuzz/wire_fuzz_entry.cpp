#include "wire_fuzz_entry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "analysis/process_trace.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "views/run_summary.h"

namespace gpuattr::fuzz {

bool ConsumeWireBytes(const uint8_t* data, size_t size) {
  using namespace collector;
  ProcessTrace trace;
  bool accepted = true;
  size_t at = 0;
  while (at + sizeof(uint32_t) <= size) {
    uint32_t length = 0;
    std::memcpy(&length, data + at, sizeof(length));  // little-endian hosts only, like the wire
    at += sizeof(length);
    length = static_cast<uint32_t>(std::min<size_t>(length, size - at));
    const Status status = trace.ConsumeMessage(data + at, length);
    at += length;
    if (!status.ok()) {
      if (status.code() != StatusCode::kDataLoss) {
        std::fprintf(stderr, "ConsumeMessage failed with a non-data error: %s\n",
                     status.message().c_str());
        std::abort();
      }
      accepted = false;
      break;
    }
  }
  trace.Finish();
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.processes.push_back(trace.TakeAnalysis());
  const Report report = BuildReport(inputs);
  if (!report.without_step_rows.is_object()) std::abort();
  if (RenderSummary(report.without_step_rows).empty()) std::abort();
  if (SerializeReport(report).empty()) std::abort();
  return accepted;
}

std::vector<uint8_t> FrameDatagrams(const std::vector<std::vector<uint8_t>>& datagrams) {
  std::vector<uint8_t> framed;
  for (const auto& datagram : datagrams) {
    const auto length = static_cast<uint32_t>(datagram.size());
    const auto* length_bytes = reinterpret_cast<const uint8_t*>(&length);
    framed.insert(framed.end(), length_bytes, length_bytes + sizeof(length));
    framed.insert(framed.end(), datagram.begin(), datagram.end());
  }
  return framed;
}

}  // namespace gpuattr::fuzz
