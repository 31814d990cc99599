#!/usr/bin/env bash
# Peak memory of `gpuattr merge` against the number of inputs (issue 20): N small reports (a
# real 1-rank import, copied N times with its own host, pid and rank each) merged into one, for
# N = 16 ... 1024. Memory must follow the largest input, not the sum: the rows show the inputs'
# total size and the merged report's beside the peak RSS. Results go in docs/benchmarks.md §Merge.
#   scripts/merge_bench.sh [GPUATTR]   default: build-bench/collector/gpuattr (Release)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=release_gpuattr.sh
source "$repo/scripts/release_gpuattr.sh" "${1:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

trace="$repo/../shared/traces/hta_2rank_sampled/sampled_rank-0.json.gz"
"$gpuattr" import -q -o "$work/one.json" "$trace"
/usr/bin/python3 - "$work/one.json" "$work/inputs" 1024 <<'EOF'
import json, os, sys
one = json.load(open(sys.argv[1]))
os.makedirs(sys.argv[2])
for i in range(int(sys.argv[3])):
    host = "node-%04d" % (i // 8)
    report = json.loads(json.dumps(one))
    report["capture"]["host"] = host
    for process in report["processes"]:
        process.update(host=host, pid=1000 + i, rank=i, local_rank=i % 8)
    for row in report["summary"]["ranks"]:
        row.update(host=host, pid=1000 + i, rank=i, local_rank=i % 8)
    json.dump(report, open(os.path.join(sys.argv[2], "r%04d.json" % i), "w"), indent=2)
EOF

echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')"
echo "== one input: $(stat -c %s "$work/inputs/r0000.json") bytes"
all=("$work"/inputs/r*.json)
for n in 16 64 256 1024; do
  inputs=("${all[@]:0:n}")
  sum=$(cat "${inputs[@]}" | wc -c)
  /usr/bin/time -f "%e %M" -o "$work/time" "$gpuattr" merge -q --force-overwrite \
    -o "$work/job.json" "${inputs[@]}"
  read -r seconds rss <"$work/time"
  awk -v n="$n" -v s="$sum" -v o="$(stat -c %s "$work/job.json")" -v t="$seconds" -v r="$rss" \
    'BEGIN{printf "inputs %5d  inputs total %8.1f MB  merged %8.1f MB  wall %6.2f s  peak RSS %6.1f MiB\n",
           n, s/1e6, o/1e6, t, r/1024}'
done
