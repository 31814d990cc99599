// StepFold: per-step rows (docs/attribution.md §Steps): the instances of the step range, each
// with the device time by phase of the activities launched while it was open, its unattributed
// time, and its share of the busy union over all devices.
//
// Every push/pop instance is registered (at the next release, when its path's names are more
// likely known) under its StepRangeKey, indexed per key (range_index.h). Keys are
// tracked when they are --step, or, auto-detecting, once a range of that key is seen at the top
// level of the main thread (TraceData::main_tid: a step is the training loop's). A released
// activity adds its terms to the earliest instance of each tracked key that holds its launch time,
// whichever thread launched it (an autograd thread's backward, a DDP reducer's all-reduce), and so
// do the FLOP counter's counts by the time they were sent; each
// merged interval of the all-device busy union, and of each category union (category_unions.h), as
// it closes, adds its overlap to every tracked instance. The step range is chosen at the end from
// the closed ranges' counts (a step-like name with two or more top-level instances first, then the
// most instances, then the most host time), and its closed instances become the rows, --skip-steps
// dropped.
//
// Only instances that can still become rows are kept: with --step those of its key; when
// auto-detecting, every key's until a step-like key has two closed top-level instances (from then
// on no other kind of key can win), then step-like keys' only.
//
// Single-threaded, on the thread that folds. Memory: one instance per kept push (they grow with
// the run, like TraceData's histories), freed with the fold.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_STEP_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_STEP_FOLD_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/attributed_activity.h"
#include "analysis/category_unions.h"
#include "analysis/interval_union.h"
#include "analysis/path_names.h"
#include "analysis/process_analysis.h"
#include "analysis/range_index.h"
#include "analysis/samples.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

class StepFold {
 public:
  // `data` and `paths` must outlive this. `step`: --step NAME (empty: auto-detect);
  // `skip_steps`: --skip-steps N.
  StepFold(const TraceData& data, PathNames& paths, std::optional<std::string> step,
           uint64_t skip_steps);

  // Names were (re)defined: the keys of passes are looked up again.
  void Refresh() { key_of_pass_.clear(); }

  // Registers the pushes that arrived since the last call.
  void RegisterInstances();
  // How many of data.pushes, counted from the first ever, are registered.
  uint64_t registered() const { return registered_; }

  // An activity with timestamps (after RegisterInstances for its release), of `category`.
  void Fold(const AttributedActivity& attributed, WorkCategory category);

  // Counted ops (work_fold.h) sent at `timestamp_ns`, on any thread: added to the earliest
  // instance of each tracked key open then, as a launch at that time would be.
  void FoldWork(uint64_t timestamp_ns, const WorkCounts& counts);

  // steps, or steps_reason. `host_durations`: closed instances' durations by path node (the
  // host-range fold's), which auto-detection counts. Once.
  void Finish(const std::map<uint32_t, Samples<uint64_t>>& host_durations,
              ProcessAnalysis& analysis);

 private:
  // One instance of a range that may become the step range, with its row's terms.
  struct Instance {
    uint32_t tid = 0;
    const HistoryEntry* range = nullptr;  // in TraceData::history, whose deques never move it
    uint32_t node = 0;
    uint64_t start_ns = 0;
    PhaseTotals phases;
    uint64_t unattributed_ns = 0;
    uint64_t busy_ns = 0;
    CategoryUnions::Lengths category_ns{};  // its share of each category union
    WorkCounts work{};
  };
  // The instances of one step key, whatever their node (ProfilerStep#1, #2, ... are one key),
  // in one index: an activity asks each tracked key once, however many steps the run had.
  struct Key {
    bool tracked = false;
    bool step_like = false;  // StepLikeKey
    RangeIndex instances;
    uint64_t top_level_closed = 0;  // auto-detection, until settled: seen closed so far
  };
  static_assert(RangeIndex::kOpenEnd == HistoryEntry::kOpenEnd);

  static uint64_t EndOf(const Instance& instance) { return instance.range->end_ns; }

  void DropKeysThatCannotWin();
  bool Earlier(size_t a, size_t b) const;
  void EarliestAt(RangeIndex& index, uint64_t t, std::optional<size_t>& best);
  // The key of a pass (its last name), null when --step names another.
  Key* KeyOf(uint32_t pass);
  void FoldTerms(uint64_t launch_ns, const ActivityOutcome& outcome, uint64_t ns);
  // Adds the overlap of `merged` with every tracked instance to the instance's `field`.
  template <typename Field>
  void AddOverlap(const Interval& merged, Field field);
  std::optional<std::string> ChooseStepRange(
      const std::map<uint32_t, Samples<uint64_t>>& host_durations, std::string& why);

  const TraceData& data_;
  PathNames& paths_;
  const std::optional<std::string> step_key_;  // StepRangeKey of --step
  const uint64_t skip_steps_;
  std::vector<std::optional<Key*>> key_of_pass_;  // KeyOf's answers by pass id, once asked
  IntervalUnion busy_;                            // all devices
  CategoryUnions categories_;                     // all devices
  uint64_t registered_ = 0;           // data_.pushes registered, counted from the first ever
  bool only_step_like_keys_ = false;  // DropKeysThatCannotWin settled auto-detection
  // Auto-detection, until settled: top-level instances of step-like keys not yet seen closed.
  std::vector<std::pair<Key*, size_t>> step_like_open_;
  std::deque<Instance> instances_;
  std::map<std::string, Key> step_keys_;
  // The tracked keys of step_keys_, which every activity visits (a trace with thousands of
  // module names has thousands of keys, few of them tracked).
  std::vector<Key*> tracked_;
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_STEP_FOLD_H_
