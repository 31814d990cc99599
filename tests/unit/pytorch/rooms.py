# The annotator's rooms composed over a recording NVTX, without the patches (which change torch
# for the whole process): for the tests of module calls and backward claims, over the compiled
# core's Ranges and grad_nodes where this build has the core (core_for_tests), as the annotator
# takes them (or over the pure-Python path, `core=None`). close() puts nn.Module.__call__ back.
import torch

from core_for_tests import CORE
from fake_nvtx import RecordingNvtx
from gpuattr_pytorch import compat
from gpuattr_pytorch.backward import Claims
from gpuattr_pytorch.module_calls import ModuleCalls
from gpuattr_pytorch.ranges import Guard, make_ranges
from gpuattr_pytorch.steps import Steps


class Rooms:
    def __init__(self, context_ranges=True, core=CORE):
        self.nvtx = RecordingNvtx(context_ranges=context_ranges)
        self.ranges = make_ranges(self.nvtx, core)
        self.guard = Guard(self.nvtx, self.ranges, compat.find_is_compiling(torch))
        self.steps = Steps(self.ranges)
        self.claims = Claims(torch, self.ranges, self.guard, self.steps)
        self.module_calls = ModuleCalls(torch, self.ranges, self.guard, self.steps, self.claims,
                                        None, core)
        self.module_calls.install()

    def close(self):
        for handle in self.guard.handles:
            handle.remove()
        self.ranges.stack.reset()

    def backward(self, loss):
        """loss.backward() with the nodes no module call made claimed first, as the backward
        patch does."""
        self.claims.claim([loss.grad_fn], 0, (), ())
        loss.backward()
