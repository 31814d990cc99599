# The PyTorch annotator (docs/pytorch.md): turns an unmodified PyTorch program into the ranges of
# the PyTorch model of docs/attribution.md, as NVTX push/pop ranges the shim records.
# sitecustomize calls install() right after the program's own `import torch`.
#
# Its rooms, each with its unit tests (tests/unit/pytorch):
#   nvtx       the NVTX binding (the compiled core's, python/core, else ctypes) and its
#              Capabilities
#   compat     what the running torch offers, by feature (torch 1.13 to 2.x)
#   ranges     each thread's open ranges, and the Guard every hook body runs under
#   steps      ProfilerStep#N
#   modules    module range names
#   module_calls  every module call entered and left (an interposer on nn.Module.__call__)
#   backward   autograd nodes claimed by the module calls that made them (backward by module)
#   patches    backward, optimizers, data loaders, functional losses, gradient clipping
#   op_mode    op ranges (--pytorch ops) and FLOP marks (--flops), with flops.py's counter
#   compiled   the kernel map of each graph Inductor compiles
#   compiled_graphs  the maps installed once the program imports Inductor, written to gpuattr's
#              file, and a range per compiled graph call
#   kernel_map_cache  the maps kept for graphs a later run loads from Inductor's cache
#
# The program must never notice: nothing is printed, no result or exception changes, and the
# first error inside a hook disables the annotator for good (a `gpuattr.pytorch: disabled: ...`
# NVTX mark names it in the report). Inside torch.compile'd regions nothing is emitted.
# Runs on: the thread that first imports torch (install).
import os

from . import compat
from . import nvtx as nvtx_binding
from .backward import Claims
from .compiled_graphs import MAPS_ENV, CompiledGraphs
from .kernel_map_cache import KernelMapCache, default_directory
from .module_calls import ModuleCalls
from .op_mode import OpMode, flop_counter
from .patches import Patches
from .ranges import Guard, make_ranges
from .steps import Steps

_annotator = None


class Annotator:
    """The rooms, composed over one torch and one NVTX binding."""

    def __init__(self, torch, nvtx, op_ranges=False, counter=None, maps_dir=None, core=None):
        """`core`: the compiled core (nvtx.load_core), whose Ranges and grad_nodes then serve
        the hot path; None: the pure-Python path."""
        self.ranges = make_ranges(nvtx, core)
        self.guard = Guard(nvtx, self.ranges, compat.find_is_compiling(torch))
        self.steps = Steps(self.ranges)
        self.claims = Claims(torch, self.ranges, self.guard, self.steps)
        self.op_mode = (OpMode(torch, self.ranges, self.guard, op_ranges, counter)
                        if op_ranges or counter is not None else None)
        self.module_calls = ModuleCalls(torch, self.ranges, self.guard, self.steps, self.claims,
                                        self.op_mode, core)
        self.patches = Patches(torch, self.ranges, self.guard, self.steps, self.claims,
                               self.module_calls, self.op_mode)
        self.compiled_graphs = None
        if hasattr(torch, "compile"):
            self.compiled_graphs = CompiledGraphs(self.ranges, self.guard,
                                                  self.module_calls.names, maps_dir,
                                                  KernelMapCache(default_directory()))

    def install(self):
        self.module_calls.install()
        self.patches.install()
        if self.compiled_graphs is not None:
            self.compiled_graphs.install()


def install(torch):
    """Installs the annotator once, on the freshly imported `torch` (unless GPUATTR_PYTORCH is
    off; `ops` adds the op ranges, GPUATTR_FLOPS=1 the FLOP counter)."""
    global _annotator
    if _annotator is not None:
        return
    nvtx, core, path_mark = nvtx_binding.bind(torch)
    nvtx.mark(path_mark)
    annotator = Annotator(torch, nvtx, op_ranges=os.environ.get("GPUATTR_PYTORCH") == "ops",
                          counter=flop_counter(torch, nvtx),
                          maps_dir=os.environ.get(MAPS_ENV), core=core)
    annotator.install()
    _annotator = annotator
