#!/usr/bin/env bash
# gpu-kit.sh: builds the real-GPU kit on this machine for a GPU machine that cannot build it
# (docs/gpu-validation.md §Running it on a lent GPU machine).
#
#   bash scripts/gpu-kit.sh [KIT_DIR]          (default build-gpu-kit; git ignores /build*/)
#
# The lent GPU machine has a driver, nvcc and PyTorch but none of gpuattr's build dependencies
# (spdlog, CLI11, simdjson, nlohmann-json, Catch2) and no package registry, so gpu-check.sh
# cannot build there. This builds gpuattr, the shim, gpu_probe, cupti_questions and
# probe_injection (Release, sm_90, RUNPATH $ORIGIN/../lib) in build-gpu-release, then lays out
# KIT_DIR the way `gpu-check.sh --build KIT_DIR` reads a build tree:
#   collector/gpuattr  inject/libgpuattr_inject.so  tests/gpu/{gpu_probe,cupti_questions,
#   libprobe_injection.so}  python/gpuattr_site/ (the Python annotator)  lib/ (gpuattr's shared
#   libraries beyond glibc and GCC's runtime, and libnvtx3interop.so.1)
# with debug info stripped, small enough for a device call's carry (64 MiB with the tree).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kit="${1:-$root/build-gpu-kit}"
build="$root/build-gpu-release"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUATTR_BUILD_GPU_TESTS=ON \
  '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' >/dev/null
cmake --build "$build" -j"$(nproc)" \
  --target gpuattr gpuattr_inject gpu_probe cupti_questions probe_injection

rm -rf "$kit"
mkdir -p "$kit/collector" "$kit/inject" "$kit/tests/gpu" "$kit/lib"
for file in collector/gpuattr inject/libgpuattr_inject.so tests/gpu/gpu_probe \
            tests/gpu/cupti_questions tests/gpu/libprobe_injection.so; do
  objcopy --strip-debug "$build/$file" "$kit/$file"
done
# The libraries gpuattr links beyond glibc and GCC's runtime, which every Linux with a CUDA
# driver has (the GPU machine's are newer than this machine's, and both are backward compatible).
ldd "$build/collector/gpuattr" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
    *) cp -L "$lib" "$kit/lib/" ;;
  esac
done
# The Python annotator (issue 19): its site directory where `gpuattr run` looks beside its
# executable, and the NVTX library it emits through (gpu-check.sh names it in
# GPUATTR_NVTX_LIBRARY), since the GPU machine's toolkit may sit elsewhere.
mkdir -p "$kit/python"
cp -r "$build/python/gpuattr_site" "$kit/python/"
nvtx_library="$(sed -n 's/^GPUATTR_NVTX_INTEROP_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")"
[[ -f "$nvtx_library" ]] && cp -L "$nvtx_library" "$kit/lib/"
# What the kit asks of the GPU machine's glibc and libstdc++ (gpu-check.sh fails early otherwise).
needs() { find "$kit" -type f -exec objdump -T {} + 2>/dev/null | grep -o "$1[0-9.]*" | sort -uV | tail -1; }
echo "gpu-kit.sh: $kit ($(du -sh "$kit" | cut -f1)); needs $(needs GLIBC_) and $(needs GLIBCXX_);" \
  "carries $(ls "$kit/lib" | xargs)"
