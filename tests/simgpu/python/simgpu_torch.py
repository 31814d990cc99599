"""Runs a PyTorch script on the simulated GPU: every aten op launches one simulated kernel.

    python3 -m simgpu_torch SCRIPT [ARGS...]

Test equipment (DESIGN §5), for the demo (scripts/demo.sh): the script itself runs on the CPU,
unchanged, and a dispatch mode entered on the main thread launches, for each aten op the script
runs there, one kernel named after the op through libsimgpu_pywork's simgpu_launch_kernel
(SIMGPU_PYWORK_LIBRARY; the fake CUPTI is GPUATTR_CUPTI_LIBRARY, as for simgpu-run). A kernel
lasts 2 us plus 1 ns per 16 output elements, four times that for a matrix product or a
convolution. Only the process that started here launches (forked DataLoader workers do not).

SimulatedGpu is the library's launch and synchronise calls, for this module and for the
annotator's e2e script (tests/e2e/pytorch/train_simulated.py), which keeps its own truth.
"""
import ctypes
import os
import runpy
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_HEAVY = ("mm", "addmm", "bmm", "convolution", "convolution_backward", "_convolution")


class SimulatedGpu:
    """libsimgpu_pywork (SIMGPU_PYWORK_LIBRARY): one kernel at a time on device 0, stream 0."""

    def __init__(self):
        self._library = ctypes.CDLL(os.environ.get("SIMGPU_PYWORK_LIBRARY",
                                                   "libsimgpu_pywork.so"))
        self._launch = self._library.simgpu_launch_kernel
        self._launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                 ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_uint32)]
        self._launch.restype = ctypes.c_int

    def launch(self, name, duration_ns):
        """Launches kernel `name` (bytes) from the calling thread: (the host time the launch was
        entered, the kernel's device start and end, its correlation id), or None when the
        simulated driver did not run it."""
        times = (ctypes.c_uint64 * 3)()
        correlation = ctypes.c_uint32()
        if self._launch(name, duration_ns, times, ctypes.byref(correlation)) != 0:
            return None
        return times[0], times[1], times[2], correlation.value

    def synchronize(self):
        self._library.simgpu_synchronize()


class KernelPerOp(TorchDispatchMode):
    def __init__(self, gpu):
        super().__init__()
        self._gpu = gpu
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
            self._gpu.launch(name, duration_ns)
        return result


def main():
    if len(sys.argv) < 2:
        print("usage: python3 -m simgpu_torch SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    gpu = SimulatedGpu()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    with KernelPerOp(gpu):
        runpy.run_path(script, run_name="__main__")
    gpu.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
