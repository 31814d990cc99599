"""A fork child that works WORK_MS milliseconds inside 5 NVTX ranges and leaves through
os._exit(0), as multiprocessing's fork workers do: no atexit handler runs in it, so only what the
shim's flush thread sent while it lived reaches the report. Prints the child's pid.

Usage: fork_exit_child.py LIBNVTX3INTEROP WORK_MS
"""
import os
import sys

from nvtx_ctypes import load_nvtx, spin


def main():
    nvtx = load_nvtx(sys.argv[1])
    work_s = float(sys.argv[2]) / 1000
    pid = os.fork()
    if pid == 0:
        for i in range(5):
            nvtx.nvtxRangePushA(b"child_range_%d" % i)
            spin(work_s / 5)
            nvtx.nvtxRangePop()
        os._exit(0)
    os.waitpid(pid, 0)
    print(pid)


main()
