// gpu_probe: the CUDA half of the real-GPU validation kit (docs/gpu-validation.md).
//
// One program, one subcommand per launch path the shim must see on a real device:
//   chevron   <<<>>> launches                    runtime  explicit cudaLaunchKernel
//   driver    cuLaunchKernel (libcuda, dlopen)   streams  two overlapping streams
//   memcpy    pageable and pinned H2D/D2H         memset   cudaMemsetAsync
//   graph     capture, instantiate, replay x100   nvtx     NVTX ranges on two threads
//   steps     50 measured steps after warm-up (per-step overhead), all  every subcommand but steps
// Each prints its own truth as one JSON object on stdout: per operation the kernel name (the
// family gpuattr must derive), the NVTX path open at launch, the stream, the count and the device
// time measured with cudaEvents around it. Every kernel has its own name so that the families in a
// gpuattr report map one-to-one onto these records.
//
// Threads: main thread, plus two workers in `nvtx` (each owns its stream and its truth record;
// joined before printing). No shared mutable state across threads.
// Exit status: 0 ok, 2 usage, 3 no CUDA device or driver (message on stderr), 1 any CUDA error.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "probe_support.h"

namespace {

using gpuattr::gpu_tier::DriverSymbol;
using gpuattr::gpu_tier::JsonQuote;
using gpuattr::gpu_tier::LaunchKernelFn;

constexpr int kExitNoDevice = 3;
constexpr int kElems = 1 << 22;  // 16 MiB of floats: each kernel runs tens of microseconds.
constexpr int kBlock = 256;
constexpr int kGrid = (kElems + kBlock - 1) / kBlock;

#define GPUATTR_CHECK(call)                                                                \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "gpu_probe: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

__global__ void probe_chevron_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 1.0001f + 1.0f;
}
__global__ void probe_runtime_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.9999f + 2.0f;
}
__global__ void probe_driver_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 1.0002f - 1.0f;
}
// Long enough (a spin of `iters`) that launches on two streams visibly overlap.
__global__ void probe_stream_kernel(float* data, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = data[i];
  for (int k = 0; k < iters; ++k) v = v * 0.999f + 0.5f;
  data[i] = v;
}
__global__ void probe_graph_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 1.0003f + 0.25f;
}
__global__ void probe_nvtx_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 0.9997f + 0.75f;
}
__global__ void probe_step_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 1.0001f + 0.125f;
}

// One row of truth: `count` operations of one kind under one NVTX path on one stream.
struct Op {
  std::string kind;  // kernel, memcpy, memset
  std::string name;  // kernel name (the family) or the copy's direction and memory kind
  std::string path;  // NVTX path open at launch, '/'-joined; "" for none
  std::string stream;
  int count = 0;
  double ms = 0.0;        // summed cudaEvent time of the operations
  bool captured = false;  // ran as graph nodes
};

struct Truth {
  std::vector<Op> ops;
  std::vector<std::string> notes;
  std::string extra;  // preformatted JSON members, e.g. overlap or step statistics
};

