#!/usr/bin/env bash
# The sanitizer tiers CI runs after the main test command (issue 8), each in its own build tree:
#   - tsan (build-tsan/): the shim's rings, flush thread and transport tests, the fake CUPTI's
#     dispatch and detach tests, and the CUPTI multiplexer's and V2 bridge's, with
#     ThreadSanitizer (halt_on_error=1);
#   - asan-ubsan (build-asan/): the unit, component, golden and e2e tests with AddressSanitizer
#     and UndefinedBehaviorSanitizer; any report fails the test (-fno-sanitize-recover=all).
# The presets (CMakePresets.json) carry the sanitizer options. Usage: scripts/test_sanitizers.sh
#
# Each step's wall time is printed. Order: the TSan tier (small); the ASan build of the unit,
# component and golden tests only (target gpuattr_fast_tier_tests) and those tests; the ASan
# build of the rest and the e2e tests. With GPUATTR_CI_DEADLINE (epoch seconds; .ci/run sets it,
# 85 minutes after it starts, as CI must finish in 90) each ASan step runs only when its estimate
# fits before the deadline; when it does not, the script says so and which machine time it saw,
# and still fails on any finding of the steps that ran. The estimates scale with this machine's speed: .ci/run
# passes the main build's and tests' times (GPUATTR_CI_BUILD_SECONDS, GPUATTR_CI_TESTS_SECONDS).
# Without GPUATTR_CI_DEADLINE (any local run) every step runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="$(nproc)"

step() {
  local name="$1"
  shift
  local started="${SECONDS}"
  "$@"
  step_seconds=$((SECONDS - started))
  echo "test_sanitizers: ${name} took ${step_seconds} s" >&2
}

# fits NAME SECONDS: whether a step estimated at SECONDS ends before CI's deadline; says so when
# it does not.
fits() {
  [[ -z "${GPUATTR_CI_DEADLINE:-}" ]] && return 0
  local left=$((GPUATTR_CI_DEADLINE - $(date +%s)))
  ((left >= $2)) && return 0
  echo "test_sanitizers: $1 NOT RUN: it needs about $2 s and $((left > 0 ? left : 0)) s are left" \
    "before CI's deadline (this machine built in ${GPUATTR_CI_BUILD_SECONDS:-?} s and tested in" \
    "${GPUATTR_CI_TESTS_SECONDS:-?} s); run scripts/test_sanitizers.sh without" \
    "GPUATTR_CI_DEADLINE to run it" >&2
  return 1
}

cmake --preset tsan >/dev/null
step "tsan build" cmake --build --preset tsan -j "${jobs}"
step "tsan tests" ctest --preset tsan -j "${jobs}" --timeout 300

# On the 2-core VM (2026-12-05) the ASan build of the fast tiers took 0.7 times the main build
# (520 s against 750 s) and their tests 0.7 times the main tests (221 s against 316 s); 0.8
# with margin, plus a minute.
fast_estimate=$(((${GPUATTR_CI_BUILD_SECONDS:-0} + ${GPUATTR_CI_TESTS_SECONDS:-0}) * 4 / 5 + 60))
if fits "the ASan unit, component and golden tests" "${fast_estimate}"; then
  cmake --preset asan-ubsan >/dev/null
  step "asan-ubsan build of the unit, component and golden tests" \
    cmake --build --preset asan-ubsan -j "${jobs}" --target gpuattr_fast_tier_tests
  fast_build_seconds="${step_seconds}"
  step "asan-ubsan unit, component and golden tests" \
    ctest --preset asan-ubsan -L 'unit|component|golden' -LE e2e -j "${jobs}" --timeout 600
  fast_tiers_seconds="${step_seconds}"
  # The e2e tests took 2.9 times the fast tiers on the 2-core VM (2026-12-02); 3.5 with margin.
  # Building what they need besides took at most half the fast tiers' build (2026-12-05).
  if fits "the ASan e2e tests" $((fast_build_seconds / 2 + fast_tiers_seconds * 7 / 2 + 60)); then
    step "asan-ubsan build of the rest" cmake --build --preset asan-ubsan -j "${jobs}"
    step "asan-ubsan e2e tests" ctest --preset asan-ubsan -L e2e -j "${jobs}" --timeout 600
  fi
fi
