"""A fork child that works WORK_MS milliseconds inside 5 NVTX ranges and leaves without running
any exit handler, as multiprocessing's fork workers do: through os._exit(0) (libc's _exit), or
with EXIT_CALL `_Exit`, through libc's _Exit. The preloaded shim interposes both, so the child's
session still ends in order. Prints the child's pid.

Usage: fork_exit_child.py LIBNVTX3INTEROP WORK_MS [_exit|_Exit]
"""
import ctypes
import os
import sys

from nvtx_ctypes import load_nvtx, spin


def main():
    nvtx = load_nvtx(sys.argv[1])
    work_s = float(sys.argv[2]) / 1000
    exit_call = sys.argv[3] if len(sys.argv) > 3 else "_exit"
    if exit_call not in ("_exit", "_Exit"):
        sys.exit("EXIT_CALL must be _exit or _Exit, not %r" % exit_call)
    pid = os.fork()
    if pid == 0:
        for i in range(5):
            nvtx.nvtxRangePushA(b"child_range_%d" % i)
            spin(work_s / 5)
            nvtx.nvtxRangePop()
        if exit_call == "_Exit":
            ctypes.CDLL(None)._Exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    print(pid)


main()
