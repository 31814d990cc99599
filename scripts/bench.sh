#!/usr/bin/env bash
# Builds the collector ingest benchmark (Release) and prints its numbers: records/s on one core
# (Google Benchmark), then RSS while ingesting 1M and 10M kernels (docs/benchmarks.md).
#   scripts/bench.sh [BUILD_DIR]      default BUILD_DIR: build-bench next to this script's repo
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build-bench}"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUATTR_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target collector_ingest_bench
bench="$build/tests/bench/collector_ingest_bench"
echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')"
echo "== throughput (one core)"
taskset -c 0 "$bench" --benchmark_counters_tabular=true
for kernels in 1000000 10000000; do
  echo "== RSS, $kernels kernels"
  taskset -c 0 "$bench" --rss "$kernels" --every 1000000
done

# The shim's cost per NVTX push+pop pair and per kernel launch (issue 8): the same benchmark bare
# and under `gpuattr run`; the difference of the medians (CPU time of the calling thread) is the
# shim's cost. The flush period is 1 ms so that the ring is drained between timed batches.
cmake --build "$build" -j2 --target inject_hot_path_bench
hot="$build/tests/bench/inject_hot_path_bench"
fake_cupti="$build/tests/simgpu/libcupti.so.13"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "== shim hot path: bare"
GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$hot" --benchmark_out="$out/bare.json" \
  --benchmark_out_format=json >/dev/null
echo "== shim hot path: under gpuattr run"
GPUATTR_FLUSH_MS=1 GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$build/collector/gpuattr" run --quiet \
  -o "$out/report.json" -- "$hot" --benchmark_out="$out/traced.json" --benchmark_out_format=json \
  >/dev/null
# Armed mode (issue 5): the same binary registered with a daemon but with no capture window open:
# NVTX keeps each thread's range stack and writes nothing; CUPTI is not subscribed.
echo "== shim hot path: armed under gpuattr daemon"
mkdir -p "$out/reports"
"$build/collector/gpuattr" daemon --quiet --socket "$out/daemon.sock" --reports-dir "$out/reports" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$out/daemon.sock" ] && break; sleep 0.05; done
GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$build/collector/gpuattr" run --armed \
  --socket "$out/daemon.sock" -- "$hot" --benchmark_out="$out/armed.json" \
  --benchmark_out_format=json >/dev/null
kill -TERM "$daemon_pid"
wait "$daemon_pid" || true
python3 - "$out/bare.json" "$out/traced.json" "$out/armed.json" "$out/report.json" <<'PY'
import json, sys
def medians(path):
    runs = json.load(open(path))["benchmarks"]
    return {r["run_name"]: r["cpu_time"] for r in runs if r.get("aggregate_name") == "median"}
bare, traced, armed = medians(sys.argv[1]), medians(sys.argv[2]), medians(sys.argv[3])
report = json.load(open(sys.argv[4]))
loss = report["processes"][0]["loss"]
print(f"{'benchmark':<18}{'bare ns':>10}{'traced ns':>11}{'added ns':>10}{'armed ns':>10}{'added ns':>10}")
for name in sorted(bare):
    print(f"{name:<18}{bare[name]:>10.1f}{traced[name]:>11.1f}{traced[name] - bare[name]:>10.1f}"
          f"{armed[name]:>10.1f}{armed[name] - bare[name]:>10.1f}")
print(f"drops during the traced run: ring {loss['ring_dropped_records']}, "
      f"socket {loss['socket_dropped_records']} (must be 0 for the numbers to hold)")
PY

# Trace import (issue 4): MB/s of Kineto JSON and peak RSS (docs/benchmarks.md §Import).
"$repo/scripts/import_bench.sh" "$build/collector/gpuattr"
