#!/usr/bin/env bash
# The sanitizer tiers CI runs after the main test command (issue 8), each in its own build tree:
#   - asan-ubsan (build-asan/): the unit, component, golden and e2e tests with AddressSanitizer
#     and UndefinedBehaviorSanitizer; any report fails the test (-fno-sanitize-recover=all);
#   - tsan (build-tsan/): the shim's rings, flush thread and transport tests, and the fake CUPTI's
#     dispatch and detach tests, with ThreadSanitizer (halt_on_error=1).
# The presets (CMakePresets.json) carry the sanitizer options. Usage: scripts/test_sanitizers.sh
#
# Each step's wall time is printed. The ASan build first builds the unit, component and golden
# tests only (target gpuattr_fast_tier_tests). With GPUATTR_CI_DEADLINE (epoch seconds; .ci/run
# sets it, as CI must finish in 30 minutes) the ASan e2e step, the longest to build and to run,
# comes last and only when it fits before the deadline; when it does not, the script says so
# and which machine time it saw, and still fails on any finding of the steps that ran.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="$(nproc)"

step() {
  local name="$1"
  shift
  local started="${SECONDS}"
  "$@"
  echo "test_sanitizers: ${name} took $((SECONDS - started)) s" >&2
}

cmake --preset asan-ubsan >/dev/null
started="${SECONDS}"
step "asan-ubsan build of the unit, component and golden tests" \
  cmake --build --preset asan-ubsan -j "${jobs}" --target gpuattr_fast_tier_tests
fast_build_seconds=$((SECONDS - started))
started="${SECONDS}"
step "asan-ubsan unit, component and golden tests" \
  ctest --preset asan-ubsan -L 'unit|component|golden' -LE e2e -j "${jobs}" --timeout 600
fast_tiers_seconds=$((SECONDS - started))

cmake --preset tsan >/dev/null
step "tsan build" cmake --build --preset tsan -j "${jobs}"
step "tsan tests" ctest --preset tsan -j "${jobs}" --timeout 300

# The e2e tests took 2.9 times the fast tiers on the 2-core VM (2026-12-02); 3.5 with margin.
# Building what they need besides took at most half the fast tiers' build (2026-12-05).
needed=$((fast_build_seconds / 2 + fast_tiers_seconds * 7 / 2 + 60))
if [[ -n "${GPUATTR_CI_DEADLINE:-}" ]] && (($(date +%s) + needed > GPUATTR_CI_DEADLINE)); then
  left=$((GPUATTR_CI_DEADLINE - $(date +%s)))
  echo "test_sanitizers: ASan e2e tests NOT BUILT NOR RUN: they need about ${needed} s and" \
    "$((left > 0 ? left : 0)) s are left before CI's deadline (the fast tiers took" \
    "${fast_tiers_seconds} s on this machine); run scripts/test_sanitizers.sh without" \
    "GPUATTR_CI_DEADLINE to run them" >&2
else
  step "asan-ubsan build of the rest" cmake --build --preset asan-ubsan -j "${jobs}"
  step "asan-ubsan e2e tests" ctest --preset asan-ubsan -L e2e -j "${jobs}" --timeout 600
fi
