// NVTX bursts from one thread (issue 21): whether the shim keeps every range when a thread
// sustains a high rate of push+pop pairs, and what a pair costs while it does.
//
// Run by scripts/bench.sh under `gpuattr run` (default flush period), which then reads the
// report's drop counters; they must be 0.
//   - BM_NvtxPaced/<pairs per second>: for 2 s, each 1 ms slot makes its share of pairs, then
//     waits for the slot's end (a thread that does other work between ranges, as the PyTorch
//     annotator's ops mode does). `ns_per_pair` is the time of the pairs alone, steady clock,
//     over all slots; `late_slots` counts the slots whose pairs overran the slot.
//   - BM_NvtxUnpaced/<pairs>: that many pairs back to back, as fast as the thread goes (the burst
//     that once overflowed a 4 MiB ring: 200,000 pairs in 80 ms).
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdint>

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kSlot = std::chrono::milliseconds(1);
constexpr auto kDuration = std::chrono::seconds(2);

void BM_NvtxPaced(benchmark::State& state) {
  const int64_t pairs_per_slot = state.range(0) / 1000;
  int64_t pairs = 0;
  int64_t late_slots = 0;
  Clock::duration in_pairs{};
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    for (Clock::time_point slot = start; slot < start + kDuration; slot += kSlot) {
      const Clock::time_point before = Clock::now();
      for (int64_t i = 0; i < pairs_per_slot; ++i) {
        nvtxRangePushA("burst");
        nvtxRangePop();
      }
      const Clock::time_point after = Clock::now();
      in_pairs += after - before;
      pairs += pairs_per_slot;
      if (after > slot + kSlot) ++late_slots;
      while (Clock::now() < slot + kSlot) {
      }
    }
  }
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["late_slots"] = static_cast<double>(late_slots);
  state.counters["ns_per_pair"] =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(in_pairs).count()) /
      static_cast<double>(pairs);
}
BENCHMARK(BM_NvtxPaced)->Arg(1000000)->Arg(2500000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_NvtxUnpaced(benchmark::State& state) {
  const int64_t pairs = state.range(0);
  Clock::duration in_pairs{};
  for (auto _ : state) {
    const Clock::time_point before = Clock::now();
    for (int64_t i = 0; i < pairs; ++i) {
      nvtxRangePushA("burst");
      nvtxRangePop();
    }
    in_pairs += Clock::now() - before;
  }
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["ns_per_pair"] =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(in_pairs).count()) /
      static_cast<double>(pairs);
}
BENCHMARK(BM_NvtxUnpaced)->Arg(200000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
