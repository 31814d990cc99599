#!/usr/bin/env bash
# gpu-check.sh: the real-GPU validation run in one command (docs/gpu-validation.md).
#
#   bash scripts/gpu-check.sh [--build DIR | DIR] [--out DIR]
#
# Uses the build tree DIR (default build-gpu; a kit from scripts/gpu-kit.sh, carried to the GPU
# machine, is such a tree), or builds it when it lacks a program (only where gpuattr's build
# dependencies are installed). Runs cupti_questions (cupti-notes §10) bare; gpu_probe and the
# PyTorch scripts under `gpuattr run`; the PyTorch scripts again under torch.profiler in separate
# processes (the two cannot share CUPTI) and bare (no gpuattr) for the overhead baseline; imports
# the profiler traces with `gpuattr import`; writes the raw outputs plus summary.md/summary.json
# (tests/gpu/compare.py) into --out. Without --out, inside a device call ($OUT set, at most 8
# files come back) it works in $TMPDIR and leaves in $OUT the log, cupti_questions.json, the
# summary and three tarballs of the rest; elsewhere it writes gpu-check-out. Budget: about 4
# minutes on one H200; every step's timeout is cut to fit GPU_CHECK_SECONDS (default 480) in all.
# Without a GPU it refuses and exits 3 before doing anything. Exit 0: every check that ran
# passed; 1: a check or a program failed, or a step was skipped for want of time.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done
bundle_to=""
if [[ -z "$out" && -n "${OUT:-}" ]]; then
  bundle_to="$OUT"
  out="${TMPDIR:-/tmp}/gpu-check-out"
fi
out="${out:-$root/gpu-check-out}"
# Absolute: the PyTorch steps run from tests/gpu.
build="$(realpath -m "$build")"
out="$(realpath -m "$out")"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1 \
   || ! compgen -G "/dev/nvidia[0-9]*" >/dev/null; then
  echo "gpu-check.sh: no GPU here (nvidia-smi missing or failing, or no /dev/nvidia*)." >&2
  echo "gpu-check.sh: this check needs a real CUDA device; nothing was built or run." >&2
  exit 3
fi

mkdir -p "$out"
# In a device call the log goes straight to $OUT, so that it comes back even if the call is cut.
log="${bundle_to:-$out}/gpu-check.log"
exec > >(tee -a "$log") 2>&1
start=$SECONDS
# Every step's timeout is cut to what is left of GPU_CHECK_SECONDS (default 480), so that the
# comparison and the bundle still happen inside a device call's limit when something hangs.
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-480}))
# within LIMIT: LIMIT, or the seconds left before the deadline if fewer (0: none left).
within() {
  local left=$((deadline - SECONDS))
  (( left < 0 )) && left=0
  echo $(( $1 < left ? $1 : left ))
}
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd --version | head -1

gpuattr="$build/collector/gpuattr"
probe="$build/tests/gpu/gpu_probe"
questions="$build/tests/gpu/cupti_questions"
if [[ ! -x "$gpuattr" || ! -x "$probe" || ! -x "$questions" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUATTR_BUILD_GPU_TESTS=ON \
    || exit 1
  cmake --build "$build" -j"$(nproc)" \
    --target gpuattr gpuattr_inject gpu_probe cupti_questions probe_injection || exit 1
fi
# A kit built on another machine fails here, once, if this machine's glibc or libstdc++ is older.
"$gpuattr" --version || { echo "gpu-check.sh: $gpuattr does not run here (see above)"; exit 1; }
py="${PYTHON:-python3}"
# The Python annotator's NVTX library: the kit's copy (scripts/gpu-kit.sh), else the one the build
# found.
[[ -f "$build/lib/libnvtx3interop.so.1" ]] && export GPUATTR_NVTX_LIBRARY="$build/lib/libnvtx3interop.so.1"
gpu_dir="$root/tests/gpu"
status=0

# The libcupti each kind of program must use. A PyTorch process must get the copy torch itself
# loads (its nvidia-cuda-cupti wheel): the shim dlopens GPUATTR_CUPTI_LIBRARY by path, and a
# second copy of CUPTI in one process would be two CUPTIs. Plain CUDA programs take the system's.
torch_cupti="$("$py" - <<'PY' 2>/dev/null
import glob, os, torch
torch.zeros(1, device="cuda")
loaded = [l.split()[-1] for l in open("/proc/self/maps") if "libcupti.so" in l]
wheel = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "**",
                                      "libcupti.so.13*"), recursive=True))
