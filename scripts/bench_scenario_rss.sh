#!/usr/bin/env bash
# Peak RSS of the collector (the gpuattr process alone, not the traced app) while it profiles a
# simulated scenario end to end: issue 3's "a 10-million-kernel scenario runs with flat collector
# RSS". The simulator keeps only activity counts in its truth (SIMGPU_TRUTH_ACTIVITIES=counts).
#   scripts/bench_scenario_rss.sh [BUILD_DIR]   (default: build)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for scenario in bench_1m_kernels bench_10m_kernels; do
  start=$(date +%s.%N)
  SIMGPU_TRUTH_ACTIVITIES=counts "$build/collector/gpuattr" run --quiet -o "$work/report.json" -- \
    "$build/tests/simgpu/simgpu-run" "$repo/tests/scenarios/$scenario.json" \
    --truth "$work/truth.json" &
  pid=$!
  peak_kb=0
  while kill -0 "$pid" 2>/dev/null; do
    hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n "$hwm" && "$hwm" -gt "$peak_kb" ]] && peak_kb=$hwm
    sleep 0.2
  done
  wait "$pid"
  end=$(date +%s.%N)
  python3 - "$scenario" "$work/report.json" "$peak_kb" "$start" "$end" <<'PY'
import json, sys
name, path, peak_kb, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
p = json.load(open(path))["processes"][0]
print(f"{name}: kernels {p['totals']['kernels']}, dropped {p['loss']['dropped_records']}, "
      f"coverage {p['coverage']['attributed_fraction']}, collector VmHWM {peak_kb / 1024:.1f} MiB, "
      f"wall {end - start:.1f} s")
PY
done
