// Folded stacks of device time: `--folded out.txt` (for flamegraph.pl, inferno or speedscope)
// and `--speedscope out.json` (speedscope's own file format), from `gpuattr run` or
// `gpuattr export`.
//
// One stack per (pass path, kernel family) with attributed device time: the frames are the pass
// path's range names from the root, then the family as the leaf frame ("[memcpy]" and
// "[memset]" for copies and sets); the weight is integer nanoseconds (PassNode::self_by_family).
// Then one stack per unattributed reason, a single frame "[unattributed: REASON]". So the weights
// of a process sum exactly to its device time, attributed (its root passes' total_ns) plus
// unattributed, and a trace without ranges still has a flame graph that says why. With several
// processes each stack starts with a frame naming its process ("rank 0 (pid 4242)", or
// "pid 4242"); with one process there is no such frame.
//
// Order: by the start of the first device activity of each stack, so speedscope's time-order
// view reads forward, backward, optimizer as they ran (Exports records the first starts; stacks
// without one keep the pass tree's order after the others).
//
// Folded text: one line per stack, "frame;frame;leaf NS". The format has no escaping, so a
// ';' inside a name becomes ':' and line breaks become spaces. Speedscope: one "sampled" profile
// per process (unit nanoseconds), one sample per stack, frames shared between profiles.
//
// Memory: paths x families per process, kept until Commit. Single-threaded (trace_observer.h).
#ifndef GPUATTR_COLLECTOR_EXPORT_FOLDED_STACKS_H_
#define GPUATTR_COLLECTOR_EXPORT_FOLDED_STACKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/process_analysis.h"

namespace gpuattr::collector {

struct FoldedStack {
  std::vector<std::string> frames;  // pass path, then the family; or "[unattributed: REASON]"
  uint64_t ns = 0;
};

// The frame of an unattributed reason's stack.
std::string UnattributedFrame(const std::string& reason);

struct FoldedProcess {
  uint32_t pid = 0;
  int32_t rank = -1;                // -1: none
  std::string label;                // "rank 0 (pid 4242)" or "pid 4242"
  std::vector<FoldedStack> stacks;  // depth-first over the pass tree, then unattributed reasons
};

// The stacks of one process's pass tree and of its unattributed time; stacks of zero time are
// left out.
FoldedProcess FoldPasses(uint32_t pid, int32_t rank, const std::vector<PassNode>& roots,
                         const std::vector<Unattributed>& unattributed);

// The folded text of `processes` (see the file comment).
std::string RenderFolded(const std::vector<FoldedProcess>& processes);

// The speedscope JSON document of `processes`; `generator` names the exporter.
std::string RenderSpeedscope(const std::vector<FoldedProcess>& processes,
                             const std::string& generator);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_EXPORT_FOLDED_STACKS_H_
