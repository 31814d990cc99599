# A recording NVTX binding for the annotator's unit tests: every call is one tuple in `events`,
# in order, with the thread that made it where a test asks (`threads`).
#   ("push", name) ("pop",) ("mark", text) ("context", name) ("pop_context",)
#   ("domain_mark", domain, message, value)
import threading

from gpuattr_pytorch.nvtx import Capabilities


class RecordingNvtx:
    def __init__(self, context_ranges=True, domain_marks=True):
        self.events = []
        self.threads = []
        self.capabilities = Capabilities("recording", context_ranges, domain_marks)
        self.push_context = self._push_context if context_ranges else None
        self.pop_context = self._pop_context if context_ranges else None
        self.domain_mark = self._domain_mark if domain_marks else None

    def _record(self, event):
        self.events.append(event)
        self.threads.append(threading.get_ident())

    def push(self, name):
        self._record(("push", name))

    def pop(self):
        self._record(("pop",))

    def mark(self, text):
        self._record(("mark", text))

    def _push_context(self, name):
        self._record(("context", name))

    def _pop_context(self):
        self._record(("pop_context",))

    def _domain_mark(self, domain, message, value):
        self._record(("domain_mark", domain, message, value))

    def take(self):
        """The events so far, and none kept."""
        events, self.events, self.threads = self.events, [], []
        return events

    def pushed(self):
        """The names pushed so far, in order."""
        return [event[1] for event in self.events if event[0] == "push"]

    def marks(self):
        return [event[1] for event in self.events if event[0] == "mark"]


def open_paths(events):
    """For each push, the path it was pushed at (context names and pushed names open then,
    outermost first, the pushed name last): what the shim would record for its range."""
    stack, paths = [], []
    for event in events:
        if event[0] in ("push", "context"):
            stack.append(event[1])
            if event[0] == "push":
                paths.append(tuple(stack))
        elif event[0] in ("pop", "pop_context"):
            stack.pop()
    return paths