found = loaded or wheel
print(os.path.realpath(found[0]) if found else "")
PY
)"
system_cupti="$(ldconfig -p 2>/dev/null | awk '$1 == "libcupti.so.13" { print $NF; exit }')"
if [[ -z "$system_cupti" ]]; then
  for candidate in /usr/local/cuda*/{lib64,lib,extras/CUPTI/lib64,targets/x86_64-linux/lib}/libcupti.so.13; do
    [[ -e "$candidate" ]] && { system_cupti="$(realpath "$candidate")"; break; }
  done
fi
system_cupti="${system_cupti:-$torch_cupti}"
torch_cupti="${torch_cupti:-$system_cupti}"
echo "libcupti for CUDA programs: ${system_cupti:-none found}; for PyTorch: ${torch_cupti:-none found}"
[[ -n "$system_cupti" ]] || { echo "gpu-check.sh: no libcupti.so.13 on this machine"; exit 1; }

# traced NAME TIMEOUT CUPTI CMD...: CMD under gpuattr run (with run_flags); stdout (the truth) to
# NAME.truth.json.
run_flags=()
import_flags=()  # profiled's `gpuattr import` flags
traced() {
  local name="$1" limit cupti="$3"; limit="$(within "$2")"; shift 3
  echo "== $name (gpuattr run, ${limit} s): $*"
  (( limit > 0 )) || { echo "   skipped: out of time"; status=1; return; }
  GPUATTR_CUPTI_LIBRARY="$cupti" timeout "$limit" "$gpuattr" run --force-overwrite -o "$out/$name.report.json" \
    --activities "$out/$name.activities.jsonl" "${run_flags[@]}" -- "$@" \
    >"$out/$name.truth.json" 2>"$out/$name.stderr" || { echo "   failed: rc=$?"; status=1; }
}
bare() {
  local name="$1" limit; limit="$(within "$2")"; shift 2
  echo "== $name (bare, ${limit} s): $*"
  (( limit > 0 )) || { echo "   skipped: out of time"; status=1; return; }
  timeout "$limit" "$@" >"$out/$name.bare.truth.json" 2>"$out/$name.bare.stderr" \
    || { echo "   failed: rc=$?"; status=1; }
}
profiled() {
  local name="$1" limit; limit="$(within "$2")"; shift 2
  echo "== $name (torch.profiler, ${limit} s): $*"
  (( limit > 0 )) || { echo "   skipped: out of time"; status=1; return; }
  if timeout "$limit" "$@" --torch-profiler "$out/$name.torch_trace.json" \
       >"$out/$name.profiler.truth.json" 2>"$out/$name.profiler.stderr"; then
    "$gpuattr" import --force-overwrite "${import_flags[@]}" "$out/$name.torch_trace.json" \
      -o "$out/$name.import.json" 2>"$out/$name.import.stderr" || { echo "   import failed"; status=1; }
  else
    echo "   failed: rc=$?"; status=1
  fi
}

# cupti-notes §10 first, bare: it is a CUPTI subscriber itself (one child process per question).
echo "== cupti_questions"
LD_LIBRARY_PATH="$(dirname "$system_cupti")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  timeout "$(within 300)" "$questions" >"$out/cupti_questions.json" 2>"$out/cupti_questions.stderr" \
  || { echo "   failed: rc=$?"; status=1; }
