#!/usr/bin/env bash
# The main job on a fresh machine: build gpuattr, then profile an unmodified PyTorch training
# example (examples/pytorch/train.py) under `gpuattr run` with no flags and print its report: the
# pass tree by module, forward, backward and recompute, the modules table, the steps.
#
# Without a GPU the example runs on the simulated GPU (tests/simgpu): tests/simgpu/python/
# simgpu_torch.py launches one simulated kernel per aten op, as the annotator's e2e test does,
# and the unchanged shim cannot tell it from a real device. With a GPU and a CUDA build of torch,
# the same example runs on the device (--device cuda).
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

# Debian's python3-torch serves /usr/bin/python3, which may not be the first python3 on PATH.
python=""
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [[ -x "${candidate}" ]] && "${candidate}" -c "import torch" 2>/dev/null; then
    python="${candidate}"
    break
  fi
done
if [[ -z "${python}" ]]; then
  echo "demo: no python3 imports torch; scripts/setup.sh installs python3-torch" >&2
  exit 1
fi

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
"${gpuattr}" report "${repo}/out/demo-report.json"

echo "demo: second example, ${scenario} on the simulated GPU" >&2
"${gpuattr}" run --force-overwrite -o "${repo}/out/demo-scenario-report.json" -- \
  "${build}/tests/simgpu/simgpu-run" "${scenario}" --truth "${repo}/out/demo-scenario-truth.json"
echo "demo: reports in out/demo-report.json and out/demo-scenario-report.json, the scenario's" \
  "ground truth in out/demo-scenario-truth.json" >&2
