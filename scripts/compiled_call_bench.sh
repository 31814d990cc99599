#!/usr/bin/env bash
# The run-time cost of a compiled graph's call under the annotator (issue 42, docs/pytorch.md
# §Compiled models): the range `torch.compile: <key> forward` that the annotator pushes and pops
# around each call of a loaded wrapper. A small compiled function (one fused pointwise kernel on
# CPU tensors) is called CALLS times under `gpuattr run` on the simulated GPU's CUPTI, with the
# annotator on (`--pytorch modules`) and off, ROUNDS rounds alternately, each run a fresh process
# with Inductor's cache of its own; the per-call difference is the range's cost. Not a test:
# results go in docs/benchmarks.md.
#   scripts/compiled_call_bench.sh [BUILD] [PYTHON] [ROUNDS] [CALLS]
#   defaults: build, .venv/bin/python (torch 2.13, which compiles), 5, 20000
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
python="${2:-$repo/.venv/bin/python}"
rounds="${3:-5}"
calls="${4:-20000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat >"$work/calls.py" <<'PY'
import sys
import time

import torch

calls = int(sys.argv[1])
step = torch.compile(lambda x: (x * 2 + 1).relu())
x = torch.randn(16)
for _ in range(100):  # compiles, then warms up
    step(x)
start = time.perf_counter_ns()
for _ in range(calls):
    step(x)
print((time.perf_counter_ns() - start) / calls / 1000.0)
PY

export GPUATTR_CUPTI_LIBRARY="$build/tests/simgpu/libcupti.so.13"
for round in $(seq "$rounds"); do
  for mode in off modules; do
    TORCHINDUCTOR_CACHE_DIR="$work/inductor.$mode.$round" GPUATTR_KERNEL_MAP_CACHE="$work/maps" \
      "$build/collector/gpuattr" run --quiet --pytorch "$mode" -o "$work/report.json" \
      --force-overwrite -- "$python" -W ignore "$work/calls.py" "$calls" 2>/dev/null |
      tail -1 >"$work/$mode.$round"
  done
done
"$python" - "$work" "$rounds" <<'PY'
import statistics
import sys

work, rounds = sys.argv[1], int(sys.argv[2])
runs = {mode: [float(open("%s/%s.%d" % (work, mode, r)).read()) for r in range(1, rounds + 1)]
        for mode in ("off", "modules")}
for mode, label in (("off", "annotator off"), ("modules", "annotator on")):
    print("per call (us), %-13s %s, median %.2f"
          % (label, ", ".join("%.2f" % us for us in runs[mode]), statistics.median(runs[mode])))
differences = [on - off for on, off in zip(runs["modules"], runs["off"])]
print("on - off, per round (us): %s, median %.2f"
      % (", ".join("%.2f" % d for d in differences), statistics.median(differences)))
print("on / off, median of rounds: %.3f"
      % statistics.median([on / off for on, off in zip(runs["modules"], runs["off"])]))
PY
