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
