"""Runs a PyTorch script on the simulated GPU: every aten op launches one simulated kernel.

    python3 -m simgpu_torch SCRIPT [ARGS...]

Test equipment (DESIGN §5), for the demo (scripts/demo.sh): the script itself runs on the CPU,
unchanged, and a dispatch mode entered on the main thread launches, for each aten op the script
runs there, what a GPU would run for it (simgpu_kernels.py: nothing for views, metadata and
allocations, a device-to-host copy for `.item()`, an NCCL kernel for a collective, else one
kernel named as PyTorch's CUDA kernels are) through libsimgpu_pywork (SIMGPU_PYWORK_LIBRARY; the
fake CUPTI is GPUATTR_CUPTI_LIBRARY, as for simgpu-run). Only the process that started here
launches (forked DataLoader workers do not).

SimulatedGpu is the library's launch, copy and synchronise calls, for this module and for the
annotator's e2e scripts (tests/e2e/pytorch/), which keep their own truth.

A script that ends its process group (torch.distributed.destroy_process_group) ends its process
there, with os._exit(0) after the device work finished and the output was flushed: the gloo
process group's destructor, which the script's return would run next, joins its worker threads
holding the GIL, and a worker that drops a collective's work needs the GIL to release the Python
mode the work captured (this module's; torch 2.13 deadlocks so at exit now and then).
"""
import ctypes
import os
import runpy
import sys

from torch.utils._python_dispatch import TorchDispatchMode

import simgpu_kernels


class SimulatedGpu:
    """libsimgpu_pywork (SIMGPU_PYWORK_LIBRARY): one kernel or copy at a time on device 0,
    stream 0."""

    def __init__(self):
        self._library = ctypes.CDLL(os.environ.get("SIMGPU_PYWORK_LIBRARY",
                                                   "libsimgpu_pywork.so"))
        self._launch = self._library.simgpu_launch_kernel
        self._launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64,
                                 ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_uint32)]
        self._launch.restype = ctypes.c_int
        self._copy_to_host = self._library.simgpu_copy_to_host
        self._copy_to_host.argtypes = [ctypes.c_uint64, ctypes.c_uint64,
                                       ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.POINTER(ctypes.c_uint32)]
        self._copy_to_host.restype = ctypes.c_int

    def run(self, work):
        """Runs a simgpu_kernels.DeviceWork from the calling thread: as launch()."""
        if work.kind == simgpu_kernels.COPY_TO_HOST:
            times = (ctypes.c_uint64 * 3)()
            correlation = ctypes.c_uint32()
            if self._copy_to_host(work.bytes, work.duration_ns, times,
                                  ctypes.byref(correlation)) != 0:
                return None
            return times[0], times[1], times[2], correlation.value
        return self.launch(work.name.encode(), work.duration_ns)

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
    """Each aten op, after it ran, launches what simgpu_kernels says a GPU would (nothing for a
    view) through `launch(work)` (SimulatedGpu.run, or a script's own that keeps its truth), in
    the process that entered the mode only."""

    def __init__(self, launch):
        super().__init__()
        self._launch = launch
        self._pid = os.getpid()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if os.getpid() == self._pid:
            work = simgpu_kernels.device_work(func, result, args)
            if work is not None:
                self._launch(work)
        return result


def main():
    if len(sys.argv) < 2:
        print("usage: python3 -m simgpu_torch SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    gpu = SimulatedGpu()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    end_process_with_process_group(gpu)
    with KernelPerOp(gpu.run):
        runpy.run_path(script, run_name="__main__")
    gpu.synchronize()
    return 0


def end_process_with_process_group(gpu):
    """Wraps torch.distributed.destroy_process_group so that the process ends after it (see the
    module's docstring)."""
    import torch.distributed

    if not torch.distributed.is_available():
        return
    destroy = torch.distributed.destroy_process_group

    def destroy_then_exit(*args, **kwargs):
        destroy(*args, **kwargs)
        gpu.synchronize()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    torch.distributed.destroy_process_group = destroy_then_exit


if __name__ == "__main__":
    sys.exit(main())
