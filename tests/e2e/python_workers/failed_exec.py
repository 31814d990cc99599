"""A traced script whose subprocess cannot start: CPython's subprocess forks the child with vfork,
and the child leaves through _exit(255) when its exec fails, sharing the parent's memory. The
interposed _exit must leave the parent's session alone there. Ranges are recorded before and
after.

Usage: failed_exec.py LIBNVTX3INTEROP
"""
import subprocess
import sys

from nvtx_ctypes import load_nvtx, spin


def main():
    nvtx = load_nvtx(sys.argv[1])
    nvtx.nvtxRangePushA(b"before_spawn")
    spin(0.002)
    nvtx.nvtxRangePop()
    for _ in range(3):
        try:
            subprocess.run(["/nonexistent/gpuattr-no-such-program"], check=False)
        except FileNotFoundError:
            pass
        else:
            sys.exit("the program that does not exist ran")
    nvtx.nvtxRangePushA(b"after_spawn")
    spin(0.002)
    nvtx.nvtxRangePop()


main()
