#include "analysis/host_range_fold.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuattr::collector {

void HostRangeFold::FoldClosed(const std::function<void(const HostRange&)>& closed) {
  const uint64_t available = data_.host_ranges_dropped + data_.host_ranges.size();
  while (folded_ < available) {
    const HostRange& range =
        data_.host_ranges[static_cast<size_t>(folded_++ - data_.host_ranges_dropped)];
    if (range.node == 0) continue;
    durations_[range.node].Add(range.end_ns - range.start_ns);
    if (closed) closed(range);
  }
}

void HostRangeFold::FinishSpansAndMarks(ProcessAnalysis& analysis) const {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> spans;
  for (const SpanRange& span : data_.spans) {
    spans[{span.name_string, span.domain_string}].push_back(span.end_ns - span.start_ns);
  }
  auto domain = [&](uint32_t id) -> std::optional<std::string> {
    if (id == 0) return std::nullopt;
    return StringOr(data_, id);
  };
  for (auto& [key, durations] : spans) {
    analysis.ranges.push_back(
        {StringOr(data_, key.first), domain(key.second), Summarize(durations)});
  }
  for (const auto& [key, count] : data_.marks) {
    analysis.marks.push_back({StringOr(data_, key.first), domain(key.second), count});
  }
}

}  // namespace gpuattr::collector
