#!/usr/bin/env bash
# Records the golden tier's streams again and rewrites its expected reports (tests/golden/).
# Usage: scripts/update_goldens.sh [BUILD_DIR] [--keep-streams]
#   BUILD_DIR       a configured and built tree (default: build): its shim and simgpu-run record,
#                   its gpuattr_golden_tests rewrites report.json and activities.jsonl;
#   --keep-streams  only rewrite the expected files from the committed streams (after a change
#                   of the collector that is meant to change reports).
# Read `git diff tests/golden` before committing: every changed line is a changed report.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-${repo}/build}" && pwd)"
keep_streams=false
[[ "${2:-}" == "--keep-streams" ]] && keep_streams=true
if ! ${keep_streams}; then
  for case_dir in "${repo}"/tests/golden/*/; do
    name="$(basename "${case_dir}")"
    scenario="${case_dir}scenario.json"
    [[ -f "${scenario}" ]] || scenario="${repo}/tests/scenarios/${name}.json"
    /usr/bin/python3 "${repo}/scripts/behaviour_snapshot.py" record-one --build "${build}" \
      "${scenario}" "${case_dir}stream.rec"
  done
fi
cmake --build "${build}" --target gpuattr_golden_tests
GPUATTR_UPDATE_GOLDENS=1 "${build}/tests/golden/gpuattr_golden_tests"
git -C "${repo}" diff --stat -- tests/golden
