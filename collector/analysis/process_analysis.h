// ProcessAnalysis: the result model of one traced process's analysis, plain values that the
// report builder turns into JSON (report/) and that the summary merges over processes.
//
// The fold units (activity_folder.h) fill it once, at the end of the process's stream; nothing
// here refers back to the trace. docs/attribution.md defines every number. Where DESIGN allows
// "not measured" a field is an std::optional and stays empty rather than 0; device fields are
// meaningful only when device_measured holds.
//
// Invariant (tested): sum over root passes of total_ns + sum over unattributed of ns equals
// kernel_ns + memcpy_ns + memset_ns, exactly. Activities without timestamps (start = end = 0) are
// counted in loss and excluded from every time.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_PROCESS_ANALYSIS_H_
#define GPUATTR_COLLECTOR_ANALYSIS_PROCESS_ANALYSIS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/phase.h"
#include "analysis/refusal_catalogue.h"
#include "analysis/samples.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

constexpr size_t kLargestGaps = 5;
constexpr size_t kFamilyExamples = 5;

// Device time of captured (graph) activities of a pass, split by the path open where the graph
// was launched: DESIGN §2's "second dimension". `path` is empty when the launch had no range,
// absent when the launch was never seen.
struct LaunchContext {
  std::optional<std::vector<std::string>> path;
  uint64_t ns = 0;
  uint64_t activities = 0;
};

// FLOPs and bytes counted by the PyTorch annotator's FLOP counter (docs/attribution.md §FLOPs):
// the ops that ran under a pass node, or in a step.
struct WorkCounts {
  uint64_t flops = 0;           // integer FLOPs of the counted ops, a fused multiply-add is 2
  uint64_t bytes_estimate = 0;  // their read-once/write-once traffic
  uint64_t unknown_ops = 0;     // calls of ops without a rule: flops is a lower bound when > 0
  void Add(const WorkCounts& other) {
    flops += other.flops;
    bytes_estimate += other.bytes_estimate;
    unknown_ops += other.unknown_ops;
  }
};

struct PassNode {
  std::string name;
  std::vector<std::string> path;
  uint64_t instances = 0;             // closed push/pop instances of exactly this path
  std::optional<DurationStats> host;  // empty when the path never appeared as a host range
  // Device fields: meaningful only when the process's device time was measured.
  uint64_t self_ns = 0;     // activities attributed to exactly this node
  uint64_t total_ns = 0;    // self + children's totals
  uint64_t busy_ns = 0;     // union of this node's own activity intervals
  uint64_t kernels = 0;     // kernels attributed to exactly this node
  uint64_t activities = 0;  // all activities attributed to exactly this node
  uint64_t direct_ns = 0;
  uint64_t inherited_ns = 0;
  uint64_t captured_ns = 0;
  std::vector<LaunchContext> launch_contexts;
  // self_ns split by kernel family ("[memcpy]" and "[memset]" for copies and sets), largest
  // first; sums to self_ns exactly. The folded-stack exports' leaf frames.
  std::vector<std::pair<std::string, uint64_t>> self_by_family;
  std::optional<Phase> phase;  // of its path (docs/attribution.md §Phases)
  WorkCounts work_self;        // ops that ran under exactly this node
  WorkCounts work_total;       // self + children's totals
  std::vector<PassNode> children;
};

struct Unattributed {
  std::string reason;
  uint64_t ns = 0;
  uint64_t kernel_ns = 0;
  uint64_t activities = 0;
};

// Device time attributed by a fallback rather than by the rule that would normally apply
// (coverage.fallbacks), by reason (a kFallback* constant).
struct Fallback {
  std::string reason;
  uint64_t ns = 0;
  uint64_t activities = 0;
};

struct StreamStats {
  uint32_t id = 0;
  uint64_t busy_ns = 0;
  uint64_t span_ns = 0;  // the stream's first start to its last end
  uint64_t idle_ns = 0;  // span_ns - busy_ns
  uint64_t kernel_ns = 0;
  uint64_t memcpy_ns = 0;
  uint64_t memset_ns = 0;
  uint64_t activities = 0;
};

enum class GapKind { kHostBound, kDependency, kUnknown };

struct Gap {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  GapKind kind = GapKind::kUnknown;
  std::optional<uint32_t> launch_tid;                  // thread that launched the gap's ending work
  std::optional<std::vector<std::string>> host_range;  // its innermost range when the gap began
};

