#!/usr/bin/env bash
# Runs the ctest tests matching each REGEX N times while a parallel build keeps every core busy,
# and counts the failures: a test whose outcome depends on the scheduler fails here first. The
# load is a scratch configure of this tree under TMPDIR, rebuilt from clean with -j$(nproc) in a
# loop until the runs end; it starts before the first run. Exit status 1 when any run failed.
# Usage: scripts/test_under_load.sh [-n N] [-b BUILD_DIR] REGEX...   (N defaults to 20; BUILD_DIR,
# the build whose tests run, to build/). Example (issue 41):
#   scripts/test_under_load.sh 'data-loader-bound' 'graph-replayed microstep' '64 threads'
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=20
build="${repo}/build"
while getopts "n:b:" option; do
  case "${option}" in
    n) runs="${OPTARG}" ;;
    b) build="${OPTARG}" ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if (($# == 0)); then
  echo "usage: scripts/test_under_load.sh [-n N] [-b BUILD_DIR] REGEX..." >&2
  exit 2
fi

load_dir="$(mktemp -d "${TMPDIR:-/tmp}/gpuattr-load-XXXXXX")"
load_pid=""
stop_load() {
  if [[ -n "${load_pid}" ]]; then
    kill -- "-${load_pid}" 2>/dev/null || true
    wait "${load_pid}" 2>/dev/null || true
  fi
  rm -rf "${load_dir}"
}
trap stop_load EXIT

cmake -S "${repo}" -B "${load_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"${load_dir}.log" 2>&1 ||
  { cat "${load_dir}.log" >&2; exit 1; }
rm -f "${load_dir}.log"
# Its own process group, so that stopping it stops the compilers too.
set -m
(while true; do cmake --build "${load_dir}" --clean-first -j "$(nproc)" >/dev/null 2>&1 || true; done) &
load_pid=$!
set +m
sleep 5  # the compilers are running before the first test starts

failed_total=0
for regex in "$@"; do
  failed=0
  started=${SECONDS}
  for ((run = 1; run <= runs; run++)); do
    if ! ctest --test-dir "${build}" -R "${regex}" --output-on-failure >"${load_dir}/run.log" 2>&1 ||
       grep -q "No tests were found" "${load_dir}/run.log"; then
      failed=$((failed + 1))
      echo "--- '${regex}' run ${run} failed:" >&2
      tail -40 "${load_dir}/run.log" >&2
    fi
  done
  tests="$(ctest --test-dir "${build}" -N -R "${regex}" | sed -n 's/^Total Tests: //p')"
  echo "'${regex}' (${tests} tests): ${runs} runs under load in $((SECONDS - started)) s, ${failed} failed"
  failed_total=$((failed_total + failed))
done
echo "load: $(nproc) compilers from a clean rebuild of the tree, running throughout"
((failed_total == 0))
