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
#   backward                            Tensor.backward / torch.autograd.backward
#   Optimizer.step#<Class>.step         optimizer.step(), as torch.profiler names it
#   Optimizer.zero_grad#<Class>.zero_grad
#   enumerate(DataLoader)#<Iterator>.__next__   fetching a batch, as torch.profiler names it
#
# Forward module calls inside backward are under `backward`, which the phase rules make recompute
# (activation checkpointing). A thread that runs module calls while another thread is inside
# backward (autograd's device threads) first gets the open step and `backward` replicated on its
# own NVTX stack, so its ranges have the same path as they would on the main thread.
#
# The program must never notice: nothing is printed, no result or exception changes, and the
# first error inside a hook disables the annotator for good (a `gpuattr.pytorch: disabled: ...`
# NVTX mark names it in the report). Inside torch.compile'd regions nothing is emitted.
# Runs on: any thread that calls modules, optimizers, data loaders or backward.
import functools
import os
import threading

_annotator = None


class _Nvtx:
    """NVTX push/pop/mark: torch's own binding when torch was built with CUDA, else the CUDA
    toolkit's libnvtx3interop through ctypes (GPUATTR_NVTX_LIBRARY, set by `gpuattr run`)."""

    def __init__(self, torch):
        nvtx_binding = getattr(torch._C, "_nvtx", None)
        if nvtx_binding is not None:
            self.push = nvtx_binding.rangePushA
            self.pop = nvtx_binding.rangePop
            self.mark = nvtx_binding.markA
            return
        import ctypes

        library = ctypes.CDLL(os.environ.get("GPUATTR_NVTX_LIBRARY", "libnvtx3interop.so.1"))
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


class _ThreadStack(threading.local):
    """This thread's ranges: the names it pushed (innermost last), its open module calls (range
    name, whether it is a root call) and their roots."""

    def __init__(self):
        self.names = []
        self.modules = []
        self.roots = []
        self.replicated = 0  # ranges copied from the thread in backward, below everything else

    def reset(self):
        del self.names[:], self.modules[:], self.roots[:]
        self.replicated = 0


