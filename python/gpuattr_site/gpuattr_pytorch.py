# The PyTorch annotator (docs/pytorch.md): turns an unmodified PyTorch program into the ranges of
# the PyTorch model of docs/attribution.md, as NVTX push/pop ranges the shim records.
#
#   ProfilerStep#N                      a step: opens at the first root module call or
#                                       optimizer.zero_grad() after the previous step closed,
#                                       closes when optimizer.step() returns (in a process that
#                                       made no optimizer: when that root module call returns); the
#                                       batch fetch before it is outside, so that no step is left
#                                       open after the last batch
#   nn.Module: <Class>_<k>              a root module call (k numbers the class's root modules)
#   nn.Module: <qualified.name>         a submodule call, named from its root (layer1.0.conv1)
#   backward                            one autograd node's backward, under the module path of
#                                       the module call that made the node (context ranges)
#   backward_unlinked                   a node no module call made: AccumulateGrad
#   Optimizer.step#<Class>.step         optimizer.step(), as torch.profiler names it
#   Optimizer.zero_grad#<Class>.zero_grad
#   enumerate(DataLoader)#<Iterator>.__next__   fetching a batch, as torch.profiler names it
#   aten::<op>                          with GPUATTR_PYTORCH=ops: each aten op a thread runs
#                                       after its first module call (a dispatch mode)
#
# With GPUATTR_FLOPS=1 (gpuattr run --flops) the same dispatch mode counts each op's FLOPs and
# bytes (gpuattr_flops.py) and sends them as NVTX marks with an integer payload, which the shim
# records with the thread's open-range path, so they belong to the pass the op ran in:
#   domain gpuattr.flops  message "<op> <dtype>"  payload: FLOPs    (a counted op)
#   domain gpuattr.bytes  message "<op> <dtype>"  payload: bytes    (its traffic estimate)
#   domain gpuattr.ops    message "free <op>" or "unknown <op>"  payload: 1
# and one mark without payload in gpuattr.flops at install, "counting (<rules>)", or
# "off: <why>" when it cannot count.
#
# Backward by module: when a module call returns with outputs that need a gradient, the autograd
# nodes its forward made are claimed for it (_claim_nodes) and get a pre-hook and a hook. The
# pre-hook, on whichever thread autograd runs the node, pushes the call's module path as context
# ranges (NVTX domain `gpuattr.context`: the shim keeps them on the thread's stack for the path
# of what is pushed above them, but records no range of their own) and a `backward` leaf; the
# hook pops them. Off the step's thread the step's open ranges are copied first, as context too.
# A node that runs inside another one on its thread (a checkpoint's inner backward) adds nothing:
# the outer leaf holds it. Forward module calls inside a leaf (a checkpoint's recompute) nest
# under it, where the phase rules make them recompute. This is the import model of a Kineto trace
# (one leaf per top-level backward op, linked to the forward op that made it), so both give the
# same pass tree.
#
# The program must never notice: nothing is printed, no result or exception changes, and the
# first error inside a hook disables the annotator for good (a `gpuattr.pytorch: disabled: ...`
# NVTX mark names it in the report). Inside torch.compile'd regions nothing is emitted.
# Runs on: any thread that calls modules, optimizers, data loaders or backward, and autograd's
# threads (the node hooks).
import ctypes
import functools
import itertools
import os
import sys
import threading
import warnings

import gpuattr_flops

_annotator = None

_CONTEXT_DOMAIN = b"gpuattr.context"  # the shim's context ranges (inject/nvtx, docs/pytorch.md)
_CLAIM_KEY = "gpuattr.claim"  # in an autograd node's metadata: (call number, call boundary)
_MODULE_PREFIX = "nn.Module: "
_BACKWARD_LEAF = "backward"  # a node a module call made
_UNLINKED_LEAF = "backward_unlinked"  # a node no module call made (AccumulateGrad)