[[ -n "$bundle_to" ]] && cp "$out/cupti_questions.json" "$bundle_to/"

for sub in chevron runtime driver streams memcpy memset graph nvtx all; do
  traced "gpu_probe_$sub" 60 "$system_cupti" "$probe" "$sub"
done
bare gpu_probe_steps 60 "$probe" steps
traced gpu_probe_steps 60 "$system_cupti" "$probe" steps

cd "$gpu_dir" || exit 1
bare torch_lesson 120 "$py" torch_lesson.py
traced torch_lesson 120 "$torch_cupti" "$py" torch_lesson.py
profiled torch_lesson 120 "$py" torch_lesson.py
bare torch_train 120 "$py" torch_train.py
traced torch_train 120 "$torch_cupti" "$py" torch_train.py
profiled torch_train 120 "$py" torch_train.py
traced torch_train_graph 120 "$torch_cupti" "$py" torch_train.py --cuda-graph
# The Python annotator on unannotated PyTorch (issue 19): no NVTX in the script, `gpuattr run`
# with no flag; the profiled run gives the reference per module (key_averages).
for model in lesson checkpointed; do
  traced "torch_modules_$model" 120 "$torch_cupti" "$py" torch_modules.py --model "$model" \
    --steps 20 --warmup 5
  profiled "torch_modules_$model" 120 "$py" torch_modules.py --model "$model" --steps 20 \
    --warmup 5
done

# torch.profiler inside a traced program (issue 43): the lesson model with its own profiler
# session, under gpuattr run. Both must be complete: its key_averages against the profiled run
# above (without gpuattr), gpuattr's module rows against its key_averages of the same steps.
# GPUATTR_LOG: the shim says how it shared CUPTI (CUPTI 13.3+'s own several subscribers through
# the V2 bridge, or the multiplexer), the first real-CUPTI evidence of either path.
GPUATTR_LOG=1 traced torch_profiler_inside 120 "$torch_cupti" "$py" torch_modules.py --model lesson \
  --steps 20 --warmup 5 --torch-profiler "$out/torch_profiler_inside.torch_trace.json"
grep -hE "CUPTI (allows several|shared|not shared|.s V1)" "$out/torch_profiler_inside.stderr" |
  sed 's/^/   /' || true

# The demo's GPT (issue 40: checkpointed blocks, F.cross_entropy, AdamW, clipping) on the device:
# bare, under gpuattr run, and torch.compile'd under gpuattr run (compiled_demo.py prints dynamo's
# graph-break and recompile counters after the losses, to compare with the bare compiled run).
gpt="$root/examples/pytorch/train.py"
bare torch_gpt 120 "$py" "$gpt" --device cuda --steps 20
traced torch_gpt 120 "$torch_cupti" "$py" "$gpt" --device cuda --steps 20
# Each compiled run gets Inductor's cache and gpuattr's kernel map cache of its own, so that the
# traced run compiles (and maps) its graphs rather than load the bare run's (issue 42); the
# profiled run is torch.profiler's view of the same compiled kernels, imported with the maps the
# traced run kept.
demo="$root/tests/e2e/pytorch/compiled_demo.py"
maps="$out/torch_gpt_compiled.kernel_maps.jsonl"
TORCHINDUCTOR_CACHE_DIR="$out/inductor.bare" \
  bare torch_gpt_compiled 240 "$py" "$demo" "$gpt" --device cuda --steps 20
run_flags=(--kernel-maps "$maps")
TORCHINDUCTOR_CACHE_DIR="$out/inductor.traced" GPUATTR_KERNEL_MAP_CACHE="$out/kernel-maps" \
  traced torch_gpt_compiled 240 "$torch_cupti" "$py" "$demo" "$gpt" --device cuda --steps 20
