#include "sim_clock.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gpuattr::simgpu {
namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Simulated time; 0 until first read. Constant-initialised: the shim may read it before main.
std::atomic<uint64_t> simulated_ns{0};

uint64_t SimulatedNow() {
  uint64_t now = simulated_ns.load(std::memory_order_acquire);
  if (now == 0) {
    const uint64_t start = MonotonicNs();
    simulated_ns.compare_exchange_strong(now, start, std::memory_order_acq_rel);
    now = simulated_ns.load(std::memory_order_acquire);
  }
  return now;
}

void Advance(uint64_t ns) { simulated_ns.store(SimulatedNow() + ns, std::memory_order_release); }

}  // namespace

bool SimClock::Simulated() {
  static const bool simulated = [] {
    const char* mode = std::getenv("SIMGPU_CLOCK");
    return mode != nullptr && std::strcmp(mode, "simulated") == 0;
  }();
  return simulated;
}

uint64_t SimClock::Now() { return Simulated() ? SimulatedNow() : MonotonicNs(); }

void SimClock::Spend(uint64_t ns) {
  if (Simulated()) {
    Advance(ns);
    return;
  }
  const uint64_t until = MonotonicNs() + ns;
  while (MonotonicNs() < until) {
  }
}

void SimClock::WaitUntil(uint64_t t) {
  if (Simulated()) {
    const uint64_t now = SimulatedNow();
    if (t > now) Advance(t - now);
    return;
  }
  for (uint64_t now = MonotonicNs(); now < t; now = MonotonicNs()) {
    const uint64_t wait = std::min<uint64_t>(t - now, 50000000);
    timespec ts{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    nanosleep(&ts, nullptr);
  }
}

void SimClock::HostCall() {
  if (Simulated()) Advance(kHostCallNs);
}

}  // namespace gpuattr::simgpu

extern "C" uint64_t (*gpuattr_host_clock(void))(void) {
  using gpuattr::simgpu::SimClock;
  return SimClock::Simulated() ? &SimClock::Now : nullptr;
}
