// Ingest benchmark of the collector's per-connection analysis (issue 3, issue 8).
//
// A synthetic but realistic wire stream is encoded in memory, message by message, exactly as the
// shim would send it: Hello, CuptiState, strings, path nodes, then per training step a range push,
// two nested phases, and per kernel an ApiEnter, an ApiExit and a Kernel record sharing a
// correlation id. Device records travel in their own messages, shuffled within a message, and
// every other device message arrives before the host message holding its launches (CUPTI
// delivers activity late and out of order, but within a flush period).
//
// Modes (single-threaded; the process is the only user of its ProcessTrace):
//   collector_ingest_bench [benchmark flags]   Google Benchmark: records/s of ConsumeMessage
//                                              (plus Finish and the report) on one core.
//   collector_ingest_bench --rss N [--every M] ingests N kernels, printing VmRSS every M kernels,
//                                              then builds the report and prints VmHWM.
//   collector_ingest_bench --recorded N        records the stream of N kernels in memory first,
//                                              then times ingest + report of the whole recording
//                                              (thread CPU time): records/s at any length, with
//                                              the reorder window in its steady state.
#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/process_trace.h"
#include "report/report_builder.h"
#include "report/report_writer.h"
#include "wire/codec.h"

namespace gpuattr::collector {
namespace {

constexpr uint32_t kTid = 1000;
constexpr uint32_t kKernelsPerStep = 2000;
constexpr uint32_t kKernelsPerBatch = 400;  // one host and one device message per batch
constexpr uint64_t kLaunchEveryNs = 5000;
constexpr uint64_t kKernelNs = 4000;
constexpr uint64_t kLaunchLatencyNs = 20000;
constexpr uint32_t kKernelNames = 16;

// String and path node ids of the stream.
constexpr uint32_t kStepString = 1;
constexpr uint32_t kForwardString = 2;
constexpr uint32_t kBackwardString = 3;
constexpr uint32_t kFirstKernelString = 10;
constexpr uint32_t kStepNode = 1;
constexpr uint32_t kForwardNode = 2;
constexpr uint32_t kBackwardNode = 3;

// Produces the stream's datagrams one at a time, so that ten million kernels never exist in
// memory at once: the generator's own footprint is one message buffer and one batch.
class StreamGenerator {
 public:
  explicit StreamGenerator(uint64_t kernels)
      : kernels_(kernels), buffer_(wire::kMaxMessageBytes), batch_(kKernelsPerBatch) {}

  // The next datagram, or false when the stream (Goodbye included) is done.
  bool Next(std::vector<uint8_t>* out) {
    wire::MessageWriter writer(buffer_.data(), wire::kMaxMessageBytes);
    if (!started_) {
      started_ = true;
      WritePrologue(writer);
    } else if (pending_device_) {
      pending_device_ = false;
      WriteDevice(writer);
    } else if (pending_host_) {
      pending_host_ = false;
      WriteHost(writer);
    } else if (next_kernel_ < kernels_) {
      BuildBatch();
      // Odd batches: the device message overtakes the launches it belongs to.
      if (batch_index_ % 2 == 1) {
        WriteDevice(writer);
        pending_host_ = true;
      } else {
        WriteHost(writer);
        pending_device_ = true;
      }
      ++batch_index_;
    } else if (!ended_) {
      ended_ = true;
      WriteEpilogue(writer);
    } else {
      return false;
    }
    const uint32_t size = writer.Finish(sequence_++);
    out->assign(buffer_.data(), buffer_.data() + size);
    return true;
  }

  // Records a full stream of `kernels` kernels carries (ranges and bookkeeping included).
  static uint64_t RecordsFor(uint64_t kernels) {
    const uint64_t steps = (kernels + kKernelsPerStep - 1) / kKernelsPerStep;
    return 3 * kernels + 6 * steps;
  }

 private:
  struct Launch {
    uint32_t correlation;
    uint64_t enter_ns;
    uint32_t node;
    bool step_begins;
    bool phase_switch;
    bool step_ends;
  };

