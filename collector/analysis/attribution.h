// Analysis of one ProcessTrace: attribution to the NVTX pass tree (DESIGN §2), busy/idle unions
// and gaps per device, kernel families with their launch statistics, phases, steps, loss and
// coverage. docs/attribution.md holds the exact definitions this implements; each function below
// names the section it follows.
//
// Streaming (docs/architecture.md §Streaming analysis): ActivityFolder receives each device
// activity once, joined, in start order, as ProcessTrace's reorder window releases it, and folds
// it into aggregates; ProcessAnalysis, plain values the report builder turns into JSON, comes out
// at the end. Single-threaded, on the thread that owns the ProcessTrace. Every number here is
// measured; where DESIGN allows "not measured" the field is an std::optional and stays empty
// rather than 0.
//
// Invariant (tested): sum over root passes of total_ns + sum over unattributed of ns equals
// kernel_ns + memcpy_ns + memset_ns, exactly. Activities without timestamps (start = end = 0) are
// counted in loss and excluded from every time.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_H_
#define GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/phase.h"
#include "analysis/process_trace.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

struct DurationStats {
  uint64_t count = 0;
  uint64_t total = 0;
  uint64_t min = 0;
  uint64_t median = 0;  // the lower median: always an observed duration
  uint64_t max = 0;
  bool median_exact = true;  // false: the median of a uniform sample (Samples below)
};

// The samples of one statistic, bounded: every sample up to kExactSamples, then a uniform
// reservoir of that many (Vitter's algorithm R with a fixed seed, so a report is reproducible).
// count, total, min and max stay exact; the median is exact while exact() holds.
template <typename T>
class Samples {
 public:
  static constexpr size_t kExactSamples = 65536;

  // Timestamps come from the wire: a hostile or broken stream can make sums overflow, which must
  // clamp rather than be undefined.
  static T SaturatingAdd(T a, T b) {
    T sum;
    if (!__builtin_add_overflow(a, b, &sum)) return sum;
    return b > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
  }

  void Add(T value) {
    if (count_ == 0) {
      min_ = max_ = value;
    } else {
      min_ = std::min(min_, value);
      max_ = std::max(max_, value);
    }
    ++count_;
    total_ = SaturatingAdd(total_, value);
    if (kept_.size() < kExactSamples) {
      kept_.push_back(value);
      return;
    }
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG (Knuth MMIX)
    const uint64_t slot = (rng_ >> 11) % count_;
    if (slot < kept_.size()) kept_[static_cast<size_t>(slot)] = value;
  }
  // Adds `other`'s samples as if they had been added here one by one; its exact count, total,
  // min and max carry over (a merged reservoir is a sample, and says so).
  void Merge(const Samples& other) {
    if (other.count_ == 0) return;
    const T min = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    const T max = count_ == 0 ? other.max_ : std::max(max_, other.max_);
    const uint64_t count = count_ + other.count_;
    const T total = SaturatingAdd(total_, other.total_);
    for (T value : other.kept_) Add(value);
    count_ = count;
    total_ = total;
    min_ = min;
    max_ = max;
  }

  uint64_t count() const { return count_; }
  T total() const { return total_; }
  T min() const { return min_; }
  T max() const { return max_; }
  bool exact() const { return count_ == kept_.size(); }
  // The lower median of the kept samples (an observed value); 0 without samples.
  T median() const {
    if (kept_.empty()) return 0;
    std::vector<T> sorted = kept_;
    auto middle = sorted.begin() + static_cast<std::ptrdiff_t>((sorted.size() - 1) / 2);
    std::nth_element(sorted.begin(), middle, sorted.end());
    return *middle;
  }

 private:
  std::vector<T> kept_;
  uint64_t count_ = 0;
  T total_ = 0;
  T min_ = 0;
  T max_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ULL;
};