// A device's busy time by what ran (docs/attribution.md §Compute, communication and memory):
// each a union over all its streams. Hidden communication is the part of the collectives' union
// that compute overlapped; exposed is the rest, what communication added to the device's time.
struct CategoryBusy {
  uint64_t compute_ns = 0;                // kernels that are not collectives
  uint64_t communication_ns = 0;          // collective kernels
  uint64_t memory_ns = 0;                 // memcpys and memsets
  uint64_t communication_hidden_ns = 0;   // |communication ∩ compute|
  uint64_t communication_exposed_ns = 0;  // communication_ns - communication_hidden_ns
};

// Memory copies of one direction and pair of memory kinds on a device (§Memory copies).
struct CopyStats {
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind (copy_fold.h names it)
  uint8_t src_kind = 0;   // CUpti_ActivityMemoryKind
  uint8_t dst_kind = 0;
  uint64_t copies = 0;
  uint64_t bytes = 0;                 // of the copies whose size is known
  uint64_t copies_without_bytes = 0;  // size 0: the source did not say (a trace without args)
  uint64_t ns = 0;
};

struct DeviceStats {
  uint32_t id = 0;
  std::optional<std::string> name;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  uint64_t span_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
  std::vector<StreamStats> streams;
  CategoryBusy categories;
  std::vector<CopyStats> copies;  // most device time first
  uint64_t host_bound_ns = 0;
  uint64_t dependency_ns = 0;
  uint64_t unclassified_ns = 0;  // holes ended by work whose launch was never seen
  uint64_t tail_ns = 0;
  uint64_t gaps = 0;
  std::vector<Gap> largest;  // longest first, at most kLargestGaps
};

struct ShapeStats {
  KernelShape shape;
  uint64_t kernels = 0;
  uint64_t total_ns = 0;
};

struct FamilyStats {
  std::string family;
  uint64_t kernels = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  std::vector<std::string> names;  // distinct demangled examples, at most kFamilyExamples
  std::vector<ShapeStats> shapes;  // most kernels first
  // Launch statistics (§Kernel families): ApiExit - ApiEnter, one sample per distinct launch
  // (a graph launch running several of the family's kernels counts once); start - launch time,
  // one sample per kernel. Kernels whose launch was never seen add none. Summaries of the fold's
  // samples (FamilyFold keeps those), so that a report's families read back whole.
  SampleSummary<uint64_t> launch_api;
  SampleSummary<int64_t> launch_latency;

  void Merge(const FamilyStats& other);
  // One kernel of `shape` that ran `duration_ns`: what merging a one-kernel FamilyStats without
  // names does, in place (the ingest hot path; names are the caller's, once per distinct name).
  void AddKernel(const KernelShape& shape, uint64_t duration_ns);
  // Keeps `name` among the examples unless it is one already or kFamilyExamples are kept.
  void AddExample(const std::string& name);
};

struct Totals {
  uint64_t kernel_ns = 0;
  uint64_t memcpy_ns = 0;
  uint64_t memset_ns = 0;
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t launches = 0;
  uint64_t device_ns() const { return kernel_ns + memcpy_ns + memset_ns; }
};

// A stream cut before Goodbye: what came after its last record, from_ns, may be lost, up to when
// its connection closed, to_ns (empty when not known).
struct LostSpan {
  uint64_t from_ns = 0;
  std::optional<uint64_t> to_ns;
};

// Every loss counter of the report's `loss` (docs/attribution.md §Status and loss): the shim's,
// from its latest Diagnostics record, and the collector's own.
struct Loss {
  std::optional<uint64_t> dropped_records;  // ring + socket + CUPTI; empty without Diagnostics
  std::optional<wire::Diagnostics> shim;    // the latest (cumulative) Diagnostics, if any came
  uint64_t unmatched_launches = 0;
  uint64_t orphan_activities = 0;   // activities whose correlation id matched no launch
  uint64_t incomplete_records = 0;  // activities without timestamps, seen by the collector
  uint64_t late_activities = 0;     // released below an earlier release: outside the unions
  uint64_t expired_launches = 0;    // launches the reorder window dropped before the end
  uint64_t lost_messages = 0;       // sequence gaps
  uint64_t sequence_regressions = 0;
  uint64_t unmatched_pops = 0;
  uint64_t implicitly_closed_ranges = 0;  // closed because an outer range was popped first
  uint64_t unclosed_ranges = 0;           // still open when a traced stream ended
  uint64_t unmatched_range_ends = 0;
  uint64_t unknown_records = 0;  // record types this collector does not know (skipped)
  uint64_t orphan_api_exits = 0;
  uint64_t zero_correlation_launches = 0;
  std::optional<LostSpan> lost_span;  // empty for a stream that ended in order
};