  void WritePrologue(wire::MessageWriter& writer) {
    wire::Hello hello = wire::MakeHello(wire::HelloMode::kTraced, 4242);
    hello.ppid = 1;
    hello.monotonic_ns = 1;
    writer.Append(hello);
    writer.Append(wire::CuptiState{0, 130000, 0, 0});
    writer.AppendString(kStepString, "train_step");
    writer.AppendString(kForwardString, "forward");
    writer.AppendString(kBackwardString, "backward");
    for (uint32_t k = 0; k < kKernelNames; ++k) {
      writer.AppendString(kFirstKernelString + k,
                          "_Z14gemm_kernel_" + std::to_string(k) + "PfS_S_iii");
    }
    writer.Append(wire::PathNode{kStepNode, 0, kStepString, 0});
    writer.Append(wire::PathNode{kForwardNode, kStepNode, kForwardString, 0});
    writer.Append(wire::PathNode{kBackwardNode, kStepNode, kBackwardString, 0});
  }

  void BuildBatch() {
    batch_.clear();
    for (uint32_t i = 0; i < kKernelsPerBatch && next_kernel_ < kernels_; ++i, ++next_kernel_) {
      const uint64_t in_step = next_kernel_ % kKernelsPerStep;
      const uint64_t enter = 1000000 + next_kernel_ * kLaunchEveryNs;
      batch_.push_back({static_cast<uint32_t>(next_kernel_ + 1), enter,
                        in_step < kKernelsPerStep / 2 ? kForwardNode : kBackwardNode, in_step == 0,
                        in_step == kKernelsPerStep / 2,
                        in_step == kKernelsPerStep - 1 || next_kernel_ + 1 == kernels_});
    }
  }

  void WriteHost(wire::MessageWriter& writer) {
    for (const Launch& launch : batch_) {
      if (launch.step_begins) {
        writer.AppendRange(wire::RecordType::kRangePush, {launch.enter_ns - 10, kTid, kStepNode});
        writer.AppendRange(wire::RecordType::kRangePush, {launch.enter_ns - 5, kTid, kForwardNode});
      }
      if (launch.phase_switch) {
        writer.AppendRange(wire::RecordType::kRangePop, {launch.enter_ns - 6, kTid, kForwardNode});
        writer.AppendRange(wire::RecordType::kRangePush,
                           {launch.enter_ns - 5, kTid, kBackwardNode});
      }
      wire::ApiEnter enter{};
      enter.timestamp_ns = launch.enter_ns;
      enter.correlation_id = launch.correlation;
      enter.tid = kTid;
      enter.node = launch.node;
      enter.cbid = 211;
      enter.domain = static_cast<uint8_t>(wire::ApiDomain::kRuntime);
      enter.kind = static_cast<uint8_t>(wire::ApiKind::kKernel);
      writer.Append(enter);
      writer.Append(wire::ApiExit{launch.enter_ns + 3000, launch.correlation, kTid});
      if (launch.step_ends) {
        writer.AppendRange(wire::RecordType::kRangePop,
                           {launch.enter_ns + 3500, kTid, launch.node});
        writer.AppendRange(wire::RecordType::kRangePop, {launch.enter_ns + 3600, kTid, kStepNode});
      }
    }
  }

  void WriteDevice(wire::MessageWriter& writer) {
    // A fixed permutation: stride through the batch, so neighbours are far apart.
    const size_t n = batch_.size();
    for (size_t i = 0; i < n; ++i) {
      const Launch& launch = batch_[(i * 7919) % n];  // 7919 is prime: a permutation
      wire::Kernel kernel{};
      kernel.start_ns = launch.enter_ns + kLaunchLatencyNs;
      kernel.end_ns = kernel.start_ns + kKernelNs;
      kernel.correlation_id = launch.correlation;
      kernel.name_string = kFirstKernelString + launch.correlation % kKernelNames;
      kernel.stream = 7;
      kernel.grid[0] = 80 + launch.correlation % 3;
      kernel.grid[1] = kernel.grid[2] = 1;
      kernel.block[0] = 256;
      kernel.block[1] = kernel.block[2] = 1;
      writer.Append(kernel);
    }
  }

