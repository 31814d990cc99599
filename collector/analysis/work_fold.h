// WorkFold: the PyTorch annotator's FLOP counter (docs/attribution.md §FLOPs), read from its
// ValueMarks. Each op the counter saw is one mark on the path of the thread that ran it:
//
//   domain gpuattr.flops  "<op> <dtype>"             payload: its FLOPs     (a counted op)
//   domain gpuattr.bytes  "<op> <dtype>"             payload: its bytes     (the same op)
//   domain gpuattr.ops    "free <op>" / "unknown <op>"  payload: calls
//
// Fold() turns a mark into the counts it adds (the caller gives them to the pass tree and the
// step fold) and keeps the process's ledger: per op its calls, FLOPs and bytes, and per dtype
// the FLOPs. ValueMarks of any other domain are plain marks to the report (a count in `marks`).
// The counter's own plain marks, "gpuattr.flops: counting (<rules>)" or "gpuattr.flops: off:
// <why>", say whether it ran.
//
// Single-threaded, on the thread that folds. Memory: one entry per distinct op message.
#ifndef GPUATTR_COLLECTOR_ANALYSIS_WORK_FOLD_H_
#define GPUATTR_COLLECTOR_ANALYSIS_WORK_FOLD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/path_names.h"
#include "analysis/process_analysis.h"
#include "analysis/trace_data.h"

namespace gpuattr::collector {

inline constexpr char kFlopsDomain[] = "gpuattr.flops";
inline constexpr char kBytesDomain[] = "gpuattr.bytes";
inline constexpr char kOpsDomain[] = "gpuattr.ops";
inline constexpr char kCounterMarkPrefix[] = "gpuattr.flops: ";

class WorkFold {
 public:
  // `data` and `paths` must outlive this.
  WorkFold(const TraceData& data, PathNames& paths) : data_(data), paths_(paths) {}

  // Names were (re)defined: domains and messages are read again.
  void Refresh();

  // What `mark` counts, noted in the ledger (and in `unattributed` when no range was open);
  // empty for a mark of another domain, which the report counts in `marks`.
  std::optional<WorkCounts> Fold(const wire::ValueMark& mark);

  // analysis.work (empty when the counter neither ran nor said why not), and the other domains'
  // value marks added to analysis.marks. Once, after the host-range fold filled the marks.
  void Finish(ProcessAnalysis& analysis);

 private:
  enum class Domain : uint8_t { kFlops, kBytes, kOps, kOther };
  // One distinct message of the counter's domains: an op, its dtype, and what it added.
  struct Entry {
    std::string op;
    std::string dtype;       // counted ops; empty otherwise
    bool free = false;       // gpuattr.ops "free <op>"
    bool unknown = false;    // gpuattr.ops "unknown <op>"
    bool malformed = false;  // a message the counter never sends: counted nowhere
    uint64_t calls = 0;
    uint64_t flops = 0;
    uint64_t bytes_estimate = 0;
  };

  Domain DomainOf(uint32_t domain_string);
  Entry& EntryOf(uint32_t name_string, Domain domain);

  const TraceData& data_;
  PathNames& paths_;
  std::unordered_map<uint32_t, Domain> domains_;  // by domain string id, until names change
  // By (message, in gpuattr.ops): a counted op's message is the same in gpuattr.flops and
  // gpuattr.bytes, one entry for both. Entries stay put in the map: entry_of_id_ points at them.
  std::map<std::pair<std::string, bool>, Entry> entries_;
  std::map<std::pair<uint32_t, bool>, Entry*> entry_of_id_;        // until names change
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> other_marks_;  // (name, domain) -> count
  WorkCounts unattributed_;
  bool any_ = false;  // a counter mark came
};

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_ANALYSIS_WORK_FOLD_H_
