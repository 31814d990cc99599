#!/usr/bin/env bash
# Fails when a tracked C, C++ or CUDA source is not clang-format clean (.clang-format: Google style,
# 100 columns). The clang-format is Debian's clang-format 14 (scripts/setup.sh installs it), the
# version .clang-format is written for. Usage: scripts/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
formatter="$(command -v clang-format-14 || command -v clang-format || true)"
if [[ -z "${formatter}" ]]; then
  echo "check_format: clang-format (14) not found; scripts/setup.sh installs it" >&2
  exit 1
fi
mapfile -t sources < <(git ls-files '*.cpp' '*.h' '*.c' '*.cu')
if [[ "${1:-}" == "--fix" ]]; then
  "${formatter}" -i "${sources[@]}"
  exit 0
fi
if ! "${formatter}" --dry-run --Werror "${sources[@]}"; then
  echo "check_format: the files above are not clang-format clean (scripts/check_format.sh --fix)" >&2
  exit 1
fi
echo "check_format: ${#sources[@]} files clean" >&2