  void WriteEpilogue(wire::MessageWriter& writer) {
    const uint64_t end = 1000000 + kernels_ * kLaunchEveryNs + kLaunchLatencyNs + kKernelNs;
    writer.Append(wire::Goodbye{end, 0, 0});
  }

  uint64_t kernels_;
  std::vector<uint8_t> buffer_;
  std::vector<Launch> batch_;
  uint64_t next_kernel_ = 0;
  uint64_t batch_index_ = 0;
  uint64_t sequence_ = 0;
  bool started_ = false;
  bool ended_ = false;
  bool pending_device_ = false;
  bool pending_host_ = false;
};

// Current value of a /proc/self/status field ("VmRSS", "VmHWM") in KiB; -1 when unreadable.
long StatusKib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t length = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, length, field) == 0 && line.size() > length && line[length] == ':') {
      return std::strtol(line.c_str() + length + 1, nullptr, 10);
    }
  }
  return -1;
}

// Feeds the whole stream, generated on the fly, printing VmRSS every `report_every` kernels.
void Ingest(ProcessTrace& trace, uint64_t kernels, uint64_t report_every) {
  StreamGenerator generator(kernels);
  std::vector<uint8_t> message;
  uint64_t fed_batches = 0;
  while (generator.Next(&message)) {
    const Status status =
        trace.ConsumeMessage(message.data(), static_cast<uint32_t>(message.size()));
    if (!status.ok()) {
      std::fprintf(stderr, "collector_ingest_bench: %s\n", status.ToString().c_str());
      std::exit(1);
    }
    ++fed_batches;
    const uint64_t kernels_fed = fed_batches / 2 * kKernelsPerBatch;
    if (report_every != 0 && fed_batches % 2 == 0 && kernels_fed % report_every == 0) {
      std::printf("kernels=%llu VmRSS_kib=%ld in_flight=%zu\n",
                  static_cast<unsigned long long>(kernels_fed), StatusKib("VmRSS"),
                  trace.in_flight());
      std::fflush(stdout);
    }
  }
  trace.Finish();
}

// The report of one trace, as `gpuattr run` builds it; its size keeps the work observable.
size_t ReportBytes(ProcessTrace& trace) {
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.processes.push_back(trace.TakeAnalysis());
  return SerializeReport(BuildReport(inputs)).size();
}

// The whole stream of `kernels` kernels, encoded up front so the timed loops below measure the
// collector alone.
std::vector<std::vector<uint8_t>> EncodeStream(uint64_t kernels) {
  StreamGenerator generator(kernels);
  std::vector<std::vector<uint8_t>> messages;
  std::vector<uint8_t> message;
  while (generator.Next(&message)) messages.push_back(message);
  return messages;
}

void Feed(ProcessTrace& trace, const std::vector<std::vector<uint8_t>>& messages) {
  for (const std::vector<uint8_t>& message : messages) {
    if (!trace.ConsumeMessage(message.data(), static_cast<uint32_t>(message.size())).ok()) {
      std::fprintf(stderr, "collector_ingest_bench: a generated message was rejected\n");
      std::exit(1);
    }
  }
  trace.Finish();
}

// ConsumeMessage for every datagram, then Finish: the ingest thread's share.
void BM_Ingest(benchmark::State& state) {
  const auto kernels = static_cast<uint64_t>(state.range(0));
  const std::vector<std::vector<uint8_t>> messages = EncodeStream(kernels);
  for (auto _ : state) {
    ProcessTrace trace{AnalysisOptions{}};
    Feed(trace, messages);
    benchmark::DoNotOptimize(trace.pid());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(StreamGenerator::RecordsFor(kernels)));
}
BENCHMARK(BM_Ingest)->Arg(200000)->Unit(benchmark::kMillisecond);

