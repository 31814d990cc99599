# Module calls entered and left, through one interposer on nn.Module.__call__.
#
# Not torch's global module hooks: torch's own dispatch of two empty global hooks costs 1.6 µs per
# module call on torch 2.13 (docs/benchmarks.md), more than the annotator's whole budget. The
# interposer is a Python function, so that dynamo inlines it while it traces: its first test,
# is_compiling(), is then true and the call goes straight to torch's own __call__ (no graph break,
# no guard on gpuattr's state). Where dynamo meets it as a frame of its own (the frame a compiled
# module's forward starts with; a module called after a graph break), dynamo is told to skip it
# as it skips torch's __call__ (skip_code, once the program imported dynamo), so that it compiles
# the same frames as in a bare run: the module's forward. Such a frame runs eagerly inside a
# compiled region (dynamo's frame callback is set), and its call passes through too: the module
# a compiled module wraps, and what a compiled region calls eagerly, are named by the kernel maps
# of the graphs they run (compiled_graphs.py), as under torch's global module hooks, which dynamo
# compiled into nothing there. Otherwise the interposer enters the call (its range pushed, a
# ModuleCall on the thread's stack), runs torch's __call__, and leaves the call however it ended:
# a call that raised closes its range too. Entering and leaving are ModuleCalls' methods, or the
# compiled core's (core.ModuleCalls: the same work in C for a submodule call whose name is known,
# and these methods for the rest: root calls, first calls, the op mode).
#
# The interposer adds one frame of gpuattr's to a traceback through a module call
# (module_calls.py, `__call__`), as any wrapper of torch's does; nothing else of the call changes.
#
# A root call opens a step when nothing else is open (steps.py). When a call returns with outputs
# that need a gradient, the autograd nodes its forward made are claimed for it (backward.py), back
# to the nodes of its inputs, positional and keyword, so that `block(hidden_states=h)` claims
# nothing its caller made.
# Runs on: the thread that imports torch (install); any thread that calls modules.
import functools
import itertools
import sys

from . import compat
from .backward import grad_nodes_of
from .modules import ModuleCall, ModuleNames

_DYNAMO_FRAMES = "torch._dynamo.eval_frame"  # its skip_code(code): frames dynamo runs as they are


