#!/usr/bin/env bash
# Host time of a whole simulated run of 1,000,000 launches (tests/scenarios/bench_1m_kernels.json)
# with and without gpuattr (issue 8's end-to-end figure): simgpu-run alone, then under
# `gpuattr run`, alternating, RUNS times each; prints the medians, their ratio and the time added
# per launch. Both runs load the same fake CUPTI; the bare one has no subscriber. The simulator
# keeps only activity counts in its truth (SIMGPU_TRUTH_ACTIVITIES=counts) in both.
#   scripts/bench_end_to_end.sh [BUILD_DIR] [RUNS]   (defaults: build, 3)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
runs="${2:-3}"
scenario="$repo/tests/scenarios/bench_1m_kernels.json"
simgpu_run="$build/tests/simgpu/simgpu-run"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

elapsed() {  # prints the wall seconds of "$@"
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}

bare=() traced=()
for ((i = 0; i < runs; ++i)); do
  bare+=("$(SIMGPU_TRUTH_ACTIVITIES=counts elapsed "$simgpu_run" "$scenario" \
    --truth "$work/truth.json")")
  traced+=("$(SIMGPU_TRUTH_ACTIVITIES=counts elapsed "$build/collector/gpuattr" run --quiet --force-overwrite \
    -o "$work/report.json" -- "$simgpu_run" "$scenario" --truth "$work/truth.json")")
done
python3 - "$work/report.json" "${bare[*]}" "${traced[*]}" <<'PY'
import json, statistics, sys
process = json.load(open(sys.argv[1]))["processes"][0]
bare = [float(v) for v in sys.argv[2].split()]
traced = [float(v) for v in sys.argv[3].split()]
launches = process["totals"]["kernels"]
b, t = statistics.median(bare), statistics.median(traced)
print(f"runs (s): bare {bare}, under gpuattr run {traced}")
print(f"median wall: bare {b:.3f} s, under gpuattr run {t:.3f} s, ratio {t / b:.3f}, "
      f"added {(t - b) / launches * 1e9:.0f} ns per launch over {launches} launches "
      f"(dropped records {process['loss']['dropped_records']}, "
      f"coverage {process['coverage']['attributed_fraction']})")
PY