// Device time of captured (graph) activities of a pass, split by the path open where the graph
// was launched: DESIGN §2's "second dimension". `path` is empty when the launch had no range,
// absent when the launch was never seen.
struct LaunchContext {
  std::optional<std::vector<std::string>> path;
  uint64_t ns = 0;
  uint64_t activities = 0;
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

struct DeviceStats {
  uint32_t id = 0;
  std::optional<std::string> name;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  uint64_t span_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t idle_ns = 0;
  std::vector<StreamStats> streams;
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
  // one sample per kernel. Kernels whose launch was never seen add none.
  Samples<uint64_t> api_samples;
  Samples<int64_t> latency_samples;

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

struct Loss {
  std::optional<uint64_t> dropped_records;  // ring + socket + CUPTI; empty without Diagnostics
  uint64_t unmatched_launches = 0;
  uint64_t orphan_activities = 0;   // activities whose correlation id matched no launch
  uint64_t incomplete_records = 0;  // activities without timestamps, seen by the collector
  uint64_t late_activities = 0;     // released below an earlier release: outside the unions
  uint64_t expired_launches = 0;    // launches the reorder window dropped before the end
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

enum class AttributionKind : uint8_t { kNone, kDirect, kInherited, kCaptured };

// What the attribution decided for one activity (index-aligned with TraceData::activities).
// Activities without timestamps are kNone with no reason: they are not device time.
struct ActivityOutcome {
  uint32_t node = 0;             // attributed path node; 0: unattributed
  uint32_t launch_node = 0;      // graph nodes: path node by rules 2-3 at the graph launch; 0: none
  const char* reason = nullptr;  // unattributed reason (a kReason* constant)
  const char* fallback = nullptr;  // a kFallback* constant when a fallback rule was applied
  AttributionKind kind = AttributionKind::kNone;
  std::optional<Phase> phase;
};

// Device time by phase (§Phases); kernels, memcpys and memsets.
struct PhaseTotals {
  std::array<uint64_t, kPhaseCount> ns{};
  uint64_t other_ns = 0;
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
  uint64_t host_ns() const { return end_ns - start_ns; }
  uint64_t gaps_ns() const { return host_ns() - busy_ns; }
};

struct Steps {
  std::string range;      // the step range's name (`ProfilerStep#*` for ProfilerStep#N)
  bool detected = false;  // auto-detected rather than --step
  uint64_t instances = 0;
  uint64_t skipped = 0;
  // Kept rows, by start; never null. Shared, not copied: a streaming trace keeps its analysis for
  // later reports while the report being written holds the same rows.
  std::shared_ptr<const std::vector<StepRow>> rows = std::make_shared<std::vector<StepRow>>();
};

struct ProcessAnalysis {
  bool device_measured = false;  // CUPTI subscribed (or device records arrived regardless)
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
  uint64_t attributed_kernel_ns = 0;
  PhaseTotals phases;
  PhaseCoverage phase_coverage;
  std::optional<Steps> steps;
  std::string steps_reason;  // why `steps` is empty
  std::vector<SpanStats> ranges;
  std::vector<MarkStats> marks;
};

constexpr size_t kLargestGaps = 5;
constexpr size_t kFamilyExamples = 5;

// Unattributed reasons (DESIGN §2).
inline constexpr const char* kReasonNoOpenRange = "no_open_range";
inline constexpr const char* kReasonLaunchNotSeen = "launch_not_seen";
// Fallbacks (coverage.fallbacks): a graph node whose creation was never seen (captured before
// the capture window, or its records were lost) is attributed by rules 2-3 at its graph launch.
inline constexpr const char* kFallbackGraphBeforeWindow = "graph_captured_before_window";

// The streaming analysis: device activities leave ProcessTrace's reorder window one by one, in
// start order, joined with their launch, and are folded here into the aggregates of
// ProcessAnalysis; nothing per activity is kept. Host-side data (ranges, graph nodes, strings) is
// read from `data` as it stands at each release. Runs on whichever thread owns the ProcessTrace
// (the ingest thread while streaming); single-threaded.
class ActivityFolder {
 public:
  // `data` and `options` must outlive this.
  ActivityFolder(const TraceData& data, const AnalysisOptions& options);
  ~ActivityFolder();
  ActivityFolder(const ActivityFolder&) = delete;
  ActivityFolder& operator=(const ActivityFolder&) = delete;

  // One activity leaving the window; `launch` null when its launch was not seen. `late`: it
  // starts before an activity already released, so it counts in every sum but in no union.
  void Release(const ActivityRecord& activity, const LaunchRecord* launch, bool late);
  // An activity leaving the reorder window that lies outside the capture window (window
  // streams, docs/attach.md): counted as excluded, and in nothing else.
  void ExcludeOutsideWindow();
  // The launch left the join (graph launches keep a per-family dedupe until then).
  void ForgetLaunch(uint32_t correlation_id, const LaunchRecord& launch);
  // Once, after the last Release, with `data` finished.
  ProcessAnalysis Finish();

  // How many of data.host_ranges and data.pushes, counted from the first ever, are folded: the
  // owner may drop them from the front (TraceData::host_ranges_dropped, pushes_dropped).
  uint64_t folded_host_ranges() const;
  uint64_t folded_pushes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The name a step range goes by: `ProfilerStep#*` for every `ProfilerStep#N`, else `name`.
std::string StepRangeKey(const std::string& name);

// The name of an interned string, or "<unknown:ID>" when it was never defined.
std::string StringOr(const TraceData& data, uint32_t id);

// Lower median, min, max and total of `durations` (reordered). Empty input -> count 0.
DurationStats Summarize(std::vector<uint64_t>& durations);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_ATTRIBUTION_H_
