#include "analysis/backward_threads.h"

#include <algorithm>
#include <optional>

namespace gpuattr::collector {

BackwardThreads::BackwardThreads(const TraceData& data, PhaseFold& phases)
    : data_(data), phases_(phases), history_(data) {}

bool BackwardThreads::InBackward(uint32_t tid, uint64_t t) {
  if (!data_.main_tid || tid == *data_.main_tid) return false;
  const std::optional<uint64_t> step_start = history_.OutermostStartAt(*data_.main_tid, t);
  if (!step_start) return false;
  const std::vector<uint64_t>& starts = Scan(tid).backward_starts_ns;
  auto after = std::upper_bound(starts.begin(), starts.end(), t);
  return after != starts.begin() && *std::prev(after) >= *step_start;
}

const BackwardThreads::ThreadScan& BackwardThreads::Scan(uint32_t tid) {
  ThreadScan& scan = threads_[tid];
  auto it = data_.history.find(tid);
  if (it == data_.history.end()) return scan;
  const auto& entries = it->second;
  for (; scan.entries_read < entries.size(); ++scan.entries_read) {
    const HistoryEntry& entry = entries[scan.entries_read];
    if (phases_.PhaseOf(entry.node) == Phase::kBackward) {
      scan.backward_starts_ns.push_back(entry.start_ns);
    }
  }
  return scan;
}

}  // namespace gpuattr::collector
