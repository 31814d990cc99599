#!/usr/bin/env bash
# The main job on a fresh machine: build gpuattr, then profile an unmodified PyTorch training
# example (examples/pytorch/train.py: a small GPT with checkpointed blocks, F.cross_entropy inside
# the model, AdamW and gradient clipping) under `gpuattr run` with no flags, on torch 2.13 from
# the project's virtual environment, and print its report: the pass tree by module, one row per
# module with its forward, backward, recompute and r, the phases (loss, the clipping's optimizer
# time), the steps.
#
# Without a GPU the example runs on the simulated GPU (tests/simgpu): tests/simgpu/python/
# simgpu_torch.py launches, for every aten op, what a GPU would (tests/simgpu/python/
# simgpu_kernels.py: no kernel for a view, a device-to-host copy for .item()), as the annotator's
# e2e tests do, and the unchanged shim cannot tell it from a real device. With a GPU and a CUDA
# build of torch, the same example runs on the device (--device cuda).
#
# The second example is a simulated-GPU scenario (threads with their own ranges), with the
# simulator's ground truth beside its report.
#   scripts/demo.sh [SCENARIO.json]
# Writes out/demo-report.json, out/demo-scenario-report.json and out/demo-scenario-truth.json.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${repo}/build"
scenario="${1:-${repo}/tests/scenarios/threads_own_ranges.json}"
gpuattr="${build}/collector/gpuattr"

"${repo}/scripts/setup.sh" "${build}"
mkdir -p "${repo}/out"

# torch 2.13 from the project's virtual environment (scripts/setup.sh makes it); Debian's
# python3-torch under /usr/bin/python3 only when that is missing.
python=""
for candidate in "${repo}/.venv/bin/python" /usr/bin/python3; do
  if [[ -x "${candidate}" ]] && "${candidate}" -c "import torch" 2>/dev/null; then
    python="${candidate}"
    break
  fi
done
if [[ -z "${python}" ]]; then
  echo "demo: no python imports torch; scripts/setup.sh installs it in .venv" >&2
  exit 1
fi
echo "demo: torch $("${python}" -c "import torch; print(torch.__version__)") (${python})" >&2

if "${python}" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "demo: profiling examples/pytorch/train.py on the GPU" >&2
  "${gpuattr}" run --force-overwrite -o "${repo}/out/demo-report.json" -- \
    "${python}" "${repo}/examples/pytorch/train.py" --device cuda
else
  echo "demo: profiling examples/pytorch/train.py on the simulated GPU (no GPU here)" >&2
  GPUATTR_CUPTI_LIBRARY="${build}/tests/simgpu/libcupti.so" \
    SIMGPU_PYWORK_LIBRARY="${build}/tests/e2e/libsimgpu_pywork.so" \
    PYTHONPATH="${repo}/tests/simgpu/python${PYTHONPATH:+:${PYTHONPATH}}" \
    "${gpuattr}" run --force-overwrite -o "${repo}/out/demo-report.json" -- \
    "${python}" -m simgpu_torch "${repo}/examples/pytorch/train.py"
fi
"${gpuattr}" report --top 40 "${repo}/out/demo-report.json"

echo "demo: second example, ${scenario} on the simulated GPU" >&2
"${gpuattr}" run --force-overwrite -o "${repo}/out/demo-scenario-report.json" -- \
  "${build}/tests/simgpu/simgpu-run" "${scenario}" --truth "${repo}/out/demo-scenario-truth.json"
echo "demo: reports in out/demo-report.json and out/demo-scenario-report.json, the scenario's" \
  "ground truth in out/demo-scenario-truth.json" >&2
