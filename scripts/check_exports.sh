#!/usr/bin/env bash
# Checks that libgpuattr_inject.so exports exactly its entry points (with the interposed _exit and
# _Exit) and depends on nothing heavy (exemplars §9.6 rule 4, §9.8 step 0).
# Usage: scripts/check_exports.sh path/to/libgpuattr_inject.so
set -euo pipefail

lib="${1:?usage: $0 path/to/libgpuattr_inject.so}"
[[ -f "$lib" ]] || { echo "check_exports: no such file: $lib" >&2; exit 2; }

expected=$(printf '%s\n' InitializeInjection InitializeInjectionNvtx2 GpuattrAttachLate _exit _Exit |
  sort -u)
# Defined dynamic symbols, minus the version-node pseudo symbols the linker may add.
actual=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u)
status=0
if [[ "$actual" != "$expected" ]]; then
  echo "check_exports: $lib exports an unexpected symbol set:" >&2
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  status=1
fi

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
forbidden='cupti|cuda|nvToolsExt|nvtx|spdlog|fmt|nlohmann|Catch|stdc\+\+'
if bad=$(grep -E "$forbidden" <<<"$needed"); then
  echo "check_exports: $lib has forbidden NEEDED entries:" >&2
  echo "$bad" >&2
  status=1
fi

if [[ $status -eq 0 ]]; then
  echo "check_exports: OK ($(paste -sd" " <<<"$actual"); NEEDED: $(paste -sd" " <<<"$needed"))"
fi
exit $status
