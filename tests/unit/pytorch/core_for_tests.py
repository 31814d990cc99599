# The compiled core (python/core) for the unit tests that run a room's C version beside its
# Python one: loaded from GPUATTR_TEST_CORE_DIR (tests/unit/pytorch/CMakeLists.txt), None where
# this build has none (a sanitizer build, no Python headers); those tests then skip, saying so.
import os

from gpuattr_pytorch.nvtx import load_core

CORE_DIR = os.environ.get("GPUATTR_TEST_CORE_DIR", "")
CORE = load_core(CORE_DIR)[0] if CORE_DIR else None
NO_CORE = "the compiled core is not built in this tree"
