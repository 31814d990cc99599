# Module calls: their range names and the global forward hooks that push and pop them.
#
#   nn.Module: <Class>_<k>          a root module call (k numbers the class's root modules)
#   nn.Module: <qualified.name>     a submodule call, named from its root (layer1.0.conv1)
#
# torch.compile's OptimizedModule is named as the module it wraps (`_orig_mod`), and that step is
# left out of qualified names, as the kernel maps of compiled graphs name modules (compiled.py).
# A module is a submodule when a root call is open on the thread and the root has it, or when it
# was last seen under a root (a checkpoint's recompute runs it with no root call open); else its
# call is a root call, which opens a step when nothing else is open (steps.py). When a call
# returns with outputs that need a gradient, the autograd nodes its forward made are claimed for it
# (backward.py), back to the nodes of its inputs: its positional arguments as the pre-hook sees
# them, and its keyword arguments as the forward hook sees them where torch passes them
# (torch >= 2.0), so that `block(hidden_states=h)` claims nothing its caller made.
# Runs on: any thread that calls modules.
import itertools
import threading

from . import compat
from .backward import grad_nodes_of
from .ranges import MODULE_PREFIX


class ModuleCall:
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


def _without_compile_wrappers(qualified_name):
    """A qualified name without torch.compile's OptimizedModule steps (`_orig_mod`): a compiled
    module's submodules are named as if it were not wrapped, as its kernel maps name them."""
    parts = [part for part in qualified_name.split(".") if part != "_orig_mod"]
    return ".".join(parts) if qualified_name else qualified_name


class ModuleNames:
    """Range names of modules: roots by class and number, submodules by qualified name."""

    def __init__(self):
        self._lock = threading.Lock()
        self._root_names = {}  # id(root module) -> "nn.Module: Class_k"
        self._root_count_by_class = {}
        self._first_root_of_class = {}  # class name -> its first root's name
        self._qualified_names = {}  # id(root module) -> {id(module): its range name}
        self._names_of_submodules = {}  # id(module) -> its range name under its last root

    def submodule_name(self, module, roots):
        """`nn.Module: <qualified name>` of `module` under the innermost open root call of
        `roots`, else under the root it was last seen under, else None (a root)."""
        if roots:
            root = roots[-1]
            names = self._qualified_names.get(id(root))
            if names is None or id(module) not in names:
                names = {id(child): MODULE_PREFIX + _without_compile_wrappers(name)
                         for name, child in root.named_modules()
                         if _without_compile_wrappers(name)}
                self._qualified_names[id(root)] = names
                self._names_of_submodules.update(names)
            name = names.get(id(module))
            if name is not None:
                return name
        return self._names_of_submodules.get(id(module))

    def root_name(self, module):
        name = self._root_names.get(id(module))
        if name is None:
            with self._lock:
                # torch.compile(model) is called as an OptimizedModule: named as the model.
                named = getattr(module, "_orig_mod", module)
                class_name = type(named).__name__
                index = self._root_count_by_class.get(class_name, 0)
                self._root_count_by_class[class_name] = index + 1
                name = "%s%s_%d" % (MODULE_PREFIX, class_name, index)
                self._root_names[id(module)] = name
                self._first_root_of_class.setdefault(class_name, name)
        return name

    def root_name_of_class(self, class_name):
        """The name of the first root of `class_name` called so far, else the one the first
        would get: a compiled graph's root, of which only the class is known."""
        return self._first_root_of_class.get(class_name, "%s%s_0" % (MODULE_PREFIX, class_name))


class ModuleHooks:
    """The global forward pre-hook and forward hook of every module call."""

    def __init__(self, torch, ranges, guard, steps, claims, op_mode, core=None):
        self._torch = torch
        self._grad_nodes = grad_nodes_of(core)  # core: the compiled core, or None
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

    def install(self):
        """Registers the hooks; their handles go to the guard, which removes them if disabled."""
        torch = self._torch
        guarded = self._guard.guarded
        self._guard.handles.append(torch.nn.modules.module.register_module_forward_pre_hook(
            guarded(self.forward_pre)))
        hook = compat.register_global_forward_hook(torch, guarded(self.forward_post_with_kwargs),
                                                   guarded(self.forward_post))
        self._guard.handles.append(hook.handle)
        return hook

    def forward_pre(self, module, inputs):
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
        boundary = (tuple(self._grad_nodes(inputs, self._tensor_type))
                    if self._claims.enabled and self._grad_enabled() else None)
        stack.modules.append(ModuleCall(name, is_root, next(self._call_numbers), boundary, path,
                                        id(module), isinstance(module, self._loss_type)))

    def forward_post_with_kwargs(self, module, inputs, *kwargs_and_outputs):
        """A module call returned: (kwargs, outputs); or raised: torch runs an always_call hook
        then with (outputs) only, None, even when it was registered with kwargs."""
        kwargs = kwargs_and_outputs[0] if len(kwargs_and_outputs) == 2 else None
        self._end_call(module, kwargs, kwargs_and_outputs[-1])

    def forward_post(self, module, inputs, outputs):
        """A module call returned, or (where always_call is taken) raised: outputs is then None."""
        self._end_call(module, None, outputs)

    def _end_call(self, module, kwargs, outputs):
        stack = self._ranges.stack
        if not stack.modules or stack.modules[-1].module_id != id(module):
            return  # its pre-hook did not run (another pre-hook raised), or it is closed
        call = stack.modules.pop()
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