run_flags=()
[[ -f "$maps" ]] && import_flags=(--kernel-maps "$maps")
TORCHINDUCTOR_CACHE_DIR="$out/inductor.profiled" \
  profiled torch_gpt_compiled 240 "$py" "$demo" "$gpt" --device cuda --steps 20
import_flags=()

# FLOPs and MFU (issue 22): the lesson model under --flops, MFU's denominator from a bare second
# run (--clean-steps); torch.profiler's with_flops figures come from the profiled run above.
run_flags=(--flops --clean-steps 10 --skip-steps 5)
traced torch_modules_flops 240 "$torch_cupti" "$py" torch_modules.py --model lesson --steps 20 \
  --warmup 5
run_flags=()

# Late attach (issue 23, docs/attach.md §Injection): torch_train.py started bare, without gpuattr
# (only GPUATTR_CUPTI_LIBRARY in its environment, naming torch's own CUPTI for the shim to come);
# once CUDA is up in it, `gpuattr attach --pid` loads the shim with ptrace and captures two 2 s
# windows; then the job is stopped. compare.py reads late_attach.N.json and late_attach.stderr.
late_attach() {
  local limit; limit="$(within 120)"
  echo "== late attach (${limit} s)"
  (( limit > 30 )) || { echo "   skipped: out of time"; status=1; return; }
  local dir; dir="$(mktemp -d)"; chmod 700 "$dir"; mkdir -m 700 "$dir/reports"
  "$gpuattr" daemon --quiet --socket "$dir/d.sock" --reports-dir "$dir/reports" &
  local daemon=$!
  GPUATTR_CUPTI_LIBRARY="$torch_cupti" "$py" torch_train.py --steps 1000000 --warmup 10 \
    >/dev/null 2>"$out/late_attach.job.stderr" &
  local job=$! waited=0
  until grep -q 'libcuda\.so' "/proc/$job/maps" 2>/dev/null || (( waited >= 60 )); do
    sleep 1; waited=$((waited + 1))
  done
  sleep 5  # past the warm-up steps
  for window in 1 2; do
    timeout 60 "$gpuattr" attach --pid "$job" --duration 2s --socket "$dir/d.sock" \
      --force-overwrite -o "$out/late_attach.$window.json" 2>>"$out/late_attach.stderr" \
      || { echo "   attach $window failed: rc=$?"; status=1; }
  done
  kill -TERM "$job" "$daemon" 2>/dev/null
  wait "$job" "$daemon" 2>/dev/null
  rm -rf "$dir"
}
late_attach

# mode="reduce-overhead": cudagraph trees capture one call of each graph's wrapper, inside its
# range, then replay it as a CUDA graph; compare.py wants the replayed kernels placed by module.
# Last, so that its compile time takes nothing from the checks above.
TORCHINDUCTOR_CACHE_DIR="$out/inductor.cudagraphs" GPUATTR_KERNEL_MAP_CACHE="$out/kernel-maps.cg" \
  traced torch_gpt_cudagraphs 240 "$torch_cupti" "$py" "$demo" "$gpt" --device cuda --steps 20 \
  --compile-mode reduce-overhead

"$py" "$gpu_dir/compare.py" "$out" || status=1
echo "gpu-check.sh: done in $((SECONDS - start)) s, exit $status; outputs in $out"

if [[ -n "$bundle_to" ]]; then
  cp "$out/summary.md" "$out/summary.json" "$bundle_to/"
  (cd "$out" && tar -czf "$bundle_to/gpu-check-raw.tar.gz" --exclude='*.activities.jsonl' \
     --exclude='*.torch_trace.json' --exclude='inductor.*' .)
  # Separate, so that one over the 16 MiB a returned file may have does not hold back the others.
  for kind in activities.jsonl torch_trace.json; do
    (cd "$out" && find . -maxdepth 1 -name "*.$kind" -print0 \
       | tar -czf "$bundle_to/gpu-check-${kind%%.*}.tar.gz" --null -T -)
  done
  ls -la "$bundle_to"
fi
exit $status
