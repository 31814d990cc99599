"""A training loop that dies from an uncaught Ctrl-C inside its fourth step: three whole `step`
ranges, then a fourth left open when SIGINT arrives. Python then ends by the signal itself, so no
atexit handler runs and the shim sends no Goodbye.

Usage: interrupted_steps.py LIBNVTX3INTEROP
"""
import ctypes
import os
import signal
import sys
import time


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    nvtx = ctypes.CDLL(sys.argv[1])
    nvtx.nvtxRangePushA.argtypes = [ctypes.c_char_p]
    for step in range(4):
        nvtx.nvtxRangePushA(b"step")
        nvtx.nvtxRangePushA(b"forward")
        spin(0.005)
        if step == 3:
            spin(0.05)  # the flush thread sends the open step before the interrupt
            os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt, uncaught
        nvtx.nvtxRangePop()
        nvtx.nvtxRangePop()


main()