class ModuleCalls:
    """Enters and leaves every module call, and knows each thread's innermost one."""

    def __init__(self, torch, ranges, guard, steps, claims, op_mode, core=None):
        self._torch = torch
        self._grad_nodes = grad_nodes_of(core)  # core: the compiled core, or None
        self._module_call = ModuleCall if core is None else core.ModuleCall
        self._ranges = ranges
        self._guard = guard
        self._steps = steps
        self._claims = claims
        self._op_mode = op_mode  # op_mode.OpMode or None
        self.names = ModuleNames()
        self._call_numbers = itertools.count(1)
        self._tensor_type = torch.Tensor
        self._loss_type = torch.nn.modules.loss._Loss
        self._grad_enabled = torch.is_grad_enabled
        # The op mode enters and leaves with each call: only these methods do that.
        self._compiled = None
        if core is not None and op_mode is None:
            self._compiled = core.ModuleCalls(self, ranges, self.names.qualified_names, claims,
                                              self._grad_enabled, self._tensor_type,
                                              self._loss_type, self._call_numbers)

    def install(self):
        """Interposes on nn.Module.__call__; the guard puts torch's back if it disables."""
        module_type = self._torch.nn.Module
        original = module_type.__call__
        entry = self if self._compiled is None else self._compiled
        interposer = interpose(original, compat.find_is_compiling(self._torch),
                               compat.find_dynamo_frame_callback(self._torch), self._guard,
                               entry.enter, entry.leave)
        module_type.__call__ = interposer
        self._guard.handles.append(_Interposed(module_type, original, interposer))
        compat.after_import((_DYNAMO_FRAMES,),
                            lambda: _skipped_by_dynamo(interposer, self._guard))

    def enter(self, module, args):
        """A module call starts: its range, and its ModuleCall on the thread's stack (returned)."""
        stack = self._ranges.stack
        if self._op_mode is not None:
            self._op_mode.enter()
        name = self.names.submodule_name(module, stack.roots)
        is_root = name is None
        if is_root:
            if not stack.modules and self._steps.may_open_at_root_call():
                self._steps.open()
            name = self.names.root_name(module)
            stack.roots.append(module)
        self._ranges.push(name)
        path = (stack.modules[-1].path if stack.modules else ()) + (name,)
        # The nodes the inputs came from were made before this call: its claim stops there.
        boundary = (tuple(self._grad_nodes(args, self._tensor_type))
                    if self._claims.enabled and self._grad_enabled() else None)
        call = self._module_call(name, is_root, next(self._call_numbers), boundary, path,
                                 isinstance(module, self._loss_type))
        stack.modules.append(call)
        return call

    def leave(self, call, kwargs, outputs):
        """`call` returned `outputs` (None: it raised); kwargs: its keyword arguments."""
        stack = self._ranges.stack
        if not stack.modules or stack.modules[-1] is not call:
            return  # closed already: by the step's close, or by the autograd node it ran in
        stack.modules.pop()
        if call.is_root:
            stack.roots.pop()
        self._ranges.pop_to(call.name)
        if call.boundary is not None and self._claims.enabled:
            nodes = self._grad_nodes(outputs, self._tensor_type)
            if nodes:
                boundary = call.boundary
                if kwargs:
                    boundary += tuple(self._grad_nodes(kwargs, self._tensor_type))
                self._claims.claim(nodes, call.number, boundary, call.path)
        if call.is_root and not stack.modules and not self._steps.optimizer_seen:
            self._steps.close()
        if self._op_mode is not None:
            self._op_mode.leave_if_scoped()

    def innermost_is_loss(self):
        """Whether this thread's innermost open module call is a loss module's."""
        modules = self._ranges.stack.modules
        return bool(modules) and modules[-1].is_loss


def interpose(original, is_compiling, dynamo_frame_callback, guard, enter, leave):
    """nn.Module.__call__ `original` in a module call: enter(module, args) before it and
    leave(call, kwargs, outputs) after it, each disabling the annotator at its first error;
    passing through while dynamo traces or runs a compiled region."""

    @functools.wraps(original)
    def __call__(module, *args, **kwargs):
        # is_compiling first: while dynamo traces, nothing after it is traced.
        if is_compiling is not None and (is_compiling() or
                                         dynamo_frame_callback() is not None):
            return original(module, *args, **kwargs)
        if not guard.enabled:
            return original(module, *args, **kwargs)
        try:
            call = enter(module, args)
        except Exception as error:  # never the program's: the annotator's own
            guard.disable(error)
            return original(module, *args, **kwargs)
        try:
            outputs = original(module, *args, **kwargs)
        except BaseException:
            try:
                leave(call, kwargs, None)
            except Exception as error:
                guard.disable(error)
            raise
        try:
            leave(call, kwargs, outputs)
        except Exception as error:
            guard.disable(error)
        return outputs

    return __call__


def _skipped_by_dynamo(interposer, guard):
    """Has dynamo run the interposer's frames as they are (still compiling the frames they call,
    torch's module call), where it has skip_code. An error disables the annotator, never the
    program's import."""
    try:
        skip_code = getattr(sys.modules.get(_DYNAMO_FRAMES), "skip_code", None)
        if skip_code is not None:
            skip_code(interposer.__code__)
    except Exception as error:  # noqa: BLE001 - never the program's problem
        guard.disable(error)


class _Interposed:
    """The interposer's handle for the guard: remove() puts torch's __call__ back, unless
    something else has replaced the interposer since (it then stays, passing calls through)."""

    def __init__(self, module_type, original, interposer):
        self._module_type = module_type
        self._original = original
        self._interposer = interposer

    def remove(self):
        if self._module_type.__dict__.get("__call__") is self._interposer:
            self._module_type.__call__ = self._original
