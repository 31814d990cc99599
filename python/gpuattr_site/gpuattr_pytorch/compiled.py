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

# Ops that make a view of their input: in eager mode they launch no kernel.
METADATA_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "permute", "transpose", "t",
    "expand", "squeeze", "unsqueeze", "slice", "select", "as_strided", "alias", "detach",
    "split", "split_with_sizes", "unbind", "unflatten", "flatten"})

FORWARD = "forward"
BACKWARD = "backward"
RECOMPUTE = "recompute"


class CallSite:
    """One call of a wrapper's call(): `callee` (a generated kernel's name, or the dotted name of
    an extern or fallback op), `buffers` it writes or passes, and once matched, `modules` (the
    qualified names of the modules its nodes came from, in first-seen order), `chain` (the module
    calls, outermost first, that enclose all of its nodes: (qualified name, class name) pairs
    from the compiled root, whose qualified name is '') and `phase`."""

    __slots__ = ("callee", "generated", "buffers", "modules", "chain", "phase")

    def __init__(self, callee, generated, buffers):
        self.callee = callee
        self.generated = generated
        self.buffers = buffers
        self.modules = None
        self.chain = None
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


def _qualified(source):
    """`blocks.0.attn` of dynamo's source name `L['self'].blocks[0].attn` ('': the root)."""
    path = source.split("]", 1)[1] if source.startswith(("L[", "G[")) else source
    return _SUBSCRIPT.sub(r".\1", path).strip(".")


def _class_name(module_type):
    """A module class's name, from the class or its dotted name."""
    if isinstance(module_type, str):
        return module_type.rsplit(".", 1)[-1]
    return getattr(module_type, "__name__", str(module_type))


def module_chain(stack):
    """The module calls of an nn_module_stack, outermost first, as (qualified name, class name)
    pairs (dynamo's source names: `L['self'].blocks[0].attn` is `blocks.0.attn`; '' is the
    compiled root); [] for none."""
    return [(_qualified(entry[0]), _class_name(entry[1])) for entry in (stack or {}).values()]


def module_path(stack):
    """The qualified name of the innermost module of an nn_module_stack, or None."""
    chain = module_chain(stack)
    return chain[-1][0] if chain else None


def common_chain(chains):
    """The longest chain that begins every non-empty one of `chains` (their deepest common
    module's); a node of no module (autograd's gradient sums) says nothing about where it is."""
    chains = [chain for chain in chains if chain]
    if not chains:
        return []
    common = list(chains[0])
    for chain in chains[1:]:
        length = 0
        while (length < len(common) and length < len(chain) and
               common[length][0] == chain[length][0]):
            length += 1
        del common[length:]
    return common


def _op_name(node):
    """`mm` of an FX node calling aten.mm.default; None for other targets."""
    packet = getattr(getattr(node, "target", None), "_overloadpacket", None)
    return getattr(packet, "__name__", None)


def _computing_nodes(origins, extern_op):
    """The origins a kernel's time belongs to: for an extern kernel, the nodes of its op (an
    addmm fuses the views around it); else those that are not views, which launch nothing in
    eager mode, unless views are all there is."""
    nodes = [node for node in origins if getattr(node, "op", None) == "call_function"]
    if extern_op is not None:
        own = [node for node in nodes if _op_name(node) == extern_op]
        if own:
            return own
    computing = [node for node in nodes if _op_name(node) not in METADATA_OPS]
    return computing or nodes


def describe_origins(origins, graph_is_backward, extern_op=None):
    """(the modules, sorted, of the FX nodes a kernel computes, their common chain, phase). In a
    forward graph every kernel is forward (the partitioner moves some backward nodes into it,
    saved for backward instead of their inputs); in a backward graph a kernel is backward if
    any of its nodes is, else recomputation."""
    modules = set()
    chains = []
    backward = False
    nodes = _computing_nodes(origins, extern_op)
    for node in nodes:
        meta = node.meta
        backward_node = meta.get("partitioner_tag") == "is_backward"
        backward = backward or backward_node
        chain = module_chain((backward_node and meta.get("fwd_nn_module_stack")) or
                             meta.get("nn_module_stack"))
        chains.append(chain)
        if chain:
            modules.add(chain[-1][0])
    if not nodes:
        phase = None
    elif not graph_is_backward:
        phase = FORWARD
    else:
        phase = BACKWARD if backward else RECOMPUTE
    return sorted(modules), common_chain(chains), phase


class WrittenKernel:
    """What the provenance hook saw of one kernel Inductor wrote into a wrapper."""

    __slots__ = ("name", "buffers", "modules", "chain", "phase", "used")

    def __init__(self, name, buffers, modules, phase, chain=()):
        self.name = name
        self.buffers = buffers
        self.modules = modules
        self.chain = list(chain)
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
    extern_op = kernel_name.rsplit(".", 1)[-1] if is_extern else None
    if extern_op is not None and kernel_name.startswith("torch.ops."):
        extern_op = kernel_name.split(".")[3] if kernel_name.count(".") >= 3 else None
    modules, chain, phase = describe_origins(origins, graph_is_backward, extern_op)
    return WrittenKernel(kernel_name, buffers, modules, phase, chain)


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
            site.chain = chosen.chain
            site.phase = chosen.phase
    return sites


class KernelMaps:
    """The maps of the graphs Inductor compiled in this process: `maps[wrapper module name]` is
    its call() as CallSites. install() wraps Inductor's provenance hook and its wrapper loading;
    until then, and where this torch lacks either (`unavailable` says why), nothing is mapped.
    The first error of a hook body stops the mapping for good (`unavailable` holds it); the
    program's compile never sees it.

    `mapped(module, sites, is_backward)`, when given, is told of each map once its wrapper
    loaded (is_backward is None for a wrapper loaded from the compile cache, which Inductor did
    not write here: its sites match nothing)."""

    def __init__(self, mapped=None):
        self.maps = {}
        self.unavailable = "not installed"
        self._mapped = mapped
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
            if self._mapped is not None:
                is_backward = None if graph is None else bool(getattr(graph, "is_backward", 0))
                self._mapped(module, sites, is_backward)
        except Exception as error:  # noqa: BLE001 - never the compile's problem
            self.unavailable = "mapping a wrapper failed: %r" % (error,)
