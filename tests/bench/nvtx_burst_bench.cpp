// NVTX bursts from one thread (issue 21): whether the shim keeps every range when a thread
// sustains a high rate of push+pop pairs, and what a pair costs while it does.
//
// Run by scripts/bench.sh under `gpuattr run` (default flush period), which then reads the
// report's drop counters; they must be 0.
//   - BM_NvtxPaced/<pairs per second>: for 2 s, each 1 ms slot makes its share of pairs, then
//     waits for the slot's end (a thread that does other work between ranges, as the PyTorch
//     annotator's ops mode does). `ns_per_pair` is the time of the pairs alone, steady clock,
//     over all slots; `late_slots` counts the slots whose pairs overran the slot.
//   - BM_NvtxUnpaced/<pairs>: that many pairs back to back, as fast as the thread goes (issue 41:
//     1,000,000 pairs, 48 MB of records in about 80 ms, more than the flush thread and the
//     collector take in that time; the ring's overflow must hold it).
//   - BM_NvtxUnpacedThreads/<pairs per thread>: 64 threads, started together, each making that
//     many pairs back to back.
// Both report the process's memory: `peak_rss_mib` (VmHWM, the rings' overflow in use during the
// burst included) and `rss_after_drain_mib` (VmRSS once the flush thread had 1 s to drain: the
// overflow's pages given back), against `rss_before_mib`.
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// A "VmHWM:" or "VmRSS:" line of /proc/self/status, in MiB; -1 when absent.
double StatusMib(const char* field) {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return -1;
  char line[256];
  double mib = -1;
  const size_t length = std::strlen(field);
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::strncmp(line, field, length) == 0) {
      mib = static_cast<double>(std::strtoull(line + length, nullptr, 10)) / 1024.0;
    }
  }
  std::fclose(status);
  return mib;
}

void MakePairs(int64_t pairs) {
  for (int64_t i = 0; i < pairs; ++i) {
    nvtxRangePushA("burst");
    nvtxRangePop();
  }
}

// The memory counters of the file comment, after the burst.
void CountMemory(benchmark::State& state, double rss_before_mib) {
  state.counters["rss_before_mib"] = rss_before_mib;
  state.counters["peak_rss_mib"] = StatusMib("VmHWM:");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  state.counters["rss_after_drain_mib"] = StatusMib("VmRSS:");
}

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
  const double rss_before_mib = StatusMib("VmRSS:");
  for (auto _ : state) {
    const Clock::time_point before = Clock::now();
    MakePairs(pairs);
    in_pairs += Clock::now() - before;
  }
  state.counters["pairs"] = static_cast<double>(pairs);
  state.counters["ns_per_pair"] =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(in_pairs).count()) /
      static_cast<double>(pairs);
  CountMemory(state, rss_before_mib);
}
BENCHMARK(BM_NvtxUnpaced)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_NvtxUnpacedThreads(benchmark::State& state) {
  constexpr int kThreads = 64;
  const int64_t pairs = state.range(0);
  const double rss_before_mib = StatusMib("VmRSS:");
  for (auto _ : state) {
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(MakePairs, pairs);
    for (std::thread& thread : threads) thread.join();
  }
  state.counters["threads"] = kThreads;
  state.counters["pairs"] = static_cast<double>(pairs * kThreads);
  CountMemory(state, rss_before_mib);
}
BENCHMARK(BM_NvtxUnpacedThreads)->Arg(100000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
