"""What the issue-21 worker scripts share: NVTX through ctypes on the toolkit's
libnvtx3interop.so.1 (under gpuattr its calls reach the shim), and a busy wait."""
import ctypes
import time


def load_nvtx(library):
    nvtx = ctypes.CDLL(library)
    nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
    return nvtx


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
