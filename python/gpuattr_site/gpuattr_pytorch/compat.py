# What the running torch offers the annotator, found by feature, never by version number: the
# annotator runs on torch 1.13 (Debian's, the oldest supported) to today's 2.x.
#
#   is_compiling          torch.compiler.is_compiling (>= 2.3), dynamo's once the program loaded
#                         it (2.0-2.2), None on 1.13 (no dynamo)
#   global forward hook   with kwargs (>= 2.0) and always_call (>= 2.1: it also runs when the
#                         call raised), each where the running torch takes it
#   autograd nodes        pre-hooks and metadata (>= 1.13) and AccumulateGrad's type: backward
#                         by module needs all three
#   dispatch modes        TorchDispatchMode (>= 1.13): op ranges and FLOP counting need it
#
# Never imports torch._dynamo: importing it changes the program (with it, torch 2.13's gloo
# process group can deadlock at exit, joining a thread that waits for the GIL).
# Runs on: the thread that imports torch (install), then the hooks' threads (is_compiling).
import sys


def find_is_compiling(torch):
    """A function telling whether dynamo is tracing now, or None where there is no dynamo."""
    check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if callable(check):
        return check
    if not hasattr(torch, "compile"):
        return None
    modules = sys.modules

    def dynamo_is_compiling():
        dynamo = modules.get("torch._dynamo")
        return dynamo is not None and dynamo.is_compiling()

    return dynamo_is_compiling


class ForwardHook:
    """A registered global forward hook: its handle, and whether torch passes it the call's
    keyword arguments (hook(module, args, kwargs, output)) and runs it when the call raised."""

    __slots__ = ("handle", "with_kwargs", "always_call")

    def __init__(self, handle, with_kwargs, always_call):
        self.handle = handle
        self.with_kwargs = with_kwargs
        self.always_call = always_call


def register_global_forward_hook(torch, hook_with_kwargs, hook_without):
    """Registers the global forward hook with as much as this torch offers: keyword arguments
    and always_call, else one of them, else neither (hook_without(module, args, output))."""
    register = torch.nn.modules.module.register_module_forward_hook
    for with_kwargs, always_call in ((True, True), (True, False), (False, True)):
        options = {"with_kwargs": True} if with_kwargs else {}
        if always_call:
            options["always_call"] = True
        try:
            handle = register(hook_with_kwargs if with_kwargs else hook_without, **options)
        except TypeError:
            continue
        return ForwardHook(handle, with_kwargs, always_call)
    return ForwardHook(register(hook_without), False, False)


def autograd_node_support(torch, node):
    """AccumulateGrad's node type when autograd nodes take pre-hooks and metadata, as backward by
    module needs (`node` is any node of this torch); else None, with a reason."""
    accumulate_grad_type = getattr(getattr(torch._C, "_functions", None), "AccumulateGrad", None)
    if (accumulate_grad_type is not None and hasattr(node, "register_prehook") and
            hasattr(node, "metadata")):
        return accumulate_grad_type, None
    return None, ("autograd nodes have no register_prehook/metadata or no AccumulateGrad type "
                  "in torch %s" % torch.__version__)


def dispatch_mode_base(torch):
    """TorchDispatchMode, or None with the reason (a torch without dispatch modes)."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as error:
        return None, "torch %s has no dispatch modes (torch >= 1.13 has): %s" % (
            torch.__version__, error)
    return TorchDispatchMode, None