// The same, plus the analysis and the JSON report: what `gpuattr run` spends per connection.
void BM_IngestAndReport(benchmark::State& state) {
  const auto kernels = static_cast<uint64_t>(state.range(0));
  const std::vector<std::vector<uint8_t>> messages = EncodeStream(kernels);
  for (auto _ : state) {
    ProcessTrace trace{AnalysisOptions{}};
    Feed(trace, messages);
    benchmark::DoNotOptimize(ReportBytes(trace));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(StreamGenerator::RecordsFor(kernels)));
}
BENCHMARK(BM_IngestAndReport)->Arg(200000)->Unit(benchmark::kMillisecond);

int RssMode(uint64_t kernels, uint64_t every) {
  std::printf("start VmRSS_kib=%ld\n", StatusKib("VmRSS"));
  ProcessTrace trace{AnalysisOptions{}};  // streaming, as `gpuattr run` creates it
  Ingest(trace, kernels, every);
  std::printf("ingested kernels=%llu VmRSS_kib=%ld\n", static_cast<unsigned long long>(kernels),
              StatusKib("VmRSS"));
  ReportInputs inputs;
  inputs.capture.mode = "run";
  inputs.processes.push_back(trace.TakeAnalysis());
  const Report report = BuildReport(inputs);
  const nlohmann::json& process = report.without_step_rows["processes"][0];
  // The numbers that show the stream was understood: every kernel joined and attributed.
  std::printf(
      "report: kernels=%s unmatched_launches=%s orphan_activities=%s steps=%s "
      "coverage=%s\n",
      process["totals"]["kernels"].dump().c_str(),
      process["loss"]["unmatched_launches"].dump().c_str(),
      process["loss"]["orphan_activities"].dump().c_str(),
      process["steps"].is_null() ? "null" : process["steps"]["instances"].dump().c_str(),
      process["coverage"]["attributed_fraction"].dump().c_str());
  std::printf("report_bytes=%zu VmHWM_kib=%ld\n", SerializeReport(report).size(),
              StatusKib("VmHWM"));
  return 0;
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int RecordedMode(uint64_t kernels) {
  const std::vector<std::vector<uint8_t>> messages = EncodeStream(kernels);
  size_t bytes = 0;
  for (const std::vector<uint8_t>& message : messages) bytes += message.size();
  std::printf("recorded: kernels=%llu records=%llu messages=%zu bytes=%zu\n",
              static_cast<unsigned long long>(kernels),
              static_cast<unsigned long long>(StreamGenerator::RecordsFor(kernels)),
              messages.size(), bytes);
  const long hwm_before = StatusKib("VmHWM");
  const uint64_t start = ThreadCpuNs();
  ProcessTrace trace{AnalysisOptions{}};  // streaming, as `gpuattr run` creates it
  Feed(trace, messages);
  const uint64_t ingested = ThreadCpuNs();
  const size_t report_bytes = ReportBytes(trace);
  const uint64_t end = ThreadCpuNs();
  const double records = static_cast<double>(StreamGenerator::RecordsFor(kernels));
  std::printf(
      "ingest %.3f s, report %.3f s: %.2fM records/s on one core (ingest alone %.2fM/s); "
      "report_bytes=%zu in_flight_at_end=%zu VmHWM_kib=%ld (recording: %ld)\n",
      static_cast<double>(ingested - start) / 1e9, static_cast<double>(end - ingested) / 1e9,
      records / (static_cast<double>(end - start) / 1e9) / 1e6,
      records / (static_cast<double>(ingested - start) / 1e9) / 1e6, report_bytes,
      trace.in_flight(), StatusKib("VmHWM"), hwm_before);
  return 0;
}

}  // namespace
}  // namespace gpuattr::collector

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--recorded") == 0) {
    return gpuattr::collector::RecordedMode(std::strtoull(argv[2], nullptr, 10));
  }
  if (argc >= 3 && std::strcmp(argv[1], "--rss") == 0) {
    const uint64_t kernels = std::strtoull(argv[2], nullptr, 10);
    uint64_t every = 0;
    if (argc >= 5 && std::strcmp(argv[3], "--every") == 0)
      every = std::strtoull(argv[4], nullptr, 10);
    return gpuattr::collector::RssMode(kernels, every);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
