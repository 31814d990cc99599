# compiled_graphs: the compiled room at run time (docs/pytorch.md §Compiled models, issue 42).
#
# Three things, none of them inside compiled code:
#   - installs the kernel maps (compiled.py) once the program itself imported Inductor: a finder
#     on sys.meta_path waits for torch._inductor.codecache and torch._inductor.debug, so a program
#     that never compiles never loads Inductor because of gpuattr;
#   - writes each graph's map, as the range names each call's launches belong under, to one JSON
#     line of gpuattr's own file (GPUATTR_KERNEL_MAPS/<pid>.jsonl, format gpuattr.kernel_map/1),
#     never to the program's outputs or its compile cache;
#   - keeps each map in gpuattr's own cache (kernel_map_cache.py) for the runs that load the graph
#     from Inductor's cache; a graph loaded so with no map there is named by a mark;
#   - replaces the loaded wrapper's call with one that runs it inside a range naming the graph,
#     `torch.compile: <key> forward|backward` (key: the wrapper's code-cache key), so the
#     collector knows which map a launch's kernel name is looked up in.
#
# A call's modules are named as the eager annotator names them, `nn.Module: <qualified name>`, the
# compiled root as the module call open when its forward graph compiled (the module
# torch.compile wrapped, whose range is already above the graph's, so that graph leaves it out),
# else by class as modules.py names roots. A backward graph compiles later (lazily, in backward)
# under the forward's compile id, which carries the root across. A kernel fusing several modules
# has their deepest common one's, and lists the fused ones. The collector turns modules and phase
# into ranges below the graph's (analysis/compiled_graph_join.h).
# Runs on: the thread that imports Inductor (install), the compiling thread (maps), and any thread
# that calls a compiled graph (its range).
import importlib.machinery
import json
import os
import sys

from . import compiled
from .ranges import MODULE_PREFIX

MAPS_ENV = "GPUATTR_KERNEL_MAPS"
MAP_FORMAT = "gpuattr.kernel_map/1"
GRAPH_RANGE_PREFIX = "torch.compile: "
_WATCHED = ("torch._inductor.codecache", "torch._inductor.debug")
UNMAPPED_MARK = ("gpuattr.pytorch: compiled graph %s has no kernel map: Inductor loaded it from its "
                 "cache, compiled before gpuattr saw it, and its launches stay on its range "
                 "(run once with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 to map it)")


class RootCall:
    """The module call open on the compiling thread when a forward graph compiled."""

    __slots__ = ("name", "is_root")

    def __init__(self, name, is_root):
        self.name = name
        self.is_root = is_root


def range_names(chain, root_call, include_root, root_name_of_class):
    """The module range names of a call site's chain (compiled.CallSite.chain)."""
    names = []
    for qualified, class_name in chain:
        if qualified == "":
            if include_root:
                names.append(root_call.name if root_call else root_name_of_class(class_name))
        elif root_call is None or root_call.is_root:
            names.append(MODULE_PREFIX + qualified)
        else:
            names.append(root_call.name + "." + qualified)
    return names


def graph_range_name(key, is_backward):
    if is_backward is None:
        return GRAPH_RANGE_PREFIX + key
    return GRAPH_RANGE_PREFIX + key + (" backward" if is_backward else " forward")


