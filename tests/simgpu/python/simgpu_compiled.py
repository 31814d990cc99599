"""Graphs compiled by torch.compile on the simulated GPU: what Inductor generated runs on the CPU,
and each launch a GPU would make for it is made on the simulated GPU, from the calling thread.

Test equipment (DESIGN §5), beside simgpu_torch.py, whose dispatch mode cannot do this alone:
Dynamo compiles nothing while a TorchDispatchMode is active (it runs the frame eagerly), so a
script that compiles keeps the mode off around its compiled calls, and this module hooks each
wrapper module as Inductor loads it (`PyCodeCache.load_by_key_path`, on a fresh compile and on a
compile-cache hit alike), feature-detected on the installed torch:

  - each kernel Inductor generated (a module global made by `async_compile`: `cpp_fused_*` on a
    CPU build, `triton_*` on a GPU one) launches one simulated kernel named as Inductor named
    it, lasting as an eager kernel over its tensor arguments would (simgpu_kernels's timing);
  - the wrapper's `call` runs inside the dispatch mode the script gives, so the aten ops it calls
    (extern kernels: `extern_kernels.mm` is `torch.mm(out=)`, a cuBLAS GEMM on a GPU; fallbacks)
    launch what simgpu_kernels gives them, as in eager mode. Allocations and views launch
    nothing, as there.

Which modules were hooked is the script's to count (`HookedWrappers.count`), so that a test can
tell a run whose compiled code never reached the simulated GPU.
"""
import ast
import importlib

import torch

import simgpu_kernels


def generated_kernel_work(name, args):
    """The launch of kernel `name`, which Inductor generated, called with `args`."""
    elements = sum(arg.numel() for arg in args if isinstance(arg, torch.Tensor))
    return simgpu_kernels.DeviceWork(simgpu_kernels.KERNEL, name, 2000 + elements // 16)


def generated_kernel_names(path):
    """The names the wrapper module at `path` binds to kernels it generated: its top-level
    assignments from an `async_compile` call."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), filename=path)
    names = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Call):
            continue
        function = statement.value.func
        if (isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                and function.value.id == "async_compile"):
            names.extend(target.id for target in statement.targets
                         if isinstance(target, ast.Name))
    return names


def _launching(kernel, name, launch):
    def run(*args):
        launch(generated_kernel_work(name, args))
        return kernel(*args)
    return run


def _in_mode(call, dispatch_mode):
    def run(args):
        with dispatch_mode():
            return call(args)
    return run


class HookedWrappers:
    """Installs the hook (see the module's docstring). `launch(work)` runs one
    simgpu_kernels.DeviceWork; `dispatch_mode()` makes the mode each `call` runs inside;
    `loaded(module, path)`, when given, is told of each wrapper hooked."""

    def __init__(self, launch, dispatch_mode, loaded=None):
        self.count = 0
        self.installed = False
        try:
            codecache = importlib.import_module("torch._inductor.codecache")
        except ImportError:
            return
        cache = getattr(codecache, "PyCodeCache", None)
        load = getattr(cache, "load_by_key_path", None)
        if load is None:
            return
        hooked = self

        def load_and_hook(key, path, *args, **kwargs):
            module = load(key, path, *args, **kwargs)
            if not getattr(module, "_simgpu_hooked", False) and hasattr(module, "call"):
                for name in generated_kernel_names(path):
                    setattr(module, name, _launching(getattr(module, name), name, launch))
                module.call = _in_mode(module.call, dispatch_mode)
                module._simgpu_hooked = True
                hooked.count += 1
                if loaded is not None:
                    loaded(module, path)
            return module

        cache.load_by_key_path = staticmethod(load_and_hook)
        self.installed = True
