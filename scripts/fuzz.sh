#!/usr/bin/env bash
# Coverage-guided fuzzing of the six targets (docs/fuzzing.md), each for SECONDS, PARALLEL at a
# time (default: half the cores, at least 1), from a copy of its seed corpus in tests/fuzz/corpus.
# Needs the fuzz preset built (cmake --preset fuzz && cmake --build --preset fuzz). Each target's
# grown corpus, crash artifacts and log go to WORK_DIR/<target>/; the last lines of each log
# (libFuzzer's final stats) are printed. Exit status 1 when any target found a crash or leak.
#   [TARGETS="merge import"] scripts/fuzz.sh SECONDS [WORK_DIR]   (default: all six targets; a
#   new temporary WORK_DIR)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:?usage: scripts/fuzz.sh SECONDS [WORK_DIR]}"
work="${2:-$(mktemp -d)}"
parallel="${PARALLEL:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}"
export LSAN_OPTIONS="suppressions=$repo/tests/sanitizers/lsan.supp:print_suppressions=0"

run_target() {  # run_target NAME: one libFuzzer run of gpuattr_NAME_fuzzer
  local name="$1" dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -n "$repo/tests/fuzz/corpus/$name/"* "$dir/corpus/" 2>/dev/null || true
  local status=0
  nice -n 10 "$repo/build-fuzz/tests/fuzz/gpuattr_${name}_fuzzer" "$dir/corpus" \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    >"$dir/log" 2>&1 || status=$?
  echo "$status" >"$dir/status"
}

read -r -a targets <<<"${TARGETS:-import wire gate report merge nsys}"
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  for name in "${targets[@]:i:parallel}"; do run_target "$name" & done
  wait
done
failed=0
for name in "${targets[@]}"; do
  echo "== $name (exit $(cat "$work/$name/status"); corpus $(ls "$work/$name/corpus" | wc -l) files;" \
       "artifacts: $(ls "$work/$name/artifacts" | wc -l))"
  grep -E '^(stat::|#[0-9]+ +DONE)|SUMMARY|ERROR' "$work/$name/log" | tail -8
  [[ "$(cat "$work/$name/status")" == 0 ]] || failed=1
done
echo "work directory: $work"
exit "$failed"
