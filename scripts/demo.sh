#!/usr/bin/env bash
# The main job on a fresh machine: build gpuattr, then profile a workload and print its report.
# There is no GPU workload of our own yet, so this profiles a scenario on the simulated GPU
# (tests/simgpu), which the unchanged shim cannot tell from a real one, and writes
# out/demo-report.json plus the simulator's ground truth beside it.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${repo}/build"
scenario="${1:-${repo}/tests/scenarios/threads_own_ranges.json}"

"${repo}/scripts/setup.sh" "${build}"
mkdir -p "${repo}/out"
echo "demo: profiling ${scenario} on the simulated GPU" >&2
"${build}/collector/gpuattr" run -o "${repo}/out/demo-report.json" -- \
  "${build}/tests/simgpu/simgpu-run" "${scenario}" --truth "${repo}/out/demo-truth.json"
echo "demo: report in out/demo-report.json, ground truth in out/demo-truth.json" >&2