class _EventAttributes(ctypes.Structure):
    """nvtxEventAttributes_t (NVTX_VERSION 3, 48 bytes), as a registered message needs it."""

    _fields_ = [("version", ctypes.c_uint16), ("size", ctypes.c_uint16),
                ("category", ctypes.c_uint32), ("color_type", ctypes.c_int32),
                ("color", ctypes.c_uint32), ("payload_type", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("payload", ctypes.c_uint64),
                ("message_type", ctypes.c_int32), ("message", ctypes.c_void_p)]


_NVTX_MESSAGE_TYPE_REGISTERED = 3
_NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 = 1
_FLOPS_DOMAIN = b"gpuattr.flops"  # the FLOP counter's marks (docs/pytorch.md §FLOPs)
_BYTES_DOMAIN = b"gpuattr.bytes"
_OPS_DOMAIN = b"gpuattr.ops"


class _Nvtx:
    """NVTX push/pop/mark, and context push/pop in the `gpuattr.context` domain.

    The CUDA toolkit's libnvtx3interop through ctypes (GPUATTR_NVTX_LIBRARY, set by `gpuattr
    run`); when it cannot be loaded, torch's own binding (torch built with CUDA), which has no
    domains: then `push_context` is None, and there is no backward by module."""

    def __init__(self, torch):
        self.push_context = None
        self.pop_context = None
        self.domain_mark = None
        try:
            library = ctypes.CDLL(os.environ.get("GPUATTR_NVTX_LIBRARY", "libnvtx3interop.so.1"))
        except OSError:
            library = None
        if library is None:
            binding = torch._C._nvtx  # AttributeError: no NVTX at all, the annotator stays out
            self.push = binding.rangePushA
            self.pop = binding.rangePop
            self.mark = binding.markA
            return
        push = library.nvtxRangePushA
        push.argtypes = [ctypes.c_char_p]
        push.restype = ctypes.c_int
        pop = library.nvtxRangePop
        pop.argtypes = []
        pop.restype = ctypes.c_int
        mark = library.nvtxMarkA
        mark.argtypes = [ctypes.c_char_p]
        mark.restype = None
        encoded = {}  # range name -> its bytes: a module's name is pushed at every call

        def push_name(name):
            name_bytes = encoded.get(name)
            if name_bytes is None:
                name_bytes = encoded[name] = name.encode("utf-8", "replace")
            return push(name_bytes)

        self.push = push_name
        self.pop = pop
        self.mark = lambda text: mark(text.encode("utf-8", "replace"))
        try:
            self._init_context(library)
            self._init_domain_marks(library)
        except AttributeError:  # a library without NVTX domains: no backward by module
            self.push_context = self.pop_context = self.domain_mark = None

    def _init_context(self, library):
        create = library.nvtxDomainCreateA
        create.argtypes = [ctypes.c_char_p]
        create.restype = ctypes.c_void_p
        register = library.nvtxDomainRegisterStringA
        register.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        register.restype = ctypes.c_void_p
        push = library.nvtxDomainRangePushEx
        push.argtypes = [ctypes.c_void_p, ctypes.POINTER(_EventAttributes)]
        push.restype = ctypes.c_int
        pop = library.nvtxDomainRangePop
        pop.argtypes = [ctypes.c_void_p]
        pop.restype = ctypes.c_int
        domain = create(_CONTEXT_DOMAIN)
        attributes_by_name = {}  # name -> its attributes, with the name registered once

        def push_context(name):
            attributes = attributes_by_name.get(name)
            if attributes is None:
                attributes = _EventAttributes(
                    version=3, size=ctypes.sizeof(_EventAttributes),
                    message_type=_NVTX_MESSAGE_TYPE_REGISTERED,
                    message=register(domain, name.encode("utf-8", "replace")))
                attributes_by_name[name] = attributes
            push(domain, ctypes.byref(attributes))

        self.push_context = push_context
        self.pop_context = lambda: pop(domain)

    def _init_domain_marks(self, library):
        """domain_mark(domain, message, value): nvtxDomainMarkEx in `domain` (bytes) with the
        registered `message` (str) and `value` as an unsigned 64-bit payload (None: none)."""
        create = library.nvtxDomainCreateA
        register = library.nvtxDomainRegisterStringA
        mark = library.nvtxDomainMarkEx
        mark.argtypes = [ctypes.c_void_p, ctypes.POINTER(_EventAttributes)]
        mark.restype = None
        domains = {}  # name -> handle
        messages = {}  # (domain name, message) -> registered handle
        per_thread = threading.local()  # an attributes structure each: ctypes releases the GIL

        def domain_mark(domain_name, message, value):
            handle = messages.get((domain_name, message))
            if handle is None:
                domain = domains.get(domain_name)
                if domain is None:
                    domain = domains[domain_name] = create(domain_name)
                handle = register(domain, message.encode("utf-8", "replace"))
                messages[(domain_name, message)] = handle
            attributes = getattr(per_thread, "attributes", None)
            if attributes is None:
                attributes = per_thread.attributes = _EventAttributes(
                    version=3, size=ctypes.sizeof(_EventAttributes),
                    message_type=_NVTX_MESSAGE_TYPE_REGISTERED)
            attributes.message = handle
            if value is None:
                attributes.payload_type = 0
            else:
                attributes.payload_type = _NVTX_PAYLOAD_TYPE_UNSIGNED_INT64
                attributes.payload = value
            mark(domains[domain_name], ctypes.byref(attributes))

        self.domain_mark = domain_mark


def _grad_nodes(value, tensor_type, found=None, depth=0):
    """The autograd nodes of the tensors in a module's inputs or outputs that need a gradient
    (tensors, and lists, tuples and dicts of them, a few levels deep)."""
    if found is None:
        found = []
    if isinstance(value, tensor_type):
        if value.requires_grad:
            node = value.grad_fn
            if node is not None:
                found.append(node)
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            _grad_nodes(item, tensor_type, found, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            _grad_nodes(item, tensor_type, found, depth + 1)
    return found


class _ThreadStack(threading.local):
    """This thread's ranges: the names it pushed (innermost last), its open module calls and
    their roots, and the autograd nodes it runs (one frame each, innermost last)."""

    def __init__(self):
        self.names = []
        self.modules = []  # _ModuleCall
        self.roots = []
        self.nodes = []  # _NodeFrame
        self.op_mode_entered = False
        self.in_op_mode = False

    def reset(self):
        del self.names[:], self.modules[:], self.roots[:], self.nodes[:]


class _ModuleCall:
    """One module call open on a thread: its range name, whether it is a root's, its number
    (calls are numbered in the order they start), the autograd nodes of its inputs (where its
    claim stops; None: no claim), its module path, the module's id, and whether it is a loss."""

    __slots__ = ("name", "is_root", "number", "boundary", "path", "module_id", "is_loss")

    def __init__(self, name, is_root, number, boundary, path, module_id, is_loss):
        self.name = name
        self.is_root = is_root
        self.number = number
        self.boundary = boundary
        self.path = path
        self.module_id = module_id
        self.is_loss = is_loss


class _NodeFrame:
    """One autograd node this thread runs: its leaf range, how many context ranges it pushed,
    and how deep the thread's names, module calls and roots were when it started."""

    __slots__ = ("leaf", "context", "names", "modules", "roots")

    def __init__(self, leaf, context, stack):
        self.leaf = leaf
        self.context = context
        self.names = len(stack.names)
        self.modules = len(stack.modules)
        self.roots = len(stack.roots)


class Annotator:
    def __init__(self, torch, nvtx, op_ranges=False, counter=None):
        self._torch = torch
        self._nvtx = nvtx
        self._stack = _ThreadStack()
        self._lock = threading.Lock()
        self._enabled = True
        self._step_number = 0
        self._step_open = False
        self._step_thread = None
        self._step_names = []  # the step thread's _ThreadStack.names, read by autograd threads
        self._optimizer_seen = False
        self._backward_depth = 0
        self._call_numbers = itertools.count(1)
        self._root_names = {}  # id(root module) -> "nn.Module: Class_k"
        self._root_count_by_class = {}
        self._qualified_names = {}  # id(root module) -> {id(module): its range name}
        self._names_of_submodules = {}  # id(module) -> its range name under its last root
        self._is_compiling = self._find_is_compiling(torch)
        # Backward by module needs the context domain and autograd nodes with pre-hooks and
        # metadata (torch >= 1.13); found out at the first node (_claim_nodes).
        self._by_module = nvtx.push_context is not None
        self._node_hooks = {}  # module path -> the pre-hook its nodes share
        self._leave_node_hook = self._guarded(self._leave_node)
        self._unlinked_node_hook = self._enter_node_hook((), _UNLINKED_LEAF)
        self._accumulate_grad_type = None  # found at the first node (_nodes_checked)
        self._tensor_type = torch.Tensor
        self._loss_type = torch.nn.modules.loss._Loss
        self._grad_enabled = torch.is_grad_enabled
        self._handles = []
        self._counter = counter
        self._op_mode = (self._make_op_mode(op_ranges, counter)
                         if op_ranges or counter is not None else None)

    @staticmethod
    def _find_is_compiling(torch):
        """torch.compiler.is_compiling (torch >= 2.3), else torch._dynamo's once the program
        imported dynamo (torch 2.0-2.2), else None (torch 1.13 has no dynamo). Never imports
        torch._dynamo itself: importing it changes the program (with it, torch 2.13's gloo
        process group can deadlock at exit, joining a thread that waits for the GIL)."""
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

    def _may_emit(self):
        return self._enabled and (self._is_compiling is None or not self._is_compiling())

    # --- installing -------------------------------------------------------------------------

    def install(self):
        torch = self._torch
        # torch.compile(module) warns once when global module hooks exist (they fire for the
        # OptimizedModule too): the warning would be gpuattr's, printed into the program's stderr.
        warnings.filterwarnings("ignore", category=UserWarning,
                                message=r"Using `torch\.compile\(module\)` when there are global "
                                        r"hooks on modules")
        module_hooks = torch.nn.modules.module
        self._handles.append(
            module_hooks.register_module_forward_pre_hook(self._guarded(self._forward_pre)))
        forward_post = self._guarded(self._forward_post)
        try:  # torch >= 2.1: also when the call raised (a recompute that stopped early)
            handle = module_hooks.register_module_forward_hook(forward_post, always_call=True)
        except TypeError:
            handle = module_hooks.register_module_forward_hook(forward_post)
        self._handles.append(handle)
        self._wrap_backward()
        self._wrap_optimizers()
        self._wrap_data_loader()
        self._wrap_functional_losses()
        self._wrap_gradient_clipping()

    def _guarded(self, function):
        """`function` as a hook body: any error disables the annotator and is named once."""

        annotator = self
        is_compiling = self._is_compiling

        def guarded(*args):
            # _may_emit, inlined: every module call and every autograd node runs this.
            if not annotator._enabled or (is_compiling is not None and is_compiling()):
                return None
            try:
                function(*args)
            except Exception as error:  # never the program's: hooks' own errors only
                annotator._disable(error)
            return None

        return guarded

    def _disable(self, error):
        self._enabled = False
        for handle in self._handles:
            handle.remove()
        try:
            self._nvtx.mark("gpuattr.pytorch: disabled: %s: %s" % (type(error).__name__, error))
        except Exception:
            pass

    def _around(self, name_of, function):
        """`function` wrapped so that each call runs in a range named name_of(function)
        (_call_in_range); the wrapper adds nothing to the call's own behaviour."""
        annotator = self

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            return annotator._call_in_range(name_of, function, args, kwargs)

        return wrapped

    def _call_in_range(self, name_of, function, args, kwargs, inside=None):
        """function(*args, **kwargs) inside a range named name_of(function) (None: no range),
        which closes however the call ends; an error naming or pushing it disables the
        annotator, and the call runs all the same. inside(function, args, kwargs, result), a guarded hook, runs in the range
        after a call that returned."""
        name = None
        if self._may_emit():
            try:
                name = name_of(function)
                if name is not None:
                    self._push(name)
            except Exception as error:
                name = None
                self._disable(error)
        try:
            result = function(*args, **kwargs)
            if inside is not None:
                inside(function, args, kwargs, result)
            return result
        finally:
            if name is not None:
                self._pop_to(name)

    # --- the op mode: op ranges (--pytorch ops) and FLOP counting (--flops) -------------------

    def _make_op_mode(self, op_ranges, counter):
        """A dispatch mode over the aten ops a thread runs once it entered the mode (at its first
        module call, _forward_pre, or its first backward call: autograd runs the nodes, on
        whichever thread, with the modes of the thread that called backward): with op_ranges each
        op runs in a range named as torch.profiler names it (`aten::addmm`); with a counter its
        FLOPs and bytes are sent as marks from inside that range (_count). None (and a mark) for
        a torch without dispatch modes. Modes the program entered before the thread entered this
        one, a simulated device's among them, run inside its ranges."""
        try:
            from torch.utils._python_dispatch import TorchDispatchMode
        except ImportError as error:
            self._nvtx.mark("gpuattr.pytorch: op mode off: %s" % error)
            return None
        annotator = self
        stack = self._stack
        names = {}  # op -> its name, as torch.profiler names it

        def op_name(func):
            name = names.get(func)
            if name is None:
                name = names[func] = func._schema.name
            return name

        count = (self._guarded(lambda func, args, kwargs, result: annotator._count(
            func, op_name(func), args, kwargs, result)) if counter is not None else None)

        class OpMode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if stack.in_op_mode:  # a second instance on this thread's mode stack
                    return func(*args, **kwargs)
                stack.in_op_mode = True
                try:
                    if op_ranges:
                        return annotator._call_in_range(op_name, func, args, kwargs, inside=count)
                    result = func(*args, **kwargs)
                finally:
                    stack.in_op_mode = False
                if count is not None:
                    count(func, args, kwargs, result)
                return result

        return OpMode()

    def _enter_op_mode(self):
        stack = self._stack
        if not stack.op_mode_entered:
            stack.op_mode_entered = True
            self._op_mode.__enter__()

    def _count(self, func, op, args, kwargs, result):
        """Sends the FLOPs and bytes of one op that ran (docs/pytorch.md §FLOPs)."""
        counted = self._counter.count(func, op, args, kwargs, result)
        domain_mark = self._nvtx.domain_mark
        if counted[0] == gpuattr_flops.COUNTED:
            message = op + " " + counted[3]
            domain_mark(_FLOPS_DOMAIN, message, counted[1])
            domain_mark(_BYTES_DOMAIN, message, counted[2])
        else:
            domain_mark(_OPS_DOMAIN, counted[0] + " " + op, 1)

    # --- the thread's NVTX stack -------------------------------------------------------------

    def _push(self, name):
        self._stack.names.append(name)
        self._nvtx.push(name)

    def _pop_to(self, name):
        """Pops through the innermost `name` (ranges an exception left open above it too)."""
        names = self._stack.names
        if names and names[-1] == name:  # the usual case: calls nest
            names.pop()
            self._nvtx.pop()
        elif name in names:
            while names:
                self._nvtx.pop()
                if names.pop() == name:
                    break

    # --- steps --------------------------------------------------------------------------------

    def _open_step(self):
        if self._step_open:
            return
        self._step_open = True
        self._step_thread = threading.get_ident()
        self._step_names = self._stack.names
        self._push("ProfilerStep#%d" % self._step_number)

    def _close_step(self):
        if not self._step_open or threading.get_ident() != self._step_thread:
            return
        self._pop_to("ProfilerStep#%d" % self._step_number)
        self._stack.reset()  # what an exception left open inside the step is closed with it
        self._step_open = False
        self._step_number += 1

    # --- modules ------------------------------------------------------------------------------

    def _submodule_range_name(self, module):
        """`nn.Module: <qualified name>` of `module` under the innermost root call open on this
        thread, else under the root it was last seen under (a checkpoint's recompute), else
        None."""
        roots = self._stack.roots
        if roots:
            root = roots[-1]
            names = self._qualified_names.get(id(root))
            if names is None or id(module) not in names:
                names = {id(child): _MODULE_PREFIX + name
                         for name, child in root.named_modules() if name}
                self._qualified_names[id(root)] = names
                self._names_of_submodules.update(names)
            name = names.get(id(module))
            if name is not None:
                return name
        return self._names_of_submodules.get(id(module))

    def _root_range_name(self, module):
        name = self._root_names.get(id(module))
        if name is None:
            with self._lock:
                class_name = type(module).__name__
                index = self._root_count_by_class.get(class_name, 0)
                self._root_count_by_class[class_name] = index + 1
                name = "%s%s_%d" % (_MODULE_PREFIX, class_name, index)
                self._root_names[id(module)] = name
        return name

    def _forward_pre(self, module, inputs):
        stack = self._stack
        if self._op_mode is not None:
            self._enter_op_mode()
        name = self._submodule_range_name(module)
        is_root = name is None
        if is_root:
            if not stack.modules and self._backward_depth == 0:
                self._open_step()
            name = self._root_range_name(module)
            stack.roots.append(module)
        self._push(name)
        path = (stack.modules[-1].path if stack.modules else ()) + (name,)
        # The nodes the inputs came from were made before this call: its claim stops there.
        boundary = (tuple(_grad_nodes(inputs, self._tensor_type))
                    if self._by_module and self._grad_enabled() else None)
        stack.modules.append(_ModuleCall(name, is_root, next(self._call_numbers), boundary, path,
                                         id(module), isinstance(module, self._loss_type)))

    def _forward_post(self, module, inputs, outputs):
        """A module call returned, or (torch >= 2.1) raised: outputs is then None."""
        stack = self._stack
        if not stack.modules or stack.modules[-1].module_id != id(module):
            return  # its pre-hook did not run (another pre-hook raised), or it is closed
        call = stack.modules.pop()
        name, is_root, call_number, boundary, path = (call.name, call.is_root, call.number,
                                                      call.boundary, call.path)
        if is_root:
            stack.roots.pop()
        self._pop_to(name)
        if boundary is not None and self._by_module:
            nodes = _grad_nodes(outputs, self._tensor_type)
            if nodes:
                self._claim_nodes(nodes, call_number, boundary, path)
        if is_root and not stack.modules and not self._optimizer_seen:
            self._close_step()

    # --- backward by module -------------------------------------------------------------------

    def _claim_nodes(self, nodes, call_number, boundary, path):
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
        leave_hook = self._leave_node_hook
        calls_passed = None
        pending = nodes
        while pending:
            node = pending.pop()
            if node in boundary:
                continue
            metadata = node.metadata
            claim = metadata.get(_CLAIM_KEY)
            if claim is None:
                if type(node) is accumulate_grad_type:  # a leaf's: no forward op made it
                    # Nothing lies behind it; and an accumulator may outlive the graph (DDP
                    # keeps them), so its claim holds no node of this one.
                    metadata[_CLAIM_KEY] = (call_number, ())
                    node.register_prehook(self._unlinked_node_hook)
                else:
                    metadata[_CLAIM_KEY] = (call_number, boundary)
                    if enter_hook is None:
                        enter_hook = self._node_hook(path)
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
        """Whether autograd nodes take pre-hooks and metadata (torch >= 1.13) and AccumulateGrad's
        node type is known, which backward by module needs; without them it is off, and a mark
        says why."""
        accumulate_grad_type = getattr(getattr(self._torch._C, "_functions", None),
                                       "AccumulateGrad", None)
        if (accumulate_grad_type is not None and hasattr(node, "register_prehook") and
                hasattr(node, "metadata")):
            self._accumulate_grad_type = accumulate_grad_type
            return True
        self._by_module = False
        self._nvtx.mark("gpuattr.pytorch: backward by module off: autograd nodes have no "
                        "register_prehook/metadata or no AccumulateGrad type in torch %s" %
                        self._torch.__version__)
        return False

    def _node_hook(self, path):
        """The pre-hook of the nodes of module path `path` (one per path, shared)."""
        hook = self._node_hooks.get(path)
        if hook is None:
            hook = self._node_hooks[path] = self._enter_node_hook(path, _BACKWARD_LEAF)
        return hook

    def _enter_node_hook(self, path, leaf):
        enter = self._enter_node
        return self._guarded(lambda grad_outputs: enter(path, leaf))

    def _enter_node(self, path, leaf):
        """An autograd node starts, on the thread autograd runs it on: its module path as context
        ranges, then the leaf. The outermost node of a thread other than the step's starts with
        the step's open ranges, as context too. A node inside another one (a reentrant
        checkpoint's inner backward, which the recompute made) nests its own path and leaf
        above the outer leaf, so each module keeps its own backward."""
        stack = self._stack
        context = path
        if not stack.nodes and self._step_open and threading.get_ident() != self._step_thread:
            context = self._step_context() + path
        frame = _NodeFrame(leaf, len(context), stack)
        push_context = self._nvtx.push_context
        for name in context:
            push_context(name)
        stack.nodes.append(frame)
        self._push(leaf)

    def _leave_node(self, grad_inputs, grad_outputs):
        """The node that ends is this thread's innermost. What it left open above its leaf (the
        module calls of a recompute that stopped early, by an exception) closes with it."""
        stack = self._stack
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

    def _step_context(self):
        """The step thread's open ranges below its first module or backward leaf: what a node on
        another thread runs inside (the step)."""
        names = list(self._step_names)
        for index, name in enumerate(names):
            if name.startswith(_MODULE_PREFIX) or name in (_BACKWARD_LEAF, _UNLINKED_LEAF):
                return tuple(names[:index])
        return tuple(names)

    # --- backward, optimizers, data loaders ----------------------------------------------------

    def _wrap_backward(self):
        torch = self._torch
        annotator = self

        def in_backward(function):
            @functools.wraps(function)
            def wrapped(*args, **kwargs):
                # Tensor.backward calls autograd.backward; a backward called inside a node (a
                # reentrant checkpoint's) runs the graph its recompute made, whose nodes no
                # module call made are claimed here as at the outer call.
                if annotator._backward_depth > 0 and not annotator._stack.nodes:
                    return function(*args, **kwargs)
                with annotator._lock:
                    annotator._backward_depth += 1
                try:
                    if annotator._op_mode is not None and annotator._may_emit():
                        # Autograd runs each node with the calling thread's dispatch modes as
                        # they are now (on every thread it runs nodes on): enter ours first.
                        try:
                            annotator._enter_op_mode()
                        except Exception as error:
                            annotator._disable(error)
                    if annotator._by_module and annotator._may_emit():
                        try:  # the nodes no module call made, as torch.profiler links them
                            roots = _grad_nodes(args[0] if args else kwargs.get("tensors"),
                                                annotator._tensor_type)
                            if roots:
                                annotator._claim_nodes(roots, 0, (), ())
                        except Exception as error:
                            annotator._disable(error)
                    return function(*args, **kwargs)
                finally:
                    with annotator._lock:
                        annotator._backward_depth -= 1

            return wrapped

        torch.Tensor.backward = in_backward(torch.Tensor.backward)
        torch.autograd.backward = in_backward(torch.autograd.backward)

    def _wrap_optimizers(self):
        optimizer_class = self._torch.optim.Optimizer
        original_init = optimizer_class.__init__
        annotator = self

        @functools.wraps(original_init)
        def init_then_wrap(optimizer, *args, **kwargs):
            original_init(optimizer, *args, **kwargs)
            if annotator._enabled:
                try:
                    annotator._optimizer_seen = True
                    annotator._wrap_optimizer_class(type(optimizer))
                except Exception as error:
                    annotator._disable(error)

        optimizer_class.__init__ = init_then_wrap

    def _wrap_optimizer_class(self, optimizer_type):
        if "_gpuattr_step" in optimizer_type.__dict__:
            return
        optimizer_type._gpuattr_step = True
        class_name = optimizer_type.__name__
        step_name = "Optimizer.step#%s.step" % class_name
        ranged_step = self._around(lambda step: step_name, optimizer_type.step)
        annotator = self

        @functools.wraps(optimizer_type.step)
        def step_then_close(*args, **kwargs):
            try:
                return ranged_step(*args, **kwargs)
            finally:
                if annotator._enabled:
                    annotator._close_step()

        optimizer_type.step = step_then_close
        zero_grad_name = "Optimizer.zero_grad#%s.zero_grad" % class_name

        def open_step_for_zero_grad(zero_grad):
            annotator._open_step()
            return zero_grad_name

        optimizer_type.zero_grad = self._around(open_step_for_zero_grad, optimizer_type.zero_grad)

    def _wrap_functional_losses(self):
        """Each torch.nn.functional loss called outside a loss module (F.cross_entropy inside a
        model's forward, as most LLM code computes its loss) runs in a range named
        `nn.functional.<name>`, which the phase rules make loss, under the module that called it.
        A loss module's own call of it adds nothing: the module's range is the loss already."""
        functional = self._torch.nn.functional
        stack = self._stack

        def name_of_loss(name):
            def name_of(function):
                modules = stack.modules
                return None if modules and modules[-1].is_loss else "nn.functional." + name

            return name_of

        for name in _functional_losses(functional):
            setattr(functional, name, self._around(name_of_loss(name), getattr(functional, name)))

    def _wrap_gradient_clipping(self):
        """torch.nn.utils.clip_grad_norm_ / clip_grad_value_ run in ranges of those names, which
        the phase rules make optimizer (wherever the program imported them from after torch)."""
        utils = self._torch.nn.utils
        clip_grad = getattr(utils, "clip_grad", None)
        for name in ("clip_grad_norm_", "clip_grad_value_"):
            function = getattr(utils, name, None)
            if function is None:
                continue
            wrapped = self._around(lambda function, name=name: "torch.nn.utils." + name, function)
            setattr(utils, name, wrapped)
            if clip_grad is not None and getattr(clip_grad, name, None) is function:
                setattr(clip_grad, name, wrapped)

    def _wrap_data_loader(self):
        data_loader = self._torch.utils.data.dataloader
        for iterator_type in (data_loader._SingleProcessDataLoaderIter,
                              data_loader._MultiProcessingDataLoaderIter):
            name = "enumerate(DataLoader)#%s.__next__" % iterator_type.__name__
            iterator_type.__next__ = self._around(lambda next_batch, name=name: name,
                                                  iterator_type.__next__)


def _functional_losses(functional):
    """The loss functions of torch.nn.functional: `*_loss`, and the four named otherwise."""
    named = ("cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
             "kl_div")
    return [name for name in dir(functional)
            if (name.endswith("_loss") or name in named) and callable(getattr(functional, name))]


def _flop_counter(torch, nvtx):
    """The FLOP counter when GPUATTR_FLOPS is 1 (gpuattr run --flops), with the rule file of
    GPUATTR_FLOP_RULES before ours, else None. A mark tells the report which: "gpuattr.flops:
    counting (<rules>)", or "gpuattr.flops: off: <why>"."""
    if os.environ.get("GPUATTR_FLOPS") != "1":
        return None
    why = None
    if nvtx.domain_mark is None:
        why = "its marks need NVTX domains, and libnvtx3interop could not be loaded"
    else:
        try:
            from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401
        except ImportError:
            why = "torch %s has no dispatch modes (torch >= 1.13 has)" % torch.__version__
    counter = None
    if why is None:
        try:
            counter = gpuattr_flops.load_counter(torch, os.environ.get("GPUATTR_FLOP_RULES"))
        except gpuattr_flops.RuleFileError as error:
            why = "a rule file cannot be used: %s" % error
    nvtx.mark("gpuattr.flops: off: %s" % why if counter is None else
              "gpuattr.flops: counting (%s)" % counter.description)
    return counter


def install(torch):
    """Installs the annotator once, on the freshly imported `torch` (sitecustomize calls this,
    unless GPUATTR_PYTORCH is off; `ops` adds the op ranges, GPUATTR_FLOPS=1 the FLOP counter)."""
    global _annotator
    if _annotator is not None:
        return
    nvtx = _Nvtx(torch)
    annotator = Annotator(torch, nvtx, op_ranges=os.environ.get("GPUATTR_PYTORCH") == "ops",
                          counter=_flop_counter(torch, nvtx))
    annotator.install()
    _annotator = annotator
