#!/usr/bin/env bash
# Installs everything a fresh Debian 12 or 13 machine needs to build and test gpuattr, then
# configures and builds it. Idempotent: packages already present are not reinstalled, an existing
# virtual environment with the right torch is kept, and an existing build directory is reused.
# Usage: scripts/setup.sh [BUILD_DIR] (default: build).
#
# Two torches serve the PyTorch tier (tests/e2e/CMakeLists.txt runs it once under each): torch
# 2.13.0 from PyPI in the project's virtual environment .venv/ (git-ignored; a CPU build, which
# has Kineto and torch.compile), and Debian's python3-torch under /usr/bin/python3, the oldest
# torch gpuattr supports. scripts/demo.sh uses the first.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-${repo}/build}"

packages=(
  build-essential cmake pkg-config binutils
  catch2 nlohmann-json3-dev libspdlog-dev libcli11-dev zlib1g-dev libbenchmark-dev
  libsimdjson-dev libsqlite3-dev
  python3 python3-jsonschema python3-venv
  python3-torch  # the Python annotator's tests on the oldest PyTorch supported (CPU-only)
  chromium  # the HTML report's browser test (headless)
  clang-format  # scripts/check_format.sh (clang-format 14)
  clang-tidy  # scripts/check_naming.sh (clang-tidy 14)
  clang libclang-rt-dev  # the fuzz preset (docs/fuzzing.md): clang, libFuzzer and the sanitizers
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("${package}")
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ "$(id -u)" -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The project's virtual environment: torch 2.13.0 (the wheel is built for CPython 3.11), whose
# CPU build pip takes from the machine's wheel cache rather than a multi-GB CUDA download.
torch_version="2.13.0"
venv="${repo}/.venv"
if ! "${venv}/bin/python" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '${torch_version}')" \
  2>/dev/null; then
  venv_python=""
  for candidate in python3.11 python3 /usr/bin/python3; do
    if command -v "${candidate}" >/dev/null &&
      "${candidate}" -c "import sys, venv; sys.exit(sys.version_info[:2] != (3, 11))" 2>/dev/null; then
      venv_python="$(command -v "${candidate}")"
      break
    fi
  done
  if [[ -z "${venv_python}" ]]; then
    echo "setup: torch ${torch_version}'s wheel needs CPython 3.11 with venv; none was found" >&2
    exit 1
  fi
  echo "setup: creating ${venv} with torch ${torch_version} (${venv_python})" >&2
  rm -rf "${venv}"
  "${venv_python}" -m venv "${venv}"
  "${venv}/bin/pip" install --quiet --disable-pip-version-check "torch==${torch_version}" numpy
fi

# The CUDA toolkit (headers, CUPTI, NVTX3) is not a Debian package: it must already be installed.
# CMake's FindCUDAToolkit looks for nvcc on PATH, in CUDAToolkit_ROOT / CUDA_PATH, and in the
# standard /usr/local/cuda location; the project's configure step fails if it finds none.
# The benchmarks (tests/bench) are compiled here too, never run by ctest: code they call cannot
# change under them unnoticed. scripts/bench.sh builds and runs them in Release.
configure_log="$(mktemp)"
trap 'rm -f "${configure_log}"' EXIT
if ! cmake -S "${repo}" -B "${build_dir}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUATTR_BUILD_BENCH=ON >"${configure_log}" 2>&1; then
  if grep -q "CUDAToolkit" "${configure_log}"; then
    cat >&2 <<'MSG'
setup: the CUDA 13 toolkit was not found.
  gpuattr needs the CUDA toolkit's headers (cuda.h, cupti*.h, nvtx3/) and CUPTI at build time,
  even on machines without a GPU. Install the CUDA 13.0 toolkit (with CUPTI), then make it
  findable: put its bin/ on PATH, or set CUDAToolkit_ROOT=/path/to/cuda, and run this again.
MSG
  else
    cat "${configure_log}" >&2
    echo "setup: configuring failed (see above)" >&2
  fi
  exit 1
fi
cmake --build "${build_dir}" -j "$(nproc)"
echo "setup: built in ${build_dir}" >&2
