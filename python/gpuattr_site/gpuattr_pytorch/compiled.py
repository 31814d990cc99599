# compiled: the kernel map of each graph Inductor compiles (docs/pytorch.md §Compiled models,
# issue 42). For every call a compiled graph's wrapper makes, in the order it makes them (a
# kernel Inductor generated, an extern kernel such as a cuBLAS GEMM, a fallback aten op), the
# map says which modules the FX nodes it computes came from and whether it runs forward, backward
# or recomputation.
#
# Two sources, both Inductor's own, feature-detected:
#   - its provenance hook, set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name,
#     is_extern), which Inductor calls for each kernel it writes into a wrapper even while
#     provenance tracking is off (turning that on would change the FX graph cache key, so the
#     program would compile again and fill its cache with entries of gpuattr's). The spy reads
#     the kernel's buffers and its origins, the post-grad FX nodes it computes: their
#     nn_module_stack (forward nodes) or fwd_nn_module_stack (backward nodes carry their forward
#     node's), and partitioner_tag (a forward node in a backward graph is a recomputation);
#   - the wrapper's own call(), parsed with ast when Inductor loads it, for the order of the
#     calls and the buffers each writes: a kernel name can recur in one graph (identical kernels
#     are shared), and Inductor writes kernels in another order than it calls them.
# A call is matched to the kernel Inductor wrote for it by name and buffers, never by guess: an
# unmatched call keeps no modules.
#
# Runs on: the thread that compiles (dynamo's, Inductor's codegen and load are on it).
import ast
import re

PROVENANCE_HOOK = "set_kernel_post_grad_provenance_tracing"
# `[0]`, `['attn']`: a ModuleList index or a ModuleDict key in dynamo's source names.
_SUBSCRIPT = re.compile(r"\[['\"]?([^\]'\"]+)['\"]?\]")

FORWARD = "forward"
BACKWARD = "backward"
RECOMPUTE = "recompute"


class CallSite:
    """One call of a wrapper's call(): `callee` (a generated kernel's name, or the dotted name of
    an extern or fallback op), `buffers` it writes or passes, and once matched, `modules` (the
    qualified names of the modules its nodes came from, in first-seen order) and `phase`."""

    __slots__ = ("callee", "generated", "buffers", "modules", "phase")

    def __init__(self, callee, generated, buffers):
        self.callee = callee
        self.generated = generated
        self.buffers = buffers
        self.modules = None
        self.phase = None

    def __repr__(self):
        return "CallSite(%s, %s, %s)" % (self.callee, self.modules, self.phase)


def _dotted(node):
    """`a.b.c` of an ast Name/Attribute chain, or None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else head + "." + node.attr
    return None


def _names(nodes):
    return [node.id for node in nodes if isinstance(node, ast.Name)]


def generated_kernel_names(tree):
    """The module-level names a wrapper binds to the kernels it generated (from async_compile)."""
    names = set()
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call) and
                (_dotted(statement.value.func) or "").startswith("async_compile.")):
            names.update(_names(statement.targets))
    return names


def _call_function(tree):
    """The wrapper's call(args): a method of its Runner class, or a module-level function."""
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "call":
            return statement
        if isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, ast.FunctionDef) and member.name == "call":
                    return member
    return None


def wrapper_call_sites(source):
    """The calls a wrapper's call() makes, in order: generated kernels (`k(...)`, or Triton's
    `k.run(...)`) and extern or fallback ops (`extern_kernels.*`, `aten.*`, `torch.ops.*`)."""
    tree = ast.parse(source)
    kernels = generated_kernel_names(tree)
    call = _call_function(tree)
    sites = []
    if call is None:
        return sites

    def visit(node, targets):
        if isinstance(node, ast.Assign):
            targets = _names(node.targets)
        if isinstance(node, ast.Call):
            callee = _dotted(node.func)
            if callee is not None and callee.endswith(".run") and callee[:-4] in kernels:
                callee = callee[:-4]
            buffers = _names(node.args) + _names(kw.value for kw in node.keywords) + targets
            if callee in kernels:
                sites.append(CallSite(callee, True, buffers))
            elif callee is not None and callee.startswith(("extern_kernels.", "aten.",
                                                           "torch.ops.")):
                sites.append(CallSite(callee, False, buffers))
        for child in ast.iter_child_nodes(node):
            visit(child, targets if isinstance(node, ast.Assign) else [])

    for statement in call.body:
        visit(statement, [])
    return sites


def module_path(stack):
    """The qualified name of the innermost module of an nn_module_stack (dynamo's source names:
    `L['self'].blocks[0].attn` is `blocks.0.attn`; '' is the compiled root), or None."""
    if not stack:
        return None
    source = list(stack.values())[-1][0]
    path = source.split("]", 1)[1] if source.startswith(("L[", "G[")) else source
    return _SUBSCRIPT.sub(r".\1", path).strip(".")


def describe_origins(origins, graph_is_backward):
    """(modules in first-seen order, phase) of the FX nodes a kernel computes."""
    modules = []
    phases = set()
    for node in origins:
        if getattr(node, "op", None) != "call_function":
            continue
        meta = node.meta
        backward_node = meta.get("partitioner_tag") == "is_backward"
        stack = meta.get("fwd_nn_module_stack") if backward_node else meta.get("nn_module_stack")
        path = module_path(stack)
        if path is not None and path not in modules:
            modules.append(path)
        if backward_node:
            phases.add(BACKWARD)
        else:
            phases.add(RECOMPUTE if graph_is_backward else FORWARD)
    # A kernel's non-backward nodes are all forward, or all recomputed: its graph says which.
    return modules, BACKWARD if BACKWARD in phases else next(iter(phases), None)


