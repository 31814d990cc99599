#!/usr/bin/env bash
# Times `gpuattr import` (issue 4): MB/s of uncompressed Kineto JSON on one core and peak RSS,
# on the largest trace in ../shared/traces and on a synthetic Kineto trace of about 200 MB
# (generated here, gzip-compressed, not kept). Results go in docs/benchmarks.md §Import.
#   scripts/import_bench.sh [GPUATTR]   default: build-bench/collector/gpuattr (Release)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=release_gpuattr.sh
source "$repo/scripts/release_gpuattr.sh" "${1:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measure() {  # measure NAME FILE [FLAG...]: best of 3 by CPU time (user + sys; one thread)
  local name="$1" file="$2" json_bytes best="" wall="" seconds user sys rss cpu
  shift 2
  json_bytes=$(gzip -dcf "$file" | wc -c)
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" taskset -c 0 "$gpuattr" import -q --force-overwrite \
      -o "$work/report.json" "$@" "$file"
    read -r seconds user sys rss <"$work/time"
    cpu=$(awk "BEGIN{print $user + $sys}")
    if [[ -z "$best" ]] || awk "BEGIN{exit !($cpu < $best)}"; then best=$cpu; wall=$seconds; fi
  done
  awk -v n="$name" -v b="$json_bytes" -v c="$(stat -c %s "$file")" -v s="$best" -v w="$wall" \
    -v r="$rss" 'BEGIN{printf "%-26s json %6.1f MB  file %5.1f MB  cpu %5.2f s (wall %5.2f s)  %6.1f MB/s  peak RSS %6.1f MiB\n",
           n, b/1e6, c/1e6, s, w, (s > 0 ? b/1e6/s : 0), r/1024}'
}

echo "== machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'); one core (taskset -c 0)"
largest=$(ls -S "$repo"/../shared/traces/*/*.json.gz | head -1)
measure "$(basename "$largest")" "$largest"

# Synthetic: ProfilerSteps of cpu_ops, launches, kernels and flows, with fractional-µs epoch
# timestamps, in the current Kineto layout (~400 B per event). With "modules": a with_modules
# training step instead: every op inside nn.Module events (Model_0 > Layer_k > Linear_k), with a
# sequence number, and its backward op on the autograd thread, linked by a fwdbwd flow, launching
# a kernel of its own.
generate() {  # generate OUT [modules]
python3 - "$@" <<'PY'
import gzip, sys
modules = len(sys.argv) > 2
target = 200_000_000
out = gzip.open(sys.argv[1], "wt", compresslevel=1)
out.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0}, "traceEvents": [\n')
ts, corr, written, first = 1700000000000000.0, 1, 0, True
def emit(text):
    global written, first
    out.write(text if first else ",\n" + text)
    first = False
    written += len(text) + 2
step = 0
while written < target:
    emit(f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 100, "tid": 100, "ts": {ts:.3f}, "dur": 1000000.5, "args": {{"External id": {corr}}}}}')
    if modules:
        emit(f'{{"ph": "X", "cat": "python_function", "name": "nn.Module: Model_0", "pid": 100, "tid": 100, "ts": {ts + 1:.3f}, "dur": 499999.0, "args": {{"Python id": {corr}, "Python module id": 0}}}}')
    for op in range(5000):
        t = ts + 10 + op * 190.123 / (2 if modules else 1)
        if modules:
            layer = op // 50
            if op % 50 == 0:
                emit(f'{{"ph": "X", "cat": "python_function", "name": "nn.Module: Layer_{layer}", "pid": 100, "tid": 100, "ts": {t - 1:.3f}, "dur": {50 * 95.0615 - 2:.3f}, "args": {{"Python id": {corr}, "Python module id": {layer}}}}}')
            emit(f'{{"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_{op}", "pid": 100, "tid": 100, "ts": {t - 0.5:.3f}, "dur": 60.0, "args": {{"Python id": {corr}, "Python module id": {op}}}}}')
            emit(f'{{"ph": "s", "id": {corr}, "pid": 100, "tid": 100, "ts": {t:.3f}, "cat": "fwdbwd", "name": "fwdbwd"}}')
            b = ts + 500000 + (4999 - op) * 95.0615
            emit(f'{{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddmmBackward0", "pid": 100, "tid": 200, "ts": {b:.3f}, "dur": 40.5, "args": {{"External id": {corr}, "Sequence number": {corr}, "Fwd thread id": 1}}}}')
            emit(f'{{"ph": "f", "id": {corr}, "pid": 100, "tid": 200, "ts": {b + 0.5:.3f}, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"}}')
            emit(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 200, "ts": {b + 5:.3f}, "dur": 4.5, "args": {{"cbid": 211, "correlation": {corr + 10_000_000}}}}}')
            emit(f'{{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_64x64_nn", "pid": 0, "tid": 8, "ts": {b + 20:.3f}, "dur": 30.125, "args": {{"device": 0, "stream": 8, "correlation": {corr + 10_000_000}, "grid": [64, 1, 1], "block": [128, 1, 1]}}}}')
        emit(f'{{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 100, "tid": 100, "ts": {t:.3f}, "dur": 50.25, "args": {{"External id": {corr}, "Record function id": 0, "Sequence number": {corr}, "Ev Idx": {corr}, "Input Dims": [[32, 1024], [1024, 1024], [1024]], "Input type": ["float", "float", "float"]}}}}')
        emit(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": {t + 5:.3f}, "dur": 4.5, "args": {{"External id": {corr}, "cbid": 211, "correlation": {corr}}}}}')
        emit(f'{{"ph": "s", "id": {corr}, "pid": 100, "tid": 100, "ts": {t + 5:.3f}, "cat": "ac2g", "name": "ac2g"}}')
        emit(f'{{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", "pid": 0, "tid": 7, "ts": {t + 20:.3f}, "dur": 80.375, "args": {{"External id": {corr}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {corr}, "registers per thread": 32, "shared memory": 0, "blocks per SM": 21.5, "warps per SM": 86.0, "grid": [4096, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 100}}}}')
        emit(f'{{"ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {t + 20:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}')
        corr += 1
    ts += 1000001.0
    step += 1
out.write("\n]}\n")
out.close()
PY
}
generate "$work/synthetic.json.gz"
measure "synthetic (~200 MB JSON)" "$work/synthetic.json.gz"
rm -f "$work/synthetic.json.gz"
generate "$work/modules.json.gz" modules
measure "modules (~200 MB JSON)" "$work/modules.json.gz"
measure "modules, --no-modules" "$work/modules.json.gz" --no-modules