// RAII NVTX range; the path strings in the truth are written by hand to match.
class Range {
 public:
  explicit Range(const char* name) { nvtxRangePushA(name); }
  ~Range() { nvtxRangePop(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {
    GPUATTR_CHECK(cudaEventCreate(&start_));
    GPUATTR_CHECK(cudaEventCreate(&stop_));
    GPUATTR_CHECK(cudaEventRecord(start_, stream_));
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  double StopMs() {
    GPUATTR_CHECK(cudaEventRecord(stop_, stream_));
    GPUATTR_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    GPUATTR_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

std::string StreamName(cudaStream_t s) {
  unsigned long long id = 0;
  if (cudaStreamGetId(s, &id) != cudaSuccess) return "unknown";
  return std::to_string(id);
}

float* Buffer() {
  float* d = nullptr;
  GPUATTR_CHECK(cudaMalloc(&d, sizeof(float) * kElems));
  GPUATTR_CHECK(cudaMemset(d, 0, sizeof(float) * kElems));
  GPUATTR_CHECK(cudaDeviceSynchronize());
  return d;
}

constexpr int kRepeats = 20;

void Chevron(Truth& t) {
  Range r("chevron");
  float* d = Buffer();
  Timer timer(nullptr);
  for (int i = 0; i < kRepeats; ++i) probe_chevron_kernel<<<kGrid, kBlock>>>(d, kElems);
  GPUATTR_CHECK(cudaGetLastError());
  t.ops.push_back({"kernel", "probe_chevron_kernel", "chevron", StreamName(nullptr), kRepeats,
                   timer.StopMs(), false});
  GPUATTR_CHECK(cudaFree(d));
}

void Runtime(Truth& t) {
  Range r("runtime");
  float* d = Buffer();
  int n = kElems;
  void* args[] = {&d, &n};
  Timer timer(nullptr);
  for (int i = 0; i < kRepeats; ++i)
    GPUATTR_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&probe_runtime_kernel),
                                   dim3(kGrid), dim3(kBlock), args, 0, nullptr));
  t.ops.push_back({"kernel", "probe_runtime_kernel", "runtime", StreamName(nullptr), kRepeats,
                   timer.StopMs(), false});
  GPUATTR_CHECK(cudaFree(d));
}

void Driver(Truth& t) {
  // libcuda.so.1 is present whenever a device is (the refusal ran before this), so this only
  // fails on a broken install.
  auto launch = reinterpret_cast<LaunchKernelFn>(DriverSymbol("cuLaunchKernel"));
  if (launch == nullptr) {
    std::fprintf(stderr, "gpu_probe: no cuLaunchKernel from libcuda.so.1: %s\n", dlerror());
    std::exit(1);
  }
  Range r("driver");
  float* d = Buffer();
  cudaFunction_t fn = nullptr;
  GPUATTR_CHECK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&probe_driver_kernel)));
  int n = kElems;
  void* args[] = {&d, &n};
  Timer timer(nullptr);
  for (int i = 0; i < kRepeats; ++i) {
    CUresult res = launch(reinterpret_cast<CUfunction>(fn), kGrid, 1, 1, kBlock, 1, 1, 0, nullptr,
                          args, nullptr);
    if (res != CUDA_SUCCESS) {
      std::fprintf(stderr, "gpu_probe: cuLaunchKernel failed: %d\n", static_cast<int>(res));
      std::exit(1);
    }
  }
  t.ops.push_back({"kernel", "probe_driver_kernel", "driver", StreamName(nullptr), kRepeats,
                   timer.StopMs(), false});
  GPUATTR_CHECK(cudaFree(d));
}

void Streams(Truth& t) {
  Range r("streams");
  float* a = Buffer();
  float* b = Buffer();
  cudaStream_t s1{}, s2{};
  GPUATTR_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  GPUATTR_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  // Few blocks, long spin: each kernel leaves most SMs free, so the two streams overlap.
  constexpr int kSmallGrid = 16;
  constexpr int kIters = 20000;
  constexpr int kPerStream = 5;
  cudaEvent_t wall_start{}, wall_stop{};
  GPUATTR_CHECK(cudaEventCreate(&wall_start));
  GPUATTR_CHECK(cudaEventCreate(&wall_stop));
  GPUATTR_CHECK(cudaEventRecord(wall_start, s1));
  GPUATTR_CHECK(cudaStreamWaitEvent(s2, wall_start));
  Timer t1(s1), t2(s2);
  for (int i = 0; i < kPerStream; ++i) {
    probe_stream_kernel<<<kSmallGrid, kBlock, 0, s1>>>(a, kSmallGrid * kBlock, kIters);
    probe_stream_kernel<<<kSmallGrid, kBlock, 0, s2>>>(b, kSmallGrid * kBlock, kIters);
  }
  GPUATTR_CHECK(cudaGetLastError());
  double ms1 = t1.StopMs();
  double ms2 = t2.StopMs();
  cudaEvent_t s2_done{};
  GPUATTR_CHECK(cudaEventCreate(&s2_done));
  GPUATTR_CHECK(cudaEventRecord(s2_done, s2));
  GPUATTR_CHECK(cudaStreamWaitEvent(s1, s2_done));
  GPUATTR_CHECK(cudaEventRecord(wall_stop, s1));
  GPUATTR_CHECK(cudaEventSynchronize(wall_stop));
  float wall_ms = 0.0f;
  GPUATTR_CHECK(cudaEventElapsedTime(&wall_ms, wall_start, wall_stop));
  t.ops.push_back(
      {"kernel", "probe_stream_kernel", "streams", StreamName(s1), kPerStream, ms1, false});
  t.ops.push_back(
      {"kernel", "probe_stream_kernel", "streams", StreamName(s2), kPerStream, ms2, false});
  // Busy union ≈ wall span when the streams overlap; sum of streams ≈ 2 × wall.
  t.extra += "\"streams_wall_ms\": " + std::to_string(wall_ms) + ", ";
  cudaEventDestroy(s2_done);
  cudaEventDestroy(wall_start);
  cudaEventDestroy(wall_stop);
  GPUATTR_CHECK(cudaStreamDestroy(s1));
  GPUATTR_CHECK(cudaStreamDestroy(s2));
  GPUATTR_CHECK(cudaFree(a));
  GPUATTR_CHECK(cudaFree(b));
}

