// The PyTorch model of an imported Kineto trace (docs/attribution.md §PyTorch): the ranges that
// make backward time land under the module whose forward created it.
//
// The Kineto importer collects, besides the ranges it keeps (annotations, steps, `nn.Module: …`
// python_function events, checkpoint recompute frames), the events this model reads: every
// `autograd::engine::evaluate_function: …` op (a backward op), every other op with a `Sequence
// number`, and the `fwdbwd` flows. Then, in each process that holds module ranges, each backward
// op B gets ranges of B's interval on B's thread, outermost first:
//   1. when B runs off the main thread (autograd's device threads): copies of the main thread's
//      ranges open at B's start that are not modules (the step, `## backward ##`), so backward
//      time sits in the same tree as forward;
//   2. the module path of the forward op that created B: the `nn.Module: …` ranges open on the
//      forward op's thread at its start. The forward op is found by the fwdbwd flow that ends
//      inside B (its start point is the forward op's start), else by B's `Sequence number`: the
//      latest op on the main thread with that number starting before B (for a nested B, on B's
//      own thread, inside the backward op that encloses it);
//   3. a leaf named `backward` when a forward op was found, `backward_unlinked` when none was:
//      a remainder with a name, never a guess.
// Copies (1, 2) are context: the path of the leaf, no ranges or host instances of their own
// (RangeOrigin::kModelContext). The leaf is an instance: B's host time. A module range inside B
// on B's thread (a checkpoint's recomputed forward) nests under the leaf, where the phase rules
// make it recompute. A backward op inside another one on its thread (a reentrant checkpoint's
// inner backward, over the graph its recompute made) is nested B: its chain (without step 1,
// which the enclosing chain holds) nests above the enclosing leaf, so each recomputed module
// keeps its own backward: `… / backward / nn.Module: Linear_1 / backward`. A process without
// module ranges is left as it is: backward by module needs modules.
//
// The main thread of a process: the one holding ProfilerStep#N ranges, else the one with the
// most module ranges (the smaller tid at ties).
//
// Runs on the main thread once per file, after the last event; memory: the collected events plus
// per-thread indexes of the ranges it reads.
#ifndef GPUATTR_COLLECTOR_IMPORT_PYTORCH_MODEL_H_
#define GPUATTR_COLLECTOR_IMPORT_PYTORCH_MODEL_H_

#include <cstdint>
#include <vector>

#include "import/imported_trace.h"

namespace gpuattr::collector {

// A cpu_op the model reads: a backward op, or an op with a sequence number (-1: none).
struct TorchOp {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int64_t sequence = -1;
};

// One end of a fwdbwd flow: its start is bound to the forward op, its finish to the backward op.
struct TorchFlowPoint {
  uint64_t ts_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t id = 0;
};

struct TorchEvents {
  std::vector<TorchOp> backward_ops;
  std::vector<TorchOp> sequenced_ops;
  std::vector<TorchFlowPoint> flow_starts;
  std::vector<TorchFlowPoint> flow_finishes;
  uint64_t recompute_frames = 0;  // recompute_fn frames kept as ranges
};

// Appends the model's ranges to `trace->ranges` and fills `trace->pytorch`. `trace->ranges` holds
// the file's ranges; module ranges are those named `nn.Module: …`.
void ApplyPyTorchModel(const TorchEvents& events, ImportedTrace* trace);

}  // namespace gpuattr::collector

#endif  // GPUATTR_COLLECTOR_IMPORT_PYTORCH_MODEL_H_
