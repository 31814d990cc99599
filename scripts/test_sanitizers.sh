#!/usr/bin/env bash
# The sanitizer tiers CI runs after the main test command (issue 8), each in its own build tree:
#   - asan-ubsan (build-asan/): the unit, component, golden and e2e tests with AddressSanitizer
#     and UndefinedBehaviorSanitizer; any report fails the test (-fno-sanitize-recover=all);
#   - tsan (build-tsan/): the shim's rings, flush thread and transport tests, and the fake CUPTI's
#     dispatch and detach tests, with ThreadSanitizer (halt_on_error=1).
# The presets (CMakePresets.json) carry the sanitizer options. Usage: scripts/test_sanitizers.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="$(nproc)"

cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "${jobs}"
ctest --preset asan-ubsan -L 'unit|component|golden|e2e' -j "${jobs}" --timeout 600

cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "${jobs}"
ctest --preset tsan -j "${jobs}" --timeout 300
