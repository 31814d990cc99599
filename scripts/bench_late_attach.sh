#!/usr/bin/env bash
# Detach leaves no cost (issue 23, docs/benchmarks.md §Attach to a process started without
# gpuattr): inject_hot_path_bench runs bare, started without gpuattr; then again, also started
# without gpuattr, but before its benchmarks run `gpuattr attach --pid` loads the shim into it and
# opens and closes WINDOWS windows of 200 ms (GPUATTR_BENCH_ATTACH_GATE holds the benchmarks
# back until the last one is done). The launch and NVTX figures of the two runs are compared;
# rounds alternate (ROUNDS, default 3), and a figure is the median over rounds of each run's
# in-process median (CPU time of the calling thread).
#   scripts/bench_late_attach.sh [BUILD_DIR] [WINDOWS]     defaults: build, 10
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
windows="${2:-10}"
cmake --build "$build" -j2 --target inject_hot_path_bench simgpu_fake_cupti gpuattr_inject gpuattr
gpuattr="$build/collector/gpuattr"
hot="$build/tests/bench/inject_hot_path_bench"
export GPUATTR_CUPTI_LIBRARY="$build/tests/simgpu/libcupti.so.13"
out="$(mktemp -d)"
cleanup() {
  [ -n "${daemon_pid:-}" ] && kill -TERM "$daemon_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
source "$repo/scripts/bench_lib.sh"
start_bench_daemon "$gpuattr" "$out"
for round in $(seq "${ROUNDS:-3}"); do
  echo "== round $round: bare, then after $windows late-attach windows" >&2
  "$hot" --benchmark_out="$out/bare.$round.json" --benchmark_out_format=json >/dev/null
  rm -f "$out/gate"
  GPUATTR_BENCH_ATTACH_GATE="$out/gate" "$hot" --benchmark_out="$out/after.$round.json" \
    --benchmark_out_format=json >/dev/null &
  bench_pid=$!
  sleep 0.5
  for window in $(seq "$windows"); do
    "$gpuattr" attach --quiet --pid "$bench_pid" --duration 200ms --socket "$out/d.sock" \
      -o "$out/window.$round.$window.json"
  done
  touch "$out/gate"
  wait "$bench_pid"
done
/usr/bin/python3 - "$out" "$repo/scripts" <<'PY'
import glob, json, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from bench_medians import medians
bare, after = medians(out, "bare"), medians(out, "after")
print(f"{'benchmark':<16}{'bare':>11}{'after':>11}{'after-bare':>12}")
for name in sorted(bare):
    b, a = bare[name][0], after[name][0]
    print(f"{name:<16}{b:>11.1f}{a:>11.1f}{a - b:>12.1f}   rounds: bare {bare[name][1]}, after {after[name][1]}")
detached = {}
for path in glob.glob(f"{out}/window.*.json"):
    process = json.load(open(path))["processes"][0]
    key = (process["status"], process["window"]["detach"], process["window"]["late_attach"])
    detached[key] = detached.get(key, 0) + 1
print("windows (status, detach, late_attach):", detached)
PY
