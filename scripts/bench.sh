#!/usr/bin/env bash
# Builds the benchmarks (Release) and prints every figure of docs/benchmarks.md: collector ingest
# records/s on one core (Google Benchmark) and RSS while ingesting 1M and 10M kernels; the shim's
# cost per NVTX pair and per launch (bare, empty subscriber, traced, armed); a 1M-launch run with
# and without gpuattr; trace import speed; merge memory.
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
echo "== report writing (one core)"
cmake --build "$build" -j2 --target report_write_bench
taskset -c 0 "$build/tests/bench/report_write_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true
echo "== throughput on a recorded stream of 10M kernels (30M records), one core"
taskset -c 0 "$bench" --recorded 10000000
for kernels in 1000000 10000000; do
  echo "== RSS, $kernels kernels"
  taskset -c 0 "$bench" --rss "$kernels" --every 1000000
done

# The shim's cost per NVTX push+pop pair and per kernel launch (issue 8): the same benchmark bare,
# with an empty CUPTI subscriber (what the fake CUPTI's dispatch costs any tool), under
# `gpuattr run`, under `gpuattr run` with that empty subscriber as a second client sharing CUPTI
# (issue 43), and armed under `gpuattr daemon` with no window open. Each configuration runs
# once per round, rounds alternate (HOT_PATH_ROUNDS, default 3) so that drift hits all alike, and
# a configuration's figure is the median over rounds of its in-process median (CPU time of the
# calling thread). The flush period is 1 ms so that the ring is drained between timed batches.
cmake --build "$build" -j2 --target inject_hot_path_bench simgpu_fake_cupti gpuattr_inject
hot="$build/tests/bench/inject_hot_path_bench"
fake_cupti="$build/tests/simgpu/libcupti.so.13"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
source "$repo/scripts/bench_lib.sh"
start_bench_daemon "$build/collector/gpuattr" "$out"
for round in $(seq "${HOT_PATH_ROUNDS:-3}"); do
  echo "== shim hot path, round $round: bare, empty subscriber, gpuattr run, + client, armed"
  GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$hot" --benchmark_out="$out/bare.$round.json" \
    --benchmark_out_format=json >/dev/null
  GPUATTR_BENCH_EMPTY_SUBSCRIBER=1 GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$hot" \
    --benchmark_filter=BM_KernelLaunch --benchmark_out="$out/empty.$round.json" \
    --benchmark_out_format=json >/dev/null
  GPUATTR_FLUSH_MS=1 GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$build/collector/gpuattr" run --quiet \
    -o "$out/report.$round.json" -- "$hot" --benchmark_out="$out/traced.$round.json" \
    --benchmark_out_format=json >/dev/null
  GPUATTR_BENCH_SECOND_CLIENT=1 GPUATTR_FLUSH_MS=1 GPUATTR_CUPTI_LIBRARY="$fake_cupti" \
    "$build/collector/gpuattr" run --quiet -o "$out/report.client.$round.json" -- "$hot" \
    --benchmark_filter=BM_KernelLaunch --benchmark_out="$out/client.$round.json" \
    --benchmark_out_format=json >/dev/null
  GPUATTR_CUPTI_LIBRARY="$fake_cupti" "$build/collector/gpuattr" run --armed \
    --socket "$out/d.sock" -- "$hot" --benchmark_out="$out/armed.$round.json" \
    --benchmark_out_format=json >/dev/null
done
kill -TERM "$daemon_pid"
wait "$daemon_pid" || true
python3 - "$out" "$repo/scripts" <<'PY'
import glob, json, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from bench_medians import medians
bare, empty, traced, client, armed = (
    medians(out, c) for c in ("bare", "empty", "traced", "client", "armed"))
def cell(value):
    return f"{value:>11.1f}" if value is not None else f"{'-':>11}"
print(f"{'benchmark':<16}" + "".join(f"{h:>11}" for h in [
    "bare", "empty sub", "traced", "+vs bare", "+vs empty", "+client", "+vs trace", "armed",
    "+vs bare"]))
for name in sorted(bare):
    b, t, a = bare[name][0], traced[name][0], armed[name][0]
    e = empty[name][0] if name in empty else None
    c = client[name][0] if name in client else None
    print(f"{name:<16}" + "".join(cell(v) for v in [
        b, e, t, t - b, t - e if e is not None else None, c, c - t if c is not None else None,
        a, a - b]))
for name in sorted(bare):
    print(f"rounds {name}: bare {bare[name][1]}, empty {empty.get(name, (0, '-'))[1]}, "
          f"traced {traced[name][1]}, client {client.get(name, (0, '-'))[1]}, "
          f"armed {armed[name][1]}")
for path in sorted(glob.glob(f"{out}/report.*.json")):
    loss = json.load(open(path))["processes"][0]["loss"]
    print(f"drops in {path.rsplit('/', 1)[1]}: ring {loss['ring_dropped_records']}, "
          f"socket {loss['socket_dropped_records']} (must be 0 for the numbers to hold)")
PY

# NVTX bursts (issues 21 and 41): 1M and 2.5M pairs/s for 2 s, 1,000,000 pairs back to back from
# one thread, and 64 threads at once, under `gpuattr run` at the default flush period; each run's
# drops (must be 0) and memory (docs/benchmarks.md §NVTX bursts).
cmake --build "$build" -j2 --target nvtx_burst_bench
for run in $(seq "${BURST_ROUNDS:-3}"); do
  for case in 'Paced/1000000' 'Paced/2500000' 'Unpaced/' 'UnpacedThreads/'; do
    report="$out/burst.${case//\//_}.$run.json"
    "$build/collector/gpuattr" run --quiet -o "$report" -- "$build/tests/bench/nvtx_burst_bench" \
      --benchmark_filter="BM_Nvtx$case" 2>/dev/null | grep '^BM_'
    /usr/bin/python3 -c 'import json, sys
loss = json.load(open(sys.argv[1]))["processes"][0]["loss"]
print(f"  drops: ring {loss['"'"'ring_dropped_records'"'"']}, socket {loss['"'"'socket_dropped_records'"'"']}")' "$report"
    # Every pair is a step row (the burst range is the only one): 64 x 100,000 pairs make a 5 GB
    # report, read once.
    rm -f "$report"
  done
done

# The end-to-end figure (issue 8): a simulated run of 1M launches with and without gpuattr.
cmake --build "$build" -j2 --target simgpu-run
"$repo/scripts/bench_end_to_end.sh" "$build"

# Trace import (issue 4): MB/s of Kineto JSON and peak RSS (docs/benchmarks.md §Import).
"$repo/scripts/import_bench.sh" "$build/collector/gpuattr"

# Merging a job's reports (issue 20): peak RSS against the number of inputs (§Merge).
"$repo/scripts/merge_bench.sh" "$build/collector/gpuattr"

# Detach leaves no cost (issue 23): launch and NVTX cost after ten late-attach windows (§Attach to
# a process started without gpuattr).
"$repo/scripts/bench_late_attach.sh" "$build"
