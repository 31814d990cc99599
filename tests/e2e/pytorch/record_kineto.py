"""Runs an unmodified PyTorch program under torch.profiler and writes the Kineto trace torch writes.

    python record_kineto.py TRACE.json NAMES.json PROGRAM [ARGS...]

Test equipment for the import-equals-live test (pytorch2_e2e_test.cpp): the program runs as
`python PROGRAM ARGS` would, inside torch.profiler.profile(activities=[CPU], with_modules=True,
with_stack=True, record_shapes=True), and the trace is torch's own export_chrome_trace: module
events, the autograd engine's ops with their fwdbwd flows, the optimizer's and DataLoader's
annotations.
CPU Kineto records no device activity, and the program calls no prof.step(), so the trace has
no ProfilerStep#N.

NAMES.json maps each torch module name (`nn.Module: Linear_3`: torch numbers the instances of
a class in the order they are first called) to the name the live annotator gives the same
module (`nn.Module: <Class>_<k>` for a root, its qualified name under that root for a
submodule), from a global forward pre-hook of this script's, so that the test can compare the
two trees name for name.
"""
import json
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile


class ModuleNames:
    """torch's `Class_k` name of each module called, and the live annotator's name of it."""

    def __init__(self):
        self.torch_names = {}  # id(module) -> torch's name
        self.count_by_class = {}
        self.roots_by_class = {}
        self.open_calls = 0
        self.qualified = {}  # id(module) -> its live name, from the roots seen so far
        self.names = {}  # torch's name -> live name

    def pre_hook(self, module, inputs):
        if id(module) not in self.torch_names:
            class_name = type(module).__name__
            index = self.count_by_class.get(class_name, 0)
            self.count_by_class[class_name] = index + 1
            self.torch_names[id(module)] = "nn.Module: %s_%d" % (class_name, index)
        if self.open_calls == 0 and id(module) not in self.qualified:
            class_name = type(module).__name__
            root_index = self.roots_by_class.get(class_name, 0)
            self.roots_by_class[class_name] = root_index + 1
            for name, child in module.named_modules():
                if id(child) not in self.qualified:
                    self.qualified[id(child)] = "nn.Module: " + (
                        name if name else "%s_%d" % (class_name, root_index))
        self.open_calls += 1
        live_name = self.qualified.get(id(module))
        if live_name is not None:
            self.names[self.torch_names[id(module)]] = live_name

    def post_hook(self, module, inputs, outputs):
        self.open_calls -= 1


def main():
    trace_path, names_path, program = sys.argv[1:4]
    sys.argv = sys.argv[3:]
    names = ModuleNames()
    hooks = torch.nn.modules.module
    hooks.register_module_forward_pre_hook(names.pre_hook)
    hooks.register_module_forward_hook(names.post_hook)
    # Eager modules are python_function events of the Python tracer, which with_stack starts
    # (with_modules alone names TorchScript modules).
    with profile(activities=[ProfilerActivity.CPU], with_modules=True, with_stack=True,
                 record_shapes=True) as profiler:
        runpy.run_path(program, run_name="__main__")
    profiler.export_chrome_trace(trace_path)
    with open(names_path, "w") as out:
        json.dump(names.names, out)


if __name__ == "__main__":
    main()
