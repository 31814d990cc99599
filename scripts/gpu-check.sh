#!/usr/bin/env bash
# gpu-check.sh: the real-GPU validation run in one command (docs/gpu-validation.md).
#
#   bash scripts/gpu-check.sh [--build DIR | DIR] [--out DIR]
#
# Builds gpuattr, the shim and tests/gpu into DIR (default build-gpu; a carried, already built DIR
# is reused), runs gpu_probe and the PyTorch scripts under `gpuattr run`, the PyTorch scripts again
# under torch.profiler in separate processes (the two cannot share CUPTI) and bare (no gpuattr) for
# the overhead baseline, imports the profiler traces with `gpuattr import`, and writes the raw
# outputs plus summary.md / summary.json into --out (default $OUT, else gpu-check-out). Budget:
# well under 8 minutes on one H200. Without a GPU it refuses and exits 3 before doing anything.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
out="${OUT:-$root/gpu-check-out}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1 \
   || ! compgen -G "/dev/nvidia[0-9]*" >/dev/null; then
  echo "gpu-check.sh: no GPU here (nvidia-smi missing or failing, or no /dev/nvidia*)." >&2
  echo "gpu-check.sh: this check needs a real CUDA device; nothing was built or run." >&2
  exit 3
fi

mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee -a "$log") 2>&1
start=$SECONDS
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

if [[ ! -x "$build/collector/gpuattr" || ! -x "$build/tests/gpu/gpu_probe" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUATTR_BUILD_GPU_TESTS=ON \
    || exit 1
  cmake --build "$build" -j"$(nproc)" --target gpuattr gpuattr_inject gpu_probe || exit 1
fi
gpuattr="$build/collector/gpuattr"
probe="$build/tests/gpu/gpu_probe"
py="${PYTHON:-python3}"
gpu_dir="$root/tests/gpu"
status=0

# run NAME TIMEOUT CMD...: the command under gpuattr run; stdout (the truth) to NAME.truth.json.
traced() {
  local name="$1" limit="$2"; shift 2
  echo "== $name (gpuattr run): $*"
  timeout "$limit" "$gpuattr" run -o "$out/$name.report.json" --activities "$out/$name.activities.jsonl" \
    -- "$@" >"$out/$name.truth.json" 2>"$out/$name.stderr" || { echo "   failed: rc=$?"; status=1; }
}
bare() {
  local name="$1" limit="$2"; shift 2
  echo "== $name (bare): $*"
  timeout "$limit" "$@" >"$out/$name.bare.truth.json" 2>"$out/$name.bare.stderr" \
    || { echo "   failed: rc=$?"; status=1; }
}
profiled() {
  local name="$1" limit="$2"; shift 2
  echo "== $name (torch.profiler): $*"
  if timeout "$limit" "$@" --torch-profiler "$out/$name.torch_trace.json" \
       >"$out/$name.profiler.truth.json" 2>"$out/$name.profiler.stderr"; then
    "$gpuattr" import "$out/$name.torch_trace.json" -o "$out/$name.import.json" \
      2>"$out/$name.import.stderr" || { echo "   import failed"; status=1; }
  else
    echo "   failed: rc=$?"; status=1
  fi
}

for sub in chevron runtime driver streams memcpy memset graph nvtx all; do
  traced "gpu_probe_$sub" 60 "$probe" "$sub"
done
bare gpu_probe_steps 60 "$probe" steps
traced gpu_probe_steps 60 "$probe" steps

cd "$gpu_dir" || exit 1
bare torch_lesson 120 "$py" torch_lesson.py
traced torch_lesson 120 "$py" torch_lesson.py
profiled torch_lesson 120 "$py" torch_lesson.py
bare torch_train 120 "$py" torch_train.py
traced torch_train 120 "$py" torch_train.py
profiled torch_train 120 "$py" torch_train.py
traced torch_train_graph 120 "$py" torch_train.py --cuda-graph

"$py" "$gpu_dir/compare.py" "$out" || status=1
echo "gpu-check.sh: done in $((SECONDS - start)) s; outputs in $out"
exit $status