class CompiledGraphs:
    """The kernel maps, their file, and a range per compiled graph call."""

    def __init__(self, ranges, guard, module_names, maps_dir, map_cache=None):
        self._ranges = ranges
        self._guard = guard
        self._module_names = module_names
        self._map_cache = map_cache  # kernel_map_cache.KernelMapCache or None
        self._maps_path = (os.path.join(maps_dir, "%d.jsonl" % os.getpid())
                           if maps_dir else None)
        self._roots = {}  # str(compile id) -> RootCall or None, from its forward graph
        self.kernel_maps = compiled.KernelMaps(self._context, self._mapped)

    def install(self):
        """Installs the maps now if the program already imported Inductor, else once it does."""
        if all(name in sys.modules for name in _WATCHED):
            self.install_loaded()
        else:
            sys.meta_path.insert(0, _InductorImportWatcher(self))

    def install_loaded(self):
        """Installs the maps over the Inductor modules the program has loaded; an error leaves
        them uninstalled (kernel_maps.unavailable says why), never the program's import."""
        try:
            inductor = [module for name, module in list(sys.modules.items())
                        if name.startswith("torch._inductor") and module is not None]
            virtualized = sys.modules.get("torch._inductor.virtualized")
            self.kernel_maps.install(sys.modules[_WATCHED[1]], sys.modules[_WATCHED[0]],
                                     virtualized, inductor)
        except Exception as error:  # noqa: BLE001 - never the program's problem
            self.kernel_maps.unavailable = "installing the maps failed: %r" % (error,)

    def _context(self):
        """(compile id, RootCall or None) for a graph about to be written on this thread."""
        guards = sys.modules.get("torch._guards")
        context = getattr(guards, "CompileContext", None)
        current = getattr(context, "current_compile_id", None)
        compile_id = str(current()) if current is not None else None
        modules = self._ranges.stack.modules
        call = RootCall(modules[-1].name, modules[-1].is_root) if modules else None
        return compile_id, call

    def _mapped(self, module, sites, is_backward, context):
        key = module.__name__.rsplit(".", 1)[-1]  # the code-cache key of Inductor's file
        if is_backward is None:
            # Loaded from Inductor's cache: the map gpuattr kept when it saw the graph compile.
            saved = self._map_cache.load(key) if self._map_cache is not None else None
            if saved is None:
                self._ranges.nvtx.mark(UNMAPPED_MARK % key)
            else:
                sites, is_backward = saved
                context = self._context()
        elif self._map_cache is not None:
            try:
                self._map_cache.save(key, sites, is_backward)
            except OSError:
                pass  # the next run maps what it compiles; this one is mapped all the same
        compile_id, open_call = context if context else (None, None)
        if is_backward:
            root_call = self._roots.get(compile_id)
            include_root = True
        else:
            root_call = self._roots.setdefault(compile_id, open_call)
            include_root = root_call is None
        root_name_of_class = self._module_names.root_name_of_class
        calls = []
        for site in sites:
            entry = {"kernel": site.callee, "generated": site.generated, "phase": site.phase,
                     "modules": range_names(site.chain or [], root_call, include_root,
                                            root_name_of_class)}
            if site.modules and len(site.modules) > 1:
                entry["fused"] = range_names([(path, "") for path in site.modules], root_call,
                                             True, root_name_of_class)
            calls.append(entry)
        name = graph_range_name(key, is_backward)
        self._write({"format": MAP_FORMAT, "graph": key, "range": name, "calls": calls})
        module.call = self._in_range(module.call, name)

    def _write(self, line):
        if self._maps_path is None:
            return
        with open(self._maps_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, separators=(",", ":")) + "\n")

    def _in_range(self, call, name):
        guard = self._guard

        def call_in_graph_range(*args, **kwargs):
            return guard.call_in_range(lambda _: name, call, args, kwargs)

        return call_in_graph_range


class _InductorImportWatcher:
    """A meta-path finder that answers only for the modules the maps patch: it finds each one's
    real spec, and once the last of them finished loading (not merely began: one imports the
    other), installs the maps and removes itself."""

    def __init__(self, graphs):
        self._graphs = graphs
        self._loaded = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _WATCHED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module
        watcher = self

        def exec_then_install(module):
            original_exec(module)
            watcher._loaded.add(fullname)
            if watcher._loaded == set(_WATCHED) and watcher in sys.meta_path:
                sys.meta_path.remove(watcher)
                watcher._graphs.install_loaded()

        spec.loader.exec_module = exec_then_install
        return spec