// Who the process is, as its Hello says.
struct ProcessIdentity {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  int32_t rank = -1;  // -1: RANK unset
  int32_t local_rank = -1;
  std::optional<std::string> exe;
  uint64_t monotonic_ns = 0;  // the Hello's clock pair: the stream's start on both clocks
  uint64_t realtime_ns = 0;
};

// What happened to a process's capture, one answer (docs/attribution.md §Status and loss), first
// match:
//   truncated: the stream ended without Goodbye (a window's: WindowEnd), or CUPTI finalized
//              itself mid-run: numbers are partial, whatever else is true;
//   refused:   device time could not be collected in a process that used CUDA (a refusal says
//              why: no driver, CUPTI unavailable, another subscriber);
//   host_only: the process never initialised CUDA and nothing was refused: its ranges are all
//              there is, and no device time is missing;
//   complete:  device time was measured and the stream ended in order.
enum class ProcessStatus : uint8_t { kComplete, kTruncated, kRefused, kHostOnly };
inline constexpr ProcessStatus kProcessStatuses[] = {
    ProcessStatus::kComplete, ProcessStatus::kTruncated, ProcessStatus::kRefused,
    ProcessStatus::kHostOnly};

// "complete", "truncated", "refused", "host_only".
const char* ProcessStatusName(ProcessStatus status);

// Why some data could not be collected: a catalogue entry (refusal_catalogue.h) with what was
// seen (empty: nothing more) and CUPTI's result (0: none).
struct ProcessRefusal {
  const RefusalEntry* entry = nullptr;
  std::string seen;
  int32_t cupti_result = 0;
};

struct ThreadName {
  uint32_t tid = 0;
  std::string name;
};

// A capture window's stream (docs/attach.md): its WindowBegin and WindowEnd, as far as they came.
struct CaptureWindow {
  std::optional<wire::WindowBegin> begin;
  bool late_attach = false;  // the shim was loaded into the running process by gpuattr attach
  std::optional<wire::WindowEnd> end;
};

struct SpanStats {
  std::string name;
  std::optional<std::string> domain;
  DurationStats host;
};

struct MarkStats {
  std::string name;
  std::optional<std::string> domain;
  uint64_t count = 0;
};

// Device time by phase (§Phases); kernels, memcpys and memsets.
struct PhaseTotals {
  std::array<uint64_t, kPhaseCount> ns{};
  uint64_t other_ns = 0;
  void Add(std::optional<Phase> phase, uint64_t duration_ns) {
    (phase ? ns[static_cast<size_t>(*phase)] : other_ns) += duration_ns;
  }
  uint64_t total_ns() const {
    uint64_t total = other_ns;
    for (uint64_t phase_ns : ns) total += phase_ns;
    return total;
  }
};

// Device time attributed to one PyTorch module, by phase (§Modules, module_fold.h).
struct ModuleRow {
  std::string module;             // its range name, `nn.Module: …`: the row's key
  std::vector<std::string> path;  // module names where it first ran, outermost first, its own last
  uint64_t calls = 0;             // instances of its forward pass nodes
  uint64_t recompute_calls = 0;   // instances of its pass nodes under a backward leaf
  PhaseTotals phases;
  // Compiled kernels that fused its ops with other modules' and went to another row (their
  // deepest common module's): their time, by phase, in none of this row's own terms.
  PhaseTotals fused;
};

// §Coverage: per phase P, the attributed kernel time of phase P, and the unattributed kernel
// time launched while the main thread's stack had phase P.
struct PhaseCoverage {
  std::array<uint64_t, kPhaseCount> attributed_kernel_ns{};
  std::array<uint64_t, kPhaseCount> unattributed_kernel_ns{};
};

// One instance of the step range (§Steps).
struct StepRow {
  uint64_t index = 0;  // among all instances, before --skip-steps
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  PhaseTotals phases;
  uint64_t unattributed_ns = 0;
  uint64_t busy_ns = 0;
  CategoryBusy categories;  // the category unions over all devices, within the step
  WorkCounts work;          // ops counted while it was open, on any thread
  uint64_t host_ns() const { return end_ns - start_ns; }
  uint64_t gaps_ns() const { return host_ns() - busy_ns; }
};