class WrittenKernel:
    """What the provenance hook saw of one kernel Inductor wrote into a wrapper."""

    __slots__ = ("name", "buffers", "modules", "phase", "used")

    def __init__(self, name, buffers, modules, phase):
        self.name = name
        self.buffers = buffers
        self.modules = modules
        self.phase = phase
        self.used = False


def written_kernel(node_schedule, kernel_name, is_extern, graph_is_backward):
    """A WrittenKernel from the provenance hook's arguments."""
    if is_extern:
        nodes = [node_schedule]
    else:
        nodes = [getattr(snode, "node", None) for snode in node_schedule]
    nodes = [node for node in nodes if node is not None and hasattr(node, "get_name")]
    buffers = {node.get_name() for node in nodes}
    origins = []
    for node in nodes:
        origins.extend(getattr(node, "origins", ()))
    modules, phase = describe_origins(origins, graph_is_backward)
    return WrittenKernel(kernel_name, buffers, modules, phase)


def match(sites, written):
    """Gives each call site the modules and phase of the kernel written for it: the first unused
    one of its name that shares a buffer with it, else of its name alone when only one is left."""
    for site in sites:
        same_name = [kernel for kernel in written if kernel.name == site.callee and not kernel.used]
        sharing = [kernel for kernel in same_name if kernel.buffers & set(site.buffers)]
        chosen = sharing[0] if sharing else (same_name[0] if len(same_name) == 1 else None)
        if chosen is not None:
            chosen.used = True
            site.modules = chosen.modules
            site.phase = chosen.phase
    return sites


class KernelMaps:
    """The maps of the graphs Inductor compiled in this process: `maps[wrapper module name]` is
    its call() as CallSites. install() wraps Inductor's provenance hook and its wrapper loading;
    until then, and where this torch lacks either (`unavailable` says why), nothing is mapped.
    The first error of a hook body stops the mapping for good (`unavailable` holds it); the
    program's compile never sees it."""

    def __init__(self):
        self.maps = {}
        self.unavailable = "not installed"
        self._written = {}  # id(the GraphLowering being written) -> (it, [WrittenKernel])

    def install(self, debug, codecache, virtualized, loaded_modules):
        """`debug`, `codecache` and `virtualized` are torch._inductor's modules of those names;
        `loaded_modules` those that may have bound the provenance hook by name."""
        original = getattr(debug, PROVENANCE_HOOK, None)
        cache = getattr(codecache, "PyCodeCache", None)
        load = getattr(cache, "load_by_key_path", None)
        if original is None or load is None or not hasattr(virtualized, "V"):
            self.unavailable = ("this torch has no %s or PyCodeCache.load_by_key_path"
                                % PROVENANCE_HOOK)
            return
        maps = self

        def spy(node_schedule, kernel_name, *args, **kwargs):
            if maps.unavailable is None:
                maps._see_kernel(virtualized.V, node_schedule, kernel_name,
                                 kwargs.get("is_extern", args[0] if args else False))
            return original(node_schedule, kernel_name, *args, **kwargs)

        def load_and_map(key, path, *args, **kwargs):
            module = load(key, path, *args, **kwargs)
            if maps.unavailable is None:
                maps._see_wrapper(virtualized.V, module, path)
            return module

        for module in [debug] + list(loaded_modules):
            if getattr(module, PROVENANCE_HOOK, None) is original:
                setattr(module, PROVENANCE_HOOK, spy)
        cache.load_by_key_path = staticmethod(load_and_map)
        self.unavailable = None

    @staticmethod
    def _current_graph(virtualized_v):
        """The GraphLowering being written on this thread, or None (a compile-cache hit loads a
        wrapper with none: V.graph is then Inductor's NullHandler)."""
        try:
            graph = virtualized_v.graph
        except (AttributeError, AssertionError, RuntimeError):
            return None
        return graph if hasattr(graph, "wrapper_code") else None

    def _see_kernel(self, virtualized_v, node_schedule, kernel_name, is_extern):
        try:
            graph = self._current_graph(virtualized_v)
            if graph is None:
                return
            kernel = written_kernel(node_schedule, kernel_name, is_extern,
                                    bool(getattr(graph, "is_backward", False)))
            self._written.setdefault(id(graph), (graph, []))[1].append(kernel)
        except Exception as error:  # noqa: BLE001 - never the compile's problem
            self.unavailable = "the provenance hook failed: %r" % (error,)

    def _see_wrapper(self, virtualized_v, module, path):
        try:
            if not hasattr(module, "call") or module.__name__ in self.maps:
                return
            graph = self._current_graph(virtualized_v)
            _, written = self._written.pop(id(graph), (None, []))
            with open(path, encoding="utf-8") as source:
                sites = wrapper_call_sites(source.read())
            self.maps[module.__name__] = match(sites, written)
        except Exception as error:  # noqa: BLE001 - never the compile's problem
            self.unavailable = "mapping a wrapper failed: %r" % (error,)
