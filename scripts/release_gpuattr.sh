#!/usr/bin/env bash
# Sourced by the benchmark scripts that time the gpuattr binary (import_bench.sh, merge_bench.sh):
# `gpuattr` is set to the first argument given to the script, else to the Release build in
# build-bench, configured and built here when it is missing.
#   source "$repo/scripts/release_gpuattr.sh" "${1:-}"   (with $repo set to the repository root)
gpuattr="${1:-$repo/build-bench/collector/gpuattr}"
if [[ ! -x "$gpuattr" ]]; then
  cmake -S "$repo" -B "$repo/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$repo/build-bench" -j2 --target gpuattr
  gpuattr="$repo/build-bench/collector/gpuattr"
fi