struct Steps {
  std::string range;        // the step range's name (`ProfilerStep#*` for ProfilerStep#N)
  bool detected = false;    // auto-detected rather than --step
  uint64_t instances = 0;   // closed instances: the rows before --skip-steps
  uint64_t unfinished = 0;  // still open when the stream ended (interrupted): not rows
  uint64_t skipped = 0;
  // Kept rows, by start; never null. Shared, not copied: a streaming trace keeps its analysis for
  // later reports while the report being written holds the same rows.
  std::shared_ptr<const std::vector<StepRow>> rows = std::make_shared<std::vector<StepRow>>();
};

// One op of the FLOP counter's ledger: how often it ran and, counted, its FLOPs and bytes.
struct OpCount {
  std::string op;  // as torch.profiler names it: aten::addmm
  uint64_t calls = 0;
  uint64_t flops = 0;
  uint64_t bytes_estimate = 0;
};

// What the PyTorch annotator's FLOP counter sent (docs/attribution.md §FLOPs): every op it saw
// is in exactly one of counted, free (views, allocations) and unknown (no rule: never a zero).
struct WorkAnalysis {
  std::optional<std::string> counter;  // its "counting (rules ...)" mark; empty: none came
  std::optional<std::string> off;      // its "off: why" mark, when it could not count
  WorkCounts total;                    // every counted op, wherever it ran
  WorkCounts unattributed;             // those that ran with no range open
  std::vector<OpCount> counted;        // most FLOPs first
  std::vector<OpCount> free;           // most calls first
  std::vector<OpCount> unknown;        // most calls first
  std::vector<std::pair<std::string, uint64_t>> flops_by_dtype;  // most FLOPs first
};

struct ProcessAnalysis {
  std::optional<ProcessIdentity> process;  // empty: the stream never said Hello
  ProcessStatus status = ProcessStatus::kRefused;
  bool goodbye = false;  // the stream ended with Goodbye
  std::vector<ProcessRefusal> refusals;
  std::vector<ThreadName> threads;      // named threads, by tid
  std::optional<CaptureWindow> window;  // a capture window's stream; empty for a traced one
  bool device_measured = false;         // CUPTI subscribed (or device records arrived regardless)
  std::optional<uint32_t> main_tid;
  uint64_t capture_end_ns = 0;  // the latest timestamp of the stream
  Totals totals;
  Loss loss;
  std::vector<DeviceStats> devices;
  std::vector<PassNode> passes;       // roots
  std::vector<FamilyStats> families;  // total_ns descending
  std::vector<Unattributed> unattributed;
  std::vector<Fallback> fallbacks;  // by reason
  // Window streams: activities outside the capture window by correlation id (docs/attach.md),
  // left out of every other number.
  uint64_t excluded_activities = 0;
  // The correlation ids of the first and last launch recorded (0: none).
  uint32_t first_launch_correlation = 0;
  uint32_t last_launch_correlation = 0;
  uint64_t attributed_kernel_ns = 0;
  PhaseTotals phases;
  PhaseCoverage phase_coverage;
  std::optional<Steps> steps;
  std::string steps_reason;        // why `steps` is empty
  std::vector<ModuleRow> modules;  // most device time first; empty without module ranges
  std::vector<SpanStats> ranges;
  std::vector<MarkStats> marks;
  std::optional<WorkAnalysis> work;  // empty: no FLOP counter mark or count came
};

// The numbers a multi-process report's summary merges, over the processes whose device time was
// measured (the others add nothing; any_measured says whether there was one).
struct MergedAnalysis {
  bool any_measured = false;
  Totals totals;
  uint64_t attributed_kernel_ns = 0;
  PhaseCoverage phase_coverage;
  std::vector<Unattributed> unattributed;  // largest first
  std::vector<Fallback> fallbacks;         // by reason
  std::vector<FamilyStats> families;       // total_ns descending
};

// Merges processes one at a time, in the order given (a family's example names and shape ties
// follow it: add them in the report's order). Memory: one entry per distinct family, unattributed
// reason and fallback reason, whatever the number of processes.
class AnalysisMerger {
 public:
  void Add(const ProcessAnalysis& process);
  MergedAnalysis Finish() &&;

 private:
  MergedAnalysis merged_;  // every field but the three below
  std::map<std::string, Unattributed> unattributed_;
  std::map<std::string, Fallback> fallbacks_;
  std::map<std::string, FamilyStats> families_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_PROCESS_ANALYSIS_H_
