#!/usr/bin/env bash
# Grep lint of the shim's sources for what must never happen inside a host process (exemplars
# §9.6, kineto RAWTHROW style): throwing, exiting, aborting, printing to stdout, heavy deps.
# A line may be allowlisted only with a trailing annotated comment:  // lint-inject: allow <why>
# Usage: scripts/lint_inject.sh [inject-dir]   (default: the inject/ next to this script)
set -euo pipefail

dir="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/inject}"
[[ -d "$dir" ]] || { echo "lint_inject: no such directory: $dir" >&2; exit 2; }

patterns=(
  '\bthrow\b'
  '\bexit\('
  '\b_exit\('
  '\babort\('
  '\bstd::terminate\b'
  '\bstd::cout\b'
  '\bstd::cerr\b'
  '\bprintf\('
  '\bputs\('
  'fprintf\(stdout'
  '\bspdlog\b'
  '\bnlohmann\b'
  '\bfmt::'
  '\bassert\('
)

status=0
while IFS= read -r -d '' file; do
  for pattern in "${patterns[@]}"; do
    while IFS= read -r hit; do
      [[ -z "$hit" ]] && continue
      if [[ "$hit" =~ //\ lint-inject:\ allow\ [^[:space:]] ]]; then continue; fi
      echo "lint_inject: ${file#"$dir"/}:$hit  (matches '$pattern')" >&2
      status=1
    done < <(grep -nP "$pattern" "$file" || true)
  done
done < <(find "$dir" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -print0 | sort -z)

[[ $status -eq 0 ]] && echo "lint_inject: OK ($dir)"
exit $status
