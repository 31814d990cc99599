#!/usr/bin/env bash
# Fails when a name in the collector or the shim (sources and their headers, and the wire headers)
# breaks the house style's naming rules (.clang-tidy's readability-identifier-naming options:
# CamelCase types and functions, snake_case variables and accessors, members_ with a trailing
# underscore, kConstants, GPUATTR_ macros). Needs a configured build directory for its
# compile_commands.json. Usage: scripts/check_naming.sh [BUILD_DIR] (default: build).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${repo}/build}"
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
if [[ -z "${tidy}" ]]; then
  echo "check_naming: clang-tidy (14) not found; scripts/setup.sh installs it" >&2
  exit 1
fi
if [[ ! -f "${build}/compile_commands.json" ]]; then
  echo "check_naming: no ${build}/compile_commands.json; configure the build first" >&2
  exit 1
fi
cd "${repo}"
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
status=0
git ls-files 'collector/*.cpp' 'inject/*.cpp' |
  xargs -P "$(nproc)" -n 8 "${tidy}" -p "${build}" --quiet \
    --checks='-*,readability-identifier-naming' --warnings-as-errors='*' \
    --header-filter="^${repo}/(collector|inject|schemas)/" >"${log}" 2>&1 || status=$?
if ((status != 0)); then
  grep -E "(warning|error):" "${log}" | sort -u >&2
  echo "check_naming: names above break the house style (.clang-tidy)" >&2
  exit 1
fi
echo "check_naming: $(git ls-files 'collector/*.cpp' 'inject/*.cpp' | wc -l) sources clean" >&2
