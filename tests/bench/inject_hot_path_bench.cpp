// The shim's cost on the traced process's own threads (issue 8): what an NVTX push+pop pair and a
// kernel launch cost with libgpuattr_inject.so attached, against the same calls without it.
//
// One binary, run by scripts/bench.sh bare, with an empty CUPTI subscriber
// (GPUATTR_BENCH_EMPTY_SUBSCRIBER=1), under `gpuattr run` (which sets NVTX_INJECTION64_PATH,
// CUDA_INJECTION64_PATH and the collector socket), under `gpuattr run` with that empty subscriber
// as a second client sharing CUPTI with the shim (GPUATTR_BENCH_SECOND_CLIENT=1, issue 43), and
// armed. The differences of the medians are the shim's cost.
//   - BM_NvtxPushPop: nvtxRangePushA + nvtxRangePop through the real NVTX3 headers. Bare, NVTX
//     calls a no-op slot; traced, it calls the shim's handlers (one ring write each).
//   - BM_KernelLaunch: the simulated driver's launch path, as simgpu-run drives it: the fake
//   CUPTI's
//     simgpu_api_enter (launch CBID 505, with the nested driver callback) and simgpu_api_exit.
//     Bare, no one subscribed, so CUPTI only counts the correlation id; with the empty subscriber,
//     CUPTI dispatches its four callbacks to a function that returns at once (what CUPTI itself
//     costs any tool); traced, the shim's InitializeInjection subscribed (this program calls it, as
//     the CUDA driver would at cuInit) and its ENTER/EXIT callbacks write ApiEnter/ApiExit into the
//     thread's ring.
// With GPUATTR_BENCH_ATTACH_GATE=FILE (scripts/bench_late_attach.sh, issue 23) the program first
// launches through the fake driver on its main thread, one launch per 100 us, until FILE
// exists: meanwhile `gpuattr attach --pid` loads the shim into it and opens and closes windows
// (each detach finalizes CUPTI at one of those launches); then it runs the benchmarks, so their
// figures are the cost after the last detach.
// Calls are timed in batches that fit the shim's 1 MiB per-thread ring; between batches the timer
// pauses long enough for the flush thread (GPUATTR_FLUSH_MS=1 in the script) to drain it, so the
// measured path is the real write, never the cheaper "ring full, count a drop" path. The script
// checks the report for zero drops.
#include <benchmark/benchmark.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr int kBatch = 4096;  // 4096 launches write ~230 KB into the ring, pairs of ranges ~200 KB
// A fixed count: the pauses are untimed, so letting Google Benchmark grow the count until the
// timed part reaches its minimum would make the cheap bare runs pause for minutes.
constexpr int64_t kIterations = int64_t{1} << 18;
constexpr auto kDrainPause =
    std::chrono::milliseconds(20);  // the collector ingests a batch in ~10 ms

using ApiEnterFn = uint32_t (*)(int, uint32_t, const char*, uint32_t, uint32_t);
using ApiExitFn = void (*)(int);

struct FakeDriver {
  ApiEnterFn api_enter = nullptr;
  ApiExitFn api_exit = nullptr;
};

void EmptyCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// Subscribes EmptyCallback to every runtime and driver API callback, the shim's domains.
bool SubscribeEmptyCallback(void* cupti) {
  using SubscribeFn = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  using EnableDomainFn = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
  auto subscribe = reinterpret_cast<SubscribeFn>(dlsym(cupti, "cuptiSubscribe"));
  auto enable_domain = reinterpret_cast<EnableDomainFn>(dlsym(cupti, "cuptiEnableDomain"));
  CUpti_SubscriberHandle subscriber = nullptr;
  return subscribe != nullptr && enable_domain != nullptr &&
         subscribe(&subscriber, &EmptyCallback, nullptr) == CUPTI_SUCCESS &&
         enable_domain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
         enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS;
}

// Binds the fake CUPTI named by GPUATTR_CUPTI_LIBRARY and, when CUDA_INJECTION64_PATH names an
// injection, initialises it as the CUDA driver does at cuInit; with
// GPUATTR_BENCH_EMPTY_SUBSCRIBER=1, subscribes EmptyCallback instead.
FakeDriver& Driver() {
  static FakeDriver driver = [] {
    FakeDriver d;
    const char* cupti = std::getenv("GPUATTR_CUPTI_LIBRARY");
    void* handle = cupti != nullptr ? dlopen(cupti, RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (handle == nullptr) return d;
    d.api_enter = reinterpret_cast<ApiEnterFn>(dlsym(handle, "simgpu_api_enter"));
    d.api_exit = reinterpret_cast<ApiExitFn>(dlsym(handle, "simgpu_api_exit"));
    if (const char* empty = std::getenv("GPUATTR_BENCH_EMPTY_SUBSCRIBER");
        empty != nullptr && std::strcmp(empty, "1") == 0) {
      if (!SubscribeEmptyCallback(handle)) d.api_enter = nullptr;  // reported as a skip
    } else if (const char* injection = std::getenv("CUDA_INJECTION64_PATH")) {
      if (void* shim = dlopen(injection, RTLD_NOW)) {
        using InitFn = int (*)();
        if (auto init = reinterpret_cast<InitFn>(dlsym(shim, "InitializeInjection"))) init();
      }
      // A second client beside the shim, as torch.profiler is: CUPTI's exports now lead to the
      // shim's multiplexer (issue 43).
      if (const char* second = std::getenv("GPUATTR_BENCH_SECOND_CLIENT");
          second != nullptr && std::strcmp(second, "1") == 0 && !SubscribeEmptyCallback(handle)) {
        d.api_enter = nullptr;  // reported as a skip
      }
    }
    return d;
  }();
  return driver;
}

void PauseForDrain(benchmark::State& state) {
  state.PauseTiming();
  std::this_thread::sleep_for(kDrainPause);
  state.ResumeTiming();
}

void BM_NvtxPushPop(benchmark::State& state) {
  int in_batch = 0;
  for (auto _ : state) {
    nvtxRangePushA("bench_range");
    nvtxRangePop();
    if (++in_batch == kBatch) {
      in_batch = 0;
      PauseForDrain(state);
    }
  }
}
BENCHMARK(BM_NvtxPushPop)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_KernelLaunch(benchmark::State& state) {
  FakeDriver& driver = Driver();
  if (driver.api_enter == nullptr || driver.api_exit == nullptr) {
    state.SkipWithError(
        "GPUATTR_CUPTI_LIBRARY does not name the fake libcupti.so.13, or its subscribe failed");
    return;
  }
  nvtxRangePushA("launching");  // launches carry a path, as in a profiled program
  int in_batch = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(driver.api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                              "_Z6kernelv", 0, 0));
    driver.api_exit(0);
    if (++in_batch == kBatch) {
      in_batch = 0;
      PauseForDrain(state);
    }
  }
  nvtxRangePop();
}
BENCHMARK(BM_KernelLaunch)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly(true);

// GPUATTR_BENCH_ATTACH_GATE (see the header): launches until the gate file exists.
void LaunchUntilAttachGateOpens() {
  const char* gate = std::getenv("GPUATTR_BENCH_ATTACH_GATE");
  if (gate == nullptr) return;
  FakeDriver& driver = Driver();
  while (access(gate, F_OK) != 0) {
    if (driver.api_enter != nullptr && driver.api_exit != nullptr) {
      driver.api_enter(CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "_Z6kernelv", 0, 0);
      driver.api_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

int main(int argc, char** argv) {
  LaunchUntilAttachGateOpens();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
