#!/usr/bin/env bash
# Peak RSS of the collector (the gpuattr process alone, not the traced app) while it profiles a
# simulated scenario end to end: issue 3's "a 10-million-kernel scenario runs with flat collector
# RSS", and what step rows cost (bench_200k_steps, bench_1m_steps; docs/benchmarks.md §Report
# writing). The simulator keeps only activity counts in its truth (SIMGPU_TRUTH_ACTIVITIES=counts).
#   scripts/bench_scenario_rss.sh [BUILD_DIR [SCENARIO...]]
# defaults: build, bench_1m_kernels bench_10m_kernels; GPUATTR_ARGS adds `gpuattr run` options
# (e.g. GPUATTR_ARGS="--step nosuch").
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
scenarios=("${@:2}")
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=(bench_1m_kernels bench_10m_kernels)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for scenario in "${scenarios[@]}"; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # GPUATTR_ARGS is a list of words
  SIMGPU_TRUTH_ACTIVITIES=counts "$build/collector/gpuattr" run --quiet --force-overwrite ${GPUATTR_ARGS:-} \
    -o "$work/report.json" -- \
    "$build/tests/simgpu/simgpu-run" "$repo/tests/scenarios/$scenario.json" \
    --truth "$work/truth.json" &
  pid=$!
  peak_kb=0
  while kill -0 "$pid" 2>/dev/null; do
    hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n "$hwm" && "$hwm" -gt "$peak_kb" ]] && peak_kb=$hwm
    sleep 0.1
  done
  wait "$pid"
  end=$(date +%s.%N)
  python3 - "$scenario" "$work/report.json" "$peak_kb" "$start" "$end" <<'PY'
import json, os, sys
name, path, peak_kb, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
p = json.load(open(path))["processes"][0]
rows = len(p["steps"]["rows"]) if p["steps"] else 0
print(f"{name}: kernels {p['totals']['kernels']}, dropped {p['loss']['dropped_records']}, "
      f"coverage {p['coverage']['attributed_fraction']}, step rows {rows}, "
      f"report {os.path.getsize(path) / 1e6:.1f} MB, collector VmHWM {peak_kb / 1024:.1f} MiB, "
      f"wall {end - start:.1f} s")
PY
done