void Memcpy(Truth& t) {
  Range r("memcpy");
  constexpr size_t kBytes = sizeof(float) * kElems;
  float* d = Buffer();
  std::vector<float> pageable(kElems, 1.0f);
  float* pinned = nullptr;
  GPUATTR_CHECK(cudaMallocHost(&pinned, kBytes));
  std::fill(pinned, pinned + kElems, 2.0f);
  struct Copy {
    const char* name;
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
  };
  const Copy copies[] = {
      {"HtoD_pageable", d, pageable.data(), cudaMemcpyHostToDevice},
      {"DtoH_pageable", pageable.data(), d, cudaMemcpyDeviceToHost},
      {"HtoD_pinned", d, pinned, cudaMemcpyHostToDevice},
      {"DtoH_pinned", pinned, d, cudaMemcpyDeviceToHost},
  };
  constexpr int kCopies = 5;
  for (const Copy& c : copies) {
    Timer timer(nullptr);
    for (int i = 0; i < kCopies; ++i) GPUATTR_CHECK(cudaMemcpy(c.dst, c.src, kBytes, c.kind));
    t.ops.push_back(
        {"memcpy", c.name, "memcpy", StreamName(nullptr), kCopies, timer.StopMs(), false});
  }
  t.notes.push_back("memcpy event time includes host staging for pageable copies");
  GPUATTR_CHECK(cudaFreeHost(pinned));
  GPUATTR_CHECK(cudaFree(d));
}

void Memset(Truth& t) {
  float* d = Buffer();  // before the range: its own memset is not one of the counted ones
  Range r("memset");
  constexpr int kSets = 10;
  Timer timer(nullptr);
  for (int i = 0; i < kSets; ++i)
    GPUATTR_CHECK(cudaMemsetAsync(d, i, sizeof(float) * kElems, nullptr));
  t.ops.push_back(
      {"memset", "memset", "memset", StreamName(nullptr), kSets, timer.StopMs(), false});
  GPUATTR_CHECK(cudaFree(d));
}

void Graph(Truth& t) {
  Range r("graph");
  float* d = Buffer();
  cudaStream_t s{};
  GPUATTR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr int kNodes = 3;
  constexpr int kReplays = 100;
  cudaGraph_t graph{};
  {
    Range capture("capture");
    GPUATTR_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kNodes; ++i) probe_graph_kernel<<<kGrid, kBlock, 0, s>>>(d, kElems);
    GPUATTR_CHECK(cudaStreamEndCapture(s, &graph));
  }
  cudaGraphExec_t exec{};
  GPUATTR_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  double ms = 0.0;
  {
    Range replay("replay");
    Timer timer(s);
    for (int i = 0; i < kReplays; ++i) GPUATTR_CHECK(cudaGraphLaunch(exec, s));
    ms = timer.StopMs();
  }
  // gpuattr must attribute these to graph/capture (captured), with graph/replay as launch context.
  t.ops.push_back({"kernel", "probe_graph_kernel", "graph/capture", StreamName(s),
                   kNodes * kReplays, ms, true});
  t.extra += "\"graph_launch_path\": \"graph/replay\", ";
  GPUATTR_CHECK(cudaGraphExecDestroy(exec));
  GPUATTR_CHECK(cudaGraphDestroy(graph));
  GPUATTR_CHECK(cudaStreamDestroy(s));
  GPUATTR_CHECK(cudaFree(d));
}