class Annotator:
    def __init__(self, torch, nvtx):
        self._torch = torch
        self._nvtx = nvtx
        self._stack = _ThreadStack()
        self._lock = threading.Lock()
        self._enabled = True
        self._step_number = 0
        self._step_open = False
        self._step_thread = None
        self._optimizer_seen = False
        self._backward_depth = 0
        self._backward_thread = None  # the thread inside Tensor.backward, and its ranges then
        self._backward_prefix = ()
        self._root_names = {}  # id(root module) -> "nn.Module: Class_k"
        self._root_count_by_class = {}
        self._qualified_names = {}  # id(root module) -> {id(module): its range name}
        self._names_of_submodules = {}  # id(module) -> its range name under its last root
        self._is_compiling = self._find_is_compiling(torch)
        self._handles = []

    @staticmethod
    def _find_is_compiling(torch):
        """torch._dynamo.is_compiling, or None for a torch without dynamo (1.13)."""
        dynamo = getattr(torch, "_dynamo", None)
        check = getattr(dynamo, "is_compiling", None) if dynamo is not None else None
        return check if callable(check) else None

    def _may_emit(self):
        return self._enabled and (self._is_compiling is None or not self._is_compiling())

    # --- installing -------------------------------------------------------------------------

    def install(self):
        torch = self._torch
        module_hooks = torch.nn.modules.module
        self._handles.append(
            module_hooks.register_module_forward_pre_hook(self._guarded(self._forward_pre)))
        self._handles.append(
            module_hooks.register_module_forward_hook(self._guarded(self._forward_post)))
        self._wrap_backward()
        self._wrap_optimizers()
        self._wrap_data_loader()

    def _guarded(self, function):
        """`function` as a hook body: any error disables the annotator and is named once."""

        def guarded(*args):
            if not self._may_emit():
                return None
            try:
                function(*args)
            except Exception as error:  # never the program's: hooks' own errors only
                self._disable(error)
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
        """`function` wrapped in a range named name_of(*args); the range closes however the call
        ends, and the wrapper adds nothing to the call's own behaviour."""
        annotator = self

        @functools.wraps(function)
        def wrapped(*args, **kwargs):
            name = None
            if annotator._may_emit():
                try:
                    name = name_of(*args)
                    annotator._push(name)
                except Exception as error:
                    name = None
                    annotator._disable(error)
            try:
                return function(*args, **kwargs)
            finally:
                if name is not None:
                    annotator._pop_to(name)

        return wrapped

    # --- the thread's NVTX stack -------------------------------------------------------------

    def _push(self, name):
        stack = self._stack
        if self._backward_depth and not stack.names:
            self._replicate_backward_prefix()
        stack.names.append(name)
        self._nvtx.push(name)

    def _pop_to(self, name):
        """Pops through the innermost `name` (ranges an exception left open above it too)."""
        stack = self._stack
        names = stack.names
        if names and names[-1] == name:  # the usual case: calls nest
            names.pop()
            self._nvtx.pop()
        elif name in names:
            while names:
                self._nvtx.pop()
                if names.pop() == name:
                    break
        else:
            return
        if stack.replicated:
            self._release_backward_prefix()

    def _replicate_backward_prefix(self):
        stack = self._stack
        prefix = self._backward_prefix
        if threading.current_thread() is self._backward_thread or not prefix:
            return
        for name in prefix:
            self._nvtx.push(name)
        stack.names.extend(prefix)
        stack.replicated = len(prefix)

    def _release_backward_prefix(self):
        stack = self._stack
        if len(stack.names) == stack.replicated:
            for _ in range(stack.replicated):
                self._nvtx.pop()
            del stack.names[:]
            stack.replicated = 0

    # --- steps --------------------------------------------------------------------------------

    def _open_step(self):
        if self._step_open:
            return
        self._step_open = True
        self._step_thread = threading.current_thread()
        self._push("ProfilerStep#%d" % self._step_number)

    def _close_step(self):
        if not self._step_open or threading.current_thread() is not self._step_thread:
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
                names = {id(child): "nn.Module: " + name
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
                name = "nn.Module: %s_%d" % (class_name, index)
                self._root_names[id(module)] = name
        return name

    def _forward_pre(self, module, inputs):
        stack = self._stack
        name = self._submodule_range_name(module)
        is_root = name is None
        if is_root:
            if not stack.modules and self._backward_depth == 0:
                self._open_step()
            name = self._root_range_name(module)
            stack.roots.append(module)
        self._push(name)
        stack.modules.append((name, is_root))

    def _forward_post(self, module, inputs, outputs):
        stack = self._stack
        if not stack.modules:
            return
        name, is_root = stack.modules.pop()
        if is_root:
            stack.roots.pop()
        self._pop_to(name)
        if is_root and not stack.modules and not self._optimizer_seen:
            self._close_step()

    # --- backward, optimizers, data loaders ----------------------------------------------------

    def _wrap_backward(self):
        torch = self._torch
        annotator = self

        def in_backward(function):
            inner = self._around(lambda *args: "backward", function)

            @functools.wraps(function)
            def wrapped(*args, **kwargs):
                if annotator._backward_depth > 0:  # Tensor.backward calls autograd.backward
                    return function(*args, **kwargs)
                with annotator._lock:
                    annotator._backward_depth += 1
                    annotator._backward_thread = threading.current_thread()
                    annotator._backward_prefix = tuple(annotator._stack.names) + ("backward",)
                try:
                    return inner(*args, **kwargs)
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
        ranged_step = self._around(lambda *args: step_name, optimizer_type.step)
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

        def open_step_for_zero_grad(*args):
            annotator._open_step()
            return zero_grad_name

        optimizer_type.zero_grad = self._around(open_step_for_zero_grad, optimizer_type.zero_grad)

    def _wrap_data_loader(self):
        data_loader = self._torch.utils.data.dataloader
        for iterator_type in (data_loader._SingleProcessDataLoaderIter,
                              data_loader._MultiProcessingDataLoaderIter):
            name = "enumerate(DataLoader)#%s.__next__" % iterator_type.__name__
            iterator_type.__next__ = self._around(lambda *args, name=name: name,
                                                  iterator_type.__next__)


def install(torch):
    """Installs the annotator once, on the freshly imported `torch` (sitecustomize calls this,
    unless GPUATTR_PYTORCH is off)."""
    global _annotator
    if _annotator is not None:
        return
    annotator = Annotator(torch, _Nvtx(torch))
    annotator.install()
    _annotator = annotator
