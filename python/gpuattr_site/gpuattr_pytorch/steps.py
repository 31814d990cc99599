# Steps: the `ProfilerStep#N` ranges, named as torch.profiler names them.
#
# A step opens at the first root module call or optimizer.zero_grad() after the previous step
# closed, and closes when optimizer.step() returns; in a process that made no optimizer, when that
# root module call returns. The batch fetch before it is outside, so that no step is left open
# after the last batch. A root call made while backward runs (a checkpoint's recompute) opens
# none. One thread owns the open step: the one that opened it; autograd's other threads read its
# open ranges (context) to put their nodes inside the step.
# Runs on: the training loop's thread (open, close); autograd's threads (context, in_backward).
import threading

from .ranges import BACKWARD_LEAF, MODULE_PREFIX, UNLINKED_LEAF


class Steps:
    def __init__(self, ranges):
        self._ranges = ranges
        self._lock = threading.Lock()
        self.number = 0
        self.is_open = False
        self.thread = None  # the thread that opened the open step
        self.optimizer_seen = False  # a process with an optimizer ends steps at its step()
        self._thread_names = []  # the step thread's ThreadStack.names, read by other threads
        self._backward_depth = 0

    def name(self):
        return "ProfilerStep#%d" % self.number

    def open(self):
        if self.is_open:
            return
        self.is_open = True
        self.thread = threading.get_ident()
        self._thread_names = self._ranges.stack.names
        self._ranges.push(self.name())

    def close(self):
        if not self.is_open or threading.get_ident() != self.thread:
            return
        self._ranges.pop_to(self.name())
        self._ranges.stack.reset()  # what an exception left open inside the step closes with it
        self.is_open = False
        self.number += 1

    def may_open_at_root_call(self):
        """Whether a root module call on a thread with no module open starts a step: not while
        backward runs."""
        return self._backward_depth == 0

    def in_backward(self):
        return self._backward_depth > 0

    def enter_backward(self):
        with self._lock:
            self._backward_depth += 1

    def leave_backward(self):
        with self._lock:
            self._backward_depth -= 1

    def off_thread_context(self):
        """The step's open ranges below its first module or backward leaf, for a node that starts
        on another thread than the step's (empty when no step is open, or on the step's thread)."""
        if not self.is_open or threading.get_ident() == self.thread:
            return ()
        names = list(self._thread_names)
        for index, name in enumerate(names):
            if name.startswith(MODULE_PREFIX) or name in (BACKWARD_LEAF, UNLINKED_LEAF):
                return tuple(names[:index])
        return tuple(names)
