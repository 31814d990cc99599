"""A training loop that dies from an uncaught Ctrl-C inside its fourth step: three whole `step`
ranges, then a fourth left open when SIGINT arrives. Python then ends by the signal itself, so no
atexit handler runs and the shim sends no Goodbye.

Usage: interrupted_steps.py LIBNVTX3INTEROP
"""
import os
import signal
import sys

from nvtx_ctypes import load_nvtx, spin


def main():
    nvtx = load_nvtx(sys.argv[1])
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
