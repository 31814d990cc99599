#!/usr/bin/env bash
# The launch hot path's cost with CUPTI shared (issue 43, docs/benchmarks.md §Sharing CUPTI):
# BM_KernelLaunch of inject_hot_path_bench bare, under `gpuattr run` with the shim of BUILD_DIR
# (CUPTI behind the multiplexer), the same with a second client subscribed to the runtime and
# driver domains (GPUATTR_BENCH_SECOND_CLIENT=1), the same two on the fake's CUDA 13.3+ mode
# (SIMGPU_CUPTI_MODE=multi_subscriber: CUPTI gives each its own subscriber, the shim's V2 bridge),
# and, when OLD_SHIM names a libgpuattr_inject.so built from an earlier commit, under
# `gpuattr run` with that shim. Rounds alternate
# (ROUNDS, default 3); a figure is the median over rounds of the in-process median.
#   scripts/bench_cupti_sharing.sh [BUILD_DIR] [OLD_SHIM]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build-bench}"
old_shim="${2:-}"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUATTR_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target inject_hot_path_bench simgpu_fake_cupti gpuattr_inject gpuattr \
  >/dev/null
hot="$build/tests/bench/inject_hot_path_bench"
gpuattr="$build/collector/gpuattr"
export GPUATTR_CUPTI_LIBRARY="$build/tests/simgpu/libcupti.so.13"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
launch=(--benchmark_filter=BM_KernelLaunch --benchmark_out_format=json)
for round in $(seq "${ROUNDS:-3}"); do
  echo "== round $round: bare, traced, traced + second client, both on 13.3+${old_shim:+, traced (old shim)}"
  "$hot" "${launch[@]}" --benchmark_out="$out/bare.$round.json" >/dev/null 2>&1
  GPUATTR_FLUSH_MS=1 "$gpuattr" run --quiet -o "$out/report.traced.$round.json" -- "$hot" \
    "${launch[@]}" --benchmark_out="$out/traced.$round.json" >/dev/null 2>&1
  GPUATTR_BENCH_SECOND_CLIENT=1 GPUATTR_FLUSH_MS=1 "$gpuattr" run --quiet \
    -o "$out/report.client.$round.json" -- "$hot" "${launch[@]}" \
    --benchmark_out="$out/client.$round.json" >/dev/null 2>&1
  SIMGPU_CUPTI_MODE=multi_subscriber GPUATTR_FLUSH_MS=1 "$gpuattr" run --quiet \
    -o "$out/report.multi.$round.json" -- "$hot" "${launch[@]}" \
    --benchmark_out="$out/multi.$round.json" >/dev/null 2>&1
  SIMGPU_CUPTI_MODE=multi_subscriber GPUATTR_BENCH_SECOND_CLIENT=1 GPUATTR_FLUSH_MS=1 \
    "$gpuattr" run --quiet -o "$out/report.multiclient.$round.json" -- "$hot" "${launch[@]}" \
    --benchmark_out="$out/multiclient.$round.json" >/dev/null 2>&1
  if [[ -n "$old_shim" ]]; then
    GPUATTR_INJECT_LIBRARY="$old_shim" GPUATTR_FLUSH_MS=1 "$gpuattr" run --quiet \
      -o "$out/report.old.$round.json" -- "$hot" "${launch[@]}" \
      --benchmark_out="$out/old.$round.json" >/dev/null 2>&1
  fi
done
python3 - "$out" "$repo/scripts" <<'PY'
import glob, json, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from bench_medians import medians
# The one benchmark each file holds (BM_KernelLaunch, under its run name).
figures = {config: next(iter(medians(out, config).values()), None)
           for config in ("bare", "traced", "client", "multi", "multiclient", "old")}
for config, figure in figures.items():
    if figure:
        print(f"{config:>11}: {figure[0]:8.1f} ns  (rounds {', '.join(f'{v:.1f}' for v in figure[1])})")
bare, traced, client, old = (figures[c][0] if figures[c] else None
                             for c in ("bare", "traced", "client", "old"))
print(f"traced - bare: {traced - bare:.1f} ns; second client adds {client - traced:.1f} ns "
      f"(ratio traced+client / traced {client / traced:.3f})")
multi, multiclient = (figures[c][0] if figures[c] else None for c in ("multi", "multiclient"))
if multi and multiclient:
    print(f"13.3+ (V2 bridge): traced - bare {multi - bare:.1f} ns; second client adds "
          f"{multiclient - multi:.1f} ns (ratio {multiclient / multi:.3f})")
if old:
    print(f"multiplexer vs the shim before it: {traced - old:+.1f} ns per launch "
          f"(ratio {traced / old:.3f})")
for path in sorted(glob.glob(f"{out}/report.*.json")):
    loss = json.load(open(path))["processes"][0]["loss"]
    print(f"drops in {path.rsplit('/', 1)[1]}: ring {loss['ring_dropped_records']}, "
          f"socket {loss['socket_dropped_records']}")
PY
