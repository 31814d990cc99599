# The op mode: a dispatch mode over the aten ops a thread runs, for op ranges (--pytorch ops) and
# FLOP counting (--flops).
#
#   aten::<op>     with op ranges: each op a thread runs after it entered the mode, in a range
#                  named as torch.profiler names it
#
# With a FLOP counter (flops.py) the mode sends each op's FLOPs and bytes as NVTX marks with an
# integer payload, from inside the op's range, which the shim records with the thread's open-range
# path, so they belong to the pass the op ran in:
#   domain gpuattr.flops  message "<op> <dtype>"  payload: FLOPs    (a counted op)
#   domain gpuattr.bytes  message "<op> <dtype>"  payload: bytes    (its traffic estimate)
#   domain gpuattr.ops    message "free <op>" or "unknown <op>"  payload: 1
# and one mark without payload in gpuattr.flops at install, "counting (<rules>)", or
# "off: <why>" when it cannot count (flop_counter).
#
# A thread enters the mode at its first module call, or its first backward call: autograd runs
# the nodes, on whichever thread, with the modes of the thread that called backward. The main
# thread keeps it from then on (the optimizer's ops count too). Any other thread holds it only
# until its outermost module or backward call returns. A mode still on a thread's stack when the
# program's own `with Mode():` exits is what that exit pops, in place of the program's mode; the
# program's mode then stays in the thread's C++ state, released when the thread ends, which takes
# the GIL: a thread ending while the interpreter finalizes aborts the process (torch 1.13:
# "terminate called without an active exception"). Modes the program entered before the thread
# entered this one, a simulated device's among them, run inside its ranges; a second instance on
# one thread's mode stack passes ops through.
# Runs on: whichever thread runs an aten op after entering the mode.
import os
import threading

from . import compat, flops

FLOPS_DOMAIN = b"gpuattr.flops"
BYTES_DOMAIN = b"gpuattr.bytes"
OPS_DOMAIN = b"gpuattr.ops"


class OpMode:
    """The dispatch mode (`mode`) and what a thread calls to enter it (`enter`)."""

    def __init__(self, torch, ranges, guard, op_ranges, counter):
        self._ranges = ranges
        self._counter = counter
        self._main_thread = threading.main_thread().ident
        self.mode = None
        base, why_not = compat.dispatch_mode_base(torch)
        if base is None:
            ranges.nvtx.mark("gpuattr.pytorch: op mode off: " + why_not)
            return
        stack = ranges.stack
        names = {}  # op -> its name, as torch.profiler names it

        def op_name(func):
            name = names.get(func)
            if name is None:
                name = names[func] = func._schema.name
            return name

        count = (guard.guarded(lambda func, args, kwargs, result: self.count(
            func, op_name(func), args, kwargs, result)) if counter is not None else None)

        class GpuattrOpMode(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if stack.in_op_mode:  # a second instance on this thread's mode stack
                    return func(*args, **kwargs)
                stack.in_op_mode = True
                try:
                    if op_ranges:
                        return guard.call_in_range(op_name, func, args, kwargs, inside=count)
                    result = func(*args, **kwargs)
                finally:
                    stack.in_op_mode = False
                if count is not None:
                    count(func, args, kwargs, result)
                return result

        self.mode = GpuattrOpMode()

    def enter(self):
        """Enters the mode on the calling thread, once."""
        stack = self._ranges.stack
        if self.mode is not None and not stack.op_mode_entered:
            stack.op_mode_entered = True
            stack.op_mode_scoped = threading.get_ident() != self._main_thread
            self.mode.__enter__()

    def leave_if_scoped(self):
        """A module or backward call returned: when it was the calling thread's outermost one, a
        thread other than the main one leaves the mode. Never inside a backward call: autograd
        restores the modes it started a node with when the node returns, so a mode left inside a
        node (a reentrant checkpoint's recompute, its inner backward) would come back, entered."""
        stack = self._ranges.stack
        if stack.modules or stack.backward_calls:
            return
        if stack.op_mode_scoped and stack.op_mode_entered:
            stack.op_mode_entered = stack.op_mode_scoped = False
            self.mode.__exit__(None, None, None)

    def count(self, func, op, args, kwargs, result):
        """Sends the FLOPs and bytes of one op that ran (docs/pytorch.md §FLOPs)."""
        counted = self._counter.count(func, op, args, kwargs, result)
        domain_mark = self._ranges.nvtx.domain_mark
        if counted[0] == flops.COUNTED:
            message = op + " " + counted[3]
            domain_mark(FLOPS_DOMAIN, message, counted[1])
            domain_mark(BYTES_DOMAIN, message, counted[2])
        else:
            domain_mark(OPS_DOMAIN, counted[0] + " " + op, 1)


def flop_counter(torch, nvtx, environ=os.environ):
    """The FLOP counter when GPUATTR_FLOPS is 1 (gpuattr run --flops), with the rule file of
    GPUATTR_FLOP_RULES before ours, else None. A mark tells the report which: "gpuattr.flops:
    counting (<rules>)", or "gpuattr.flops: off: <why>"."""
    if environ.get("GPUATTR_FLOPS") != "1":
        return None
    why = None
    if not nvtx.capabilities.domain_marks:
        why = "its marks need NVTX domains, and libnvtx3interop could not be loaded"
    else:
        why = compat.dispatch_mode_base(torch)[1]
    counter = None
    if why is None:
        try:
            counter = flops.load_counter(torch, environ.get("GPUATTR_FLOP_RULES"))
        except flops.RuleFileError as error:
            why = "a rule file cannot be used: %s" % error
    nvtx.mark("gpuattr.flops: off: %s" % why if counter is None else
              "gpuattr.flops: counting (%s)" % counter.description)
    return counter
