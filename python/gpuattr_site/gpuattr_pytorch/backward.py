# Backward by module: autograd nodes claimed by the module calls that made them.
#
# When a module call returns with outputs that need a gradient, the nodes its forward made are
# claimed for it (Claims.claim): from its outputs' nodes back to its inputs' (the boundary), each
# node gets a pre-hook and a hook. The pre-hook, on whichever thread autograd runs the node,
# pushes the call's module path as context ranges and a `backward` leaf; the hook pops them. Off
# the step's thread the step's open ranges are copied first, as context too. A node that runs
# inside another one on its thread (a reentrant checkpoint's inner backward, made by its
# recompute) nests its own path and leaf above the outer leaf, so each module keeps its own
# backward. Forward module calls inside a leaf (a checkpoint's recompute) nest under it, where the
# phase rules make them recompute. This is the import model of a Kineto trace (one leaf per
# top-level backward op, linked to the forward op that made it), so both give the same pass tree.
# Nodes no module call made are claimed at backward's call (call number 0): AccumulateGrad's are
# `backward_unlinked`.
# Runs on: the thread that returns from a module call or calls backward (claim); autograd's
# threads (the node hooks).
from . import compat
from .ranges import BACKWARD_LEAF, UNLINKED_LEAF

CLAIM_KEY = "gpuattr.claim"  # in an autograd node's metadata: (call number, call boundary)
_NESTING_LIMIT = 4  # how deep grad_nodes looks into lists, tuples and dicts


def grad_nodes(value, tensor_type, found=None, depth=0):
    """The autograd nodes of the tensors in a module's inputs or outputs that need a gradient
    (tensors, and lists, tuples and dicts of them, a few levels deep)."""
    if found is None:
        found = []
    if isinstance(value, tensor_type):
        if value.requires_grad:
            node = value.grad_fn
            if node is not None:
                found.append(node)
    elif depth < _NESTING_LIMIT and isinstance(value, (list, tuple)):
        for item in value:
            grad_nodes(item, tensor_type, found, depth + 1)
    elif depth < _NESTING_LIMIT and isinstance(value, dict):
        for item in value.values():
            grad_nodes(item, tensor_type, found, depth + 1)
    return found


def grad_nodes_of(core):
    """grad_nodes(value, tensor_type): the compiled core's (the same walk, in C) where `core` is
    given, else the function above."""
    return grad_nodes if core is None else core.grad_nodes


class NodeFrame:
    """One autograd node a thread runs: how many context ranges it pushed, and how deep the
    thread's names, module calls and roots were when it started."""

    __slots__ = ("context", "names", "modules", "roots")

    def __init__(self, context, stack):
        self.context = context
        self.names = len(stack.names)
        self.modules = len(stack.modules)
        self.roots = len(stack.roots)


class Claims:
    """Claims nodes for module calls and runs their hooks. `enabled` is False without context
    ranges, and turns False (with a mark) at the first node where autograd lacks what it needs."""

    def __init__(self, torch, ranges, guard, steps):
        self._torch = torch
        self._ranges = ranges
        self._nvtx = ranges.nvtx
        self._guard = guard
        self._steps = steps
        self.enabled = ranges.nvtx.push_context is not None
        self._accumulate_grad_type = None  # found at the first node (_nodes_checked)
        self._enter_hooks = {}  # module path -> the pre-hook its nodes share
        self._leave_hook = guard.guarded(self._leave_node)
        self._unlinked_hook = self._make_enter_hook((), UNLINKED_LEAF)

    def claim(self, nodes, call_number, boundary, path):
        """Hooks the autograd nodes that module call `call_number` made, found from its outputs'
        nodes back to its inputs' (`boundary`). A node already claimed by a call nested inside
        this one (a larger number: it started later, and ended first) is passed over to that
        call's boundary; one claimed by an earlier call, and what it came from, is not ours
        (nor is one this walk claimed already). call_number 0 claims what no module call made
        (backward's own walk)."""
        if self._accumulate_grad_type is None and not self._nodes_checked(nodes[0]):
            return
        accumulate_grad_type = self._accumulate_grad_type
        enter_hook = None
        leave_hook = self._leave_hook
        calls_passed = None
        pending = list(nodes)
        while pending:
            node = pending.pop()
            if node in boundary:
                continue
            metadata = node.metadata
            claim = metadata.get(CLAIM_KEY)
            if claim is None:
                if type(node) is accumulate_grad_type:  # a leaf's: no forward op made it
                    # Nothing lies behind it; and an accumulator may outlive the graph (DDP
                    # keeps them), so its claim holds no node of this one.
                    metadata[CLAIM_KEY] = (call_number, ())
                    node.register_prehook(self._unlinked_hook)
                else:
                    metadata[CLAIM_KEY] = (call_number, boundary)
                    if enter_hook is None:
                        enter_hook = self._enter_hook(path)
                    node.register_prehook(enter_hook)
                    for next_node, _ in node.next_functions:
                        if next_node is not None:
                            pending.append(next_node)
                node.register_hook(leave_hook)
            elif claim[0] > call_number:
                if calls_passed is None:
                    calls_passed = set()
                if claim[0] not in calls_passed:
                    calls_passed.add(claim[0])
                    pending.extend(claim[1])

    def _nodes_checked(self, node):
        accumulate_grad_type, why_not = compat.autograd_node_support(self._torch, node)
        if accumulate_grad_type is not None:
            self._accumulate_grad_type = accumulate_grad_type
            return True
        self.enabled = False
        self._nvtx.mark("gpuattr.pytorch: backward by module off: " + why_not)
        return False

    def _enter_hook(self, path):
        """The pre-hook of the nodes of module path `path` (one per path, shared)."""
        hook = self._enter_hooks.get(path)
        if hook is None:
            hook = self._enter_hooks[path] = self._make_enter_hook(path, BACKWARD_LEAF)
        return hook

    def _make_enter_hook(self, path, leaf):
        enter = self._enter_node
        return self._guard.guarded(lambda grad_outputs: enter(path, leaf))

    def _enter_node(self, path, leaf):
        """A node starts, on the thread autograd runs it on: its module path as context ranges
        (after the step's, for a thread's outermost node off the step's thread), then the leaf."""
        stack = self._ranges.stack
        context = path if stack.nodes else self._steps.off_thread_context() + path
        frame = NodeFrame(len(context), stack)
        push_context = self._nvtx.push_context
        for name in context:
            push_context(name)
        stack.nodes.append(frame)
        self._ranges.push(leaf)

    def _leave_node(self, grad_inputs, grad_outputs):
        """The node that ends is this thread's innermost. What it left open above its leaf (the
        module calls of a recompute that stopped early, by an exception) closes with it."""
        stack = self._ranges.stack
        if not stack.nodes:
            return
        frame = stack.nodes.pop()
        names = stack.names
        while len(names) > frame.names:
            names.pop()
            self._nvtx.pop()
        del stack.modules[frame.modules:], stack.roots[frame.roots:]
        pop_context = self._nvtx.pop_context
        for _ in range(frame.context):
            pop_context()