void Nvtx(Truth& t) {
  Range r("nvtx");
  constexpr int kPerThread = 10;
  Op ops[2];
  auto worker = [&](int which) {
    const char* name = which == 0 ? "thread_a" : "thread_b";
    nvtxNameOsThreadA(0, name);
    cudaStream_t s{};
    GPUATTR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* d = Buffer();
    double ms = 0.0;
    {
      Range range(name);
      Timer timer(s);
      for (int i = 0; i < kPerThread; ++i) probe_nvtx_kernel<<<kGrid, kBlock, 0, s>>>(d, kElems);
      GPUATTR_CHECK(cudaGetLastError());
      ms = timer.StopMs();
    }
    // The worker's own stack is exactly its range: the main thread's "nvtx" is not inherited
    // because the launch thread's stack is not empty.
    ops[which] = {"kernel", "probe_nvtx_kernel", name, StreamName(s), kPerThread, ms, false};
    GPUATTR_CHECK(cudaFree(d));
    GPUATTR_CHECK(cudaStreamDestroy(s));
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  t.ops.push_back(ops[0]);
  t.ops.push_back(ops[1]);
}

// Per-step overhead: one step = "step" range with 8 kernels; median step time from cudaEvents over
// 50 measured steps after 10 warm-up steps. gpu-check.sh runs this with and without gpuattr.
void Steps(Truth& t) {
  float* d = Buffer();
  constexpr int kWarmup = 10;
  constexpr int kMeasured = 50;
  constexpr int kKernelsPerStep = 8;
  std::vector<double> step_ms;
  for (int step = 0; step < kWarmup + kMeasured; ++step) {
    Range r("step");
    Timer timer(nullptr);
    for (int k = 0; k < kKernelsPerStep; ++k) probe_step_kernel<<<kGrid, kBlock>>>(d, kElems);
    double ms = timer.StopMs();
    if (step >= kWarmup) step_ms.push_back(ms);
  }
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[(sorted.size() - 1) / 2];
  double sum = 0.0;
  for (double ms : step_ms) sum += ms;
  t.ops.push_back({"kernel", "probe_step_kernel", "step", StreamName(nullptr),
                   kKernelsPerStep * kMeasured, sum, false});
  t.extra += "\"step_median_ms\": " + std::to_string(median) +
             ", \"steps_measured\": " + std::to_string(kMeasured) +
             ", \"steps_warmup\": " + std::to_string(kWarmup) + ", ";
  GPUATTR_CHECK(cudaFree(d));
}

void Print(const std::string& sub, const Truth& t) {
  cudaDeviceProp prop{};
  int device = 0;
  GPUATTR_CHECK(cudaGetDevice(&device));
  GPUATTR_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  GPUATTR_CHECK(cudaDriverGetVersion(&driver));
  GPUATTR_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf(
      "{\"program\": \"gpu_probe\", \"subcommand\": %s, \"device\": %s, "
      "\"driver_version\": %d, \"runtime_version\": %d, %s\"ops\": [",
      JsonQuote(sub).c_str(), JsonQuote(prop.name).c_str(), driver, runtime, t.extra.c_str());
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const Op& o = t.ops[i];
    std::printf(
        "%s{\"kind\": %s, \"name\": %s, \"path\": %s, \"stream\": %s, \"count\": %d, "
        "\"ms\": %.6f, \"captured\": %s}",
        i == 0 ? "" : ", ", JsonQuote(o.kind).c_str(), JsonQuote(o.name).c_str(),
        JsonQuote(o.path).c_str(), JsonQuote(o.stream).c_str(), o.count, o.ms,
        o.captured ? "true" : "false");
  }
  std::printf("], \"notes\": [");
  for (size_t i = 0; i < t.notes.size(); ++i)
    std::printf("%s%s", i == 0 ? "" : ", ", JsonQuote(t.notes[i]).c_str());
  std::printf("]}\n");
}

struct Subcommand {
  const char* name;
  void (*run)(Truth&);
};
constexpr Subcommand kSubcommands[] = {
    {"chevron", Chevron}, {"runtime", Runtime}, {"driver", Driver},
    {"streams", Streams}, {"memcpy", Memcpy},   {"memset", Memset},
    {"graph", Graph},     {"nvtx", Nvtx},       {"steps", Steps},
};

int Usage() {
  std::fprintf(stderr, "usage: gpu_probe all");
  for (const Subcommand& s : kSubcommands) std::fprintf(stderr, "|%s", s.name);
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Usage();
  const std::string sub = argv[1];
  bool known = sub == "all";
  for (const Subcommand& s : kSubcommands) known = known || sub == s.name;
  if (!known) return Usage();

  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gpu_probe: no CUDA device or driver (%s); this program needs a GPU\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return kExitNoDevice;
  }
  Truth truth;
  for (const Subcommand& s : kSubcommands) {
    const bool in_all = std::strcmp(s.name, "steps") != 0;
    if (sub == s.name || (sub == "all" && in_all)) s.run(truth);
  }
  GPUATTR_CHECK(cudaDeviceSynchronize());
  Print(sub, truth);
  return 0;
}
