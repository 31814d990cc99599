"""Runs a PyTorch script on the simulated GPU: every aten op launches one simulated kernel.

    python3 -m simgpu_torch SCRIPT [ARGS...]

Test equipment (DESIGN §5), for the demo (scripts/demo.sh): the script itself runs on the CPU,
unchanged, and a dispatch mode entered on the main thread launches, for each aten op the script
runs there, one kernel named after the op through libsimgpu_pywork's simgpu_launch_kernel
(SIMGPU_PYWORK_LIBRARY; the fake CUPTI is GPUATTR_CUPTI_LIBRARY, as for simgpu-run). A kernel
lasts 2 us plus 1 ns per 16 output elements, four times that for a matrix product or a
convolution. Only the process that started here launches (forked DataLoader workers do not).
"""
import ctypes
import os
import runpy
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_HEAVY = ("mm", "addmm", "bmm", "convolution", "convolution_backward", "_convolution")


class KernelPerOp(TorchDispatchMode):
    def __init__(self, library):
        super().__init__()
        self._launch = library.simgpu_launch_kernel
        self._launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                 ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_uint32)]
        self._launch.restype = ctypes.c_int
        self._times = (ctypes.c_uint64 * 3)()
        self._correlation = ctypes.c_uint32()
        self._names = {}
        self._pid = os.getpid()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if os.getpid() == self._pid:
            name = self._names.get(func)
            if name is None:
                name = self._names[func] = str(func).encode()
            elements = result.numel() if isinstance(result, torch.Tensor) else 0
            duration_ns = 2000 + elements // 16
            if func.overloadpacket.__name__ in _HEAVY:
                duration_ns *= 4
            self._launch(name, duration_ns, self._times, ctypes.byref(self._correlation))
        return result


def main():
    if len(sys.argv) < 2:
        print("usage: python3 -m simgpu_torch SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    library = ctypes.CDLL(os.environ.get("SIMGPU_PYWORK_LIBRARY", "libsimgpu_pywork.so"))
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    with KernelPerOp(library):
        runpy.run_path(script, run_name="__main__")
    library.simgpu_synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
