# Each thread's open ranges, and the guard every hook body runs under.
#
# ThreadStack is one thread's state: the names it pushed (innermost last, mirroring what the shim
# holds for it), its open module calls and their roots, the autograd nodes it runs, and whether it
# entered the op mode. Ranges pushes and pops through it, so that a range an exception left open is
# closed with the range it was inside.
#
# Guard keeps the program from ever noticing the annotator: a hook body's first error disables it
# for good (hooks removed, a `gpuattr.pytorch: disabled: ...` mark names the error in the report),
# and nothing is emitted while torch.compile traces (is_compiling). Its `around` wraps a function
# of torch's so that each call runs in a range and behaves exactly as before.
# Runs on: every thread that calls modules, optimizers, data loaders or backward, and autograd's.
import functools
import threading

MODULE_PREFIX = "nn.Module: "
BACKWARD_LEAF = "backward"  # an autograd node a module call made
UNLINKED_LEAF = "backward_unlinked"  # a node no module call made (AccumulateGrad)


class ThreadStack(threading.local):
    """This thread's ranges: the names it pushed (innermost last), its open module calls and
    their roots, the autograd nodes it runs (one frame each, innermost last) and its open
    backward calls."""

    def __init__(self):
        self.names = []
        self.modules = []  # modules.ModuleCall
        self.roots = []
        self.nodes = []  # backward.NodeFrame
        self.backward_calls = 0  # open backward calls the patch saw on this thread
        self.op_mode_entered = False
        self.op_mode_scoped = False  # entered off the main thread: left when its call returns
        self.in_op_mode = False

    def reset(self):
        del self.names[:], self.modules[:], self.roots[:], self.nodes[:]


class Ranges:
    """NVTX ranges pushed and popped through the calling thread's ThreadStack (`stack`)."""

    def __init__(self, nvtx):
        self.nvtx = nvtx
        self.stack = ThreadStack()

    def push(self, name):
        self.stack.names.append(name)
        self.nvtx.push(name)

    def pop_to(self, name):
        """Pops through the innermost `name` (ranges an exception left open above it too)."""
        names = self.stack.names
        if names and names[-1] == name:  # the usual case: calls nest
            names.pop()
            self.nvtx.pop()
        elif name in names:
            while names:
                self.nvtx.pop()
                if names.pop() == name:
                    break


def make_ranges(nvtx, core=None):
    """Ranges over `nvtx` and a new ThreadStack: the compiled core's (the same calls, in C) where
    `core` is given, else the class above."""
    if core is None:
        return Ranges(nvtx)
    return core.Ranges(nvtx, ThreadStack())


class Guard:
    """Whether the annotator may emit now, and hook bodies that disable it at their first error."""

    def __init__(self, nvtx, ranges, is_compiling):
        self.enabled = True
        self.handles = []  # what disable() removes: hook handles
        self._nvtx = nvtx
        self._ranges = ranges
        self._is_compiling = is_compiling

    def may_emit(self):
        return self.enabled and (self._is_compiling is None or not self._is_compiling())

    def disable(self, error):
        self.enabled = False
        for handle in self.handles:
            handle.remove()
        try:
            self._nvtx.mark("gpuattr.pytorch: disabled: %s: %s" % (type(error).__name__, error))
        except Exception:
            pass

    def guarded(self, function):
        """`function` as a hook body: it returns None, and any error disables the annotator."""
        guard = self
        is_compiling = self._is_compiling

        def guarded(*args):
            # may_emit, inlined: every module call and every autograd node runs this.
            if not guard.enabled or (is_compiling is not None and is_compiling()):
                return None
            try:
                function(*args)
            except Exception as error:  # never the program's: hooks' own errors only
                guard.disable(error)
            return None

        return guarded

    def around(self, name_of, function):
        """`function` wrapped so that each call runs in a range named name_of(function)
        (call_in_range); the wrapper adds nothing to the call's own behaviour."""
        guard = self

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            return guard.call_in_range(name_of, function, args, kwargs)

        return wrapped

    def call_in_range(self, name_of, function, args, kwargs, inside=None):
        """function(*args, **kwargs) inside a range named name_of(function) (None: no range),
        which closes however the call ends; an error naming or pushing it disables the
        annotator, and the call runs all the same. inside(function, args, kwargs, result), a
        guarded hook, runs in the range after a call that returned."""
        name = None
        if self.may_emit():
            try:
                name = name_of(function)
                if name is not None:
                    self._ranges.push(name)
            except Exception as error:
                name = None
                self.disable(error)
        try:
            result = function(*args, **kwargs)
            if inside is not None:
                inside(function, args, kwargs, result)
            return result
        finally:
            if name is not None:
                self._ranges.pop_to(name)
