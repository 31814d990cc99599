# What the running torch offers the annotator, found by feature, never by version number: the
# annotator runs on torch 1.13 (Debian's, the oldest supported) to today's 2.x.
#
#   is_compiling          torch.compiler.is_compiling (>= 2.3), dynamo's once the program loaded
#                         it (2.0-2.2), None on 1.13 (no dynamo)
#   dynamo's frame callback  set while a compiled region runs, its eager parts included
#                         (torch._C's getter, loaded with torch: >= 2.0)
#   autograd nodes        pre-hooks and metadata (>= 1.13) and AccumulateGrad's type: backward
#                         by module needs all three
#   dispatch modes        TorchDispatchMode (>= 1.13): op ranges and FLOP counting need it
#
# Never imports torch._dynamo: importing it changes the program (with it, torch 2.13's gloo
# process group can deadlock at exit, joining a thread that waits for the GIL). What needs a
# module of the program's waits for its import (after_import).
# Runs on: the thread that imports torch (install), then the hooks' threads (is_compiling).
import importlib.machinery
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


def find_dynamo_frame_callback(torch):
    """A function returning dynamo's frame callback (None while no compiled region runs), or one
    that always returns None where torch has no such getter."""
    native = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
    getter = getattr(native, "get_eval_frame_callback", None)
    return getter if callable(getter) else _no_callback


def _no_callback():
    return None


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


def after_import(names, callback):
    """callback() once every module of `names` is loaded: now if they are, else once the last of
    them the program imports finished loading (not merely began: one may import the other).
    callback must not raise: it runs inside the program's import."""
    if all(name in sys.modules for name in names):
        callback()
    else:
        sys.meta_path.insert(0, ImportWatcher(names, callback))


class ImportWatcher:
    """A meta-path finder that answers only for `names`: it finds each one's real spec, and once
    the last of them finished loading calls the callback and removes itself."""

    def __init__(self, names, callback):
        self._names = frozenset(names)
        self._callback = callback
        self._loaded = {name for name in names if name in sys.modules}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self._names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module
        watcher = self

        def exec_then_call(module):
            original_exec(module)
            watcher._loaded.add(fullname)
            if watcher._loaded == watcher._names and watcher in sys.meta_path:
                sys.meta_path.remove(watcher)
                watcher._callback()

        spec.loader.exec_module = exec_then_call
        return spec
