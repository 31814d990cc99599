# Module calls' range names, and what one open call holds (ModuleCall).
#
#   nn.Module: <Class>_<k>          a root module call (k numbers the class's root modules)
#   nn.Module: <qualified.name>     a submodule call, named from its root (layer1.0.conv1)
#
# torch.compile's OptimizedModule is named as the module it wraps (`_orig_mod`), and that step is
# left out of qualified names, as the kernel maps of compiled graphs name modules (compiled.py).
# A module is a submodule when a root call is open on the thread and the root has it, or when it
# was last seen under a root (a checkpoint's recompute runs it with no root call open); else its
# call is a root call. module_calls.py enters and leaves the calls.
# Runs on: any thread that calls modules.
import threading

from .ranges import MODULE_PREFIX


class ModuleCall:
    """One module call open on a thread: its range name, whether it is a root's, its number
    (calls are numbered in the order they start), the autograd nodes of its inputs (where its
    claim stops; None: no claim), its module path, and whether it is a loss. The compiled core
    has the same type in C (core.ModuleCall)."""

    __slots__ = ("name", "is_root", "number", "boundary", "path", "is_loss")

    def __init__(self, name, is_root, number, boundary, path, is_loss):
        self.name = name
        self.is_root = is_root
        self.number = number
        self.boundary = boundary
        self.path = path
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
        self.qualified_names = {}  # id(root) -> {id(module): range name} (read by the core)
        self._names_of_submodules = {}  # id(module) -> its range name under its last root

    def submodule_name(self, module, roots):
        """`nn.Module: <qualified name>` of `module` under the innermost open root call of
        `roots`, else under the root it was last seen under, else None (a root)."""
        if roots:
            root = roots[-1]
            names = self.qualified_names.get(id(root))
            if names is None or id(module) not in names:
                names = {id(child): MODULE_PREFIX + _without_compile_wrappers(name)
                         for name, child in root.named_modules()
                         if _without_compile_wrappers(name)}
                self.qualified_names[id(root)] = names
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
