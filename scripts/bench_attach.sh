#!/usr/bin/env bash
# Attach latency and detach time (issue 5, docs/benchmarks.md §Attach): a long-running simulated
# job runs armed under `gpuattr daemon`; `gpuattr attach --duration` opens and closes a window in
# it N times. For each window:
#   attach latency = window.begin_ns - CLOCK_MONOTONIC just before `gpuattr attach` started
#                    (CLI start, daemon, the shim's control poll, CUPTI subscription);
#   CUPTI subscribe = window.attach_ns (the shim's share of it);
#   detach         = window.detach_ns (forced flush done -> cuptiFinalize returned at an API exit).
#   scripts/bench_attach.sh [BUILD_DIR] [WINDOWS]     defaults: build, 10
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"
windows="${2:-10}"
gpuattr="$build/collector/gpuattr"
out="$(mktemp -d)"
cleanup() {
  [ -n "${daemon_pid:-}" ] && kill -TERM "$daemon_pid" 2>/dev/null || true
  [ -n "${job_pid:-}" ] && kill -TERM "$job_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
source "$repo/scripts/bench_lib.sh"
start_bench_daemon "$gpuattr" "$out"
cat >"$out/scenario.json" <<EOF
{"processes": [{"name": "trainer", "threads": [{"name": "main", "ops": [
  {"repeat_until_file": "$out/stop", "max": 1000000, "ops": [
    {"push": "step"},
    {"launch": "gemm", "stream": 0, "us": 40}, {"launch": "act", "stream": 0, "us": 10},
    {"sync": "device"}, {"cpu_us": 200},
    {"pop": true}]}]}]}]}
EOF
SIMGPU_TRUTH_ACTIVITIES=counts "$gpuattr" run --armed --socket "$out/d.sock" -- \
  "$build/tests/simgpu/simgpu-run" "$out/scenario.json" --truth "$out/truth.json" &
job_pid=$!
for i in $(seq "$windows"); do
  before=$(python3 -c 'import time; print(time.monotonic_ns())')
  until "$gpuattr" attach --all --duration 200ms --socket "$out/d.sock" --force-overwrite \
      -o "$out/w$i.json" \
      2>/dev/null; do
    sleep 0.1
    before=$(python3 -c 'import time; print(time.monotonic_ns())')
  done
  echo "$before" >"$out/w$i.before"
done
touch "$out/stop"
wait "$job_pid"
job_pid=
python3 - "$out" "$windows" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
latency, subscribe, detach = [], [], []
for i in range(1, n + 1):
    window = json.load(open(f"{out}/w{i}.json"))["processes"][0]["window"]
    before = int(open(f"{out}/w{i}.before").read())
    latency.append((window["begin_ns"] - before) / 1e6)
    subscribe.append(window["attach_ns"] / 1e6)
    if window["detach"] == "finalized":
        detach.append(window["detach_ns"] / 1e6)
def line(name, values):
    print(f"{name:<18} median {statistics.median(values):8.2f} ms   "
          f"min {min(values):8.2f}   max {max(values):8.2f}   (n={len(values)})")
line("attach latency", latency)
line("CUPTI subscribe", subscribe)
line("detach", detach) if detach else print("detach: no window finalized")
PY
