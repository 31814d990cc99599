# compiled_graphs: the compiled room at run time (docs/pytorch.md §Compiled models, issue 42).
#
# Four things, none of them inside compiled code:
#   - installs the kernel maps (compiled.py) once the program itself imported Inductor: a finder
#     on sys.meta_path waits for torch._inductor.codecache and torch._inductor.debug, so a program
#     that never compiles never loads Inductor because of gpuattr;
#   - writes each graph's map, the modules and phase of each call its wrapper makes, to one JSON
#     line of gpuattr's own file (GPUATTR_KERNEL_MAPS/<pid>.jsonl, format gpuattr.kernel_map/1),
#     never to the program's outputs or its compile cache;
#   - keeps each map in gpuattr's own cache (kernel_map_cache.py) for the runs that load the graph
#     from Inductor's cache; a graph loaded so with no map there is named by a mark;
#   - replaces the loaded wrapper's call with one that runs it inside a range naming the graph,
#     `torch.compile: <key> forward|backward` (key: the wrapper's code-cache key), so the
#     collector knows which map a launch's kernel name is looked up in;
#   - writes, once Inductor has set it up, the name torch.profiler gives each graph's calls
#     (Inductor's `## Call CompiledFxGraph <FX graph cache key> ##`), so that `gpuattr import
#     --kernel-maps` finds the maps of a profiled run's graphs.
#
# A call's modules are its FX nodes' module calls (their deepest common one's, outermost first) by
# qualified name from the compiled frame's root (''), which is named only when the graph runs:
# the same compiled code serves every instance of a module (each block of a model that compiles
# its blocks), so the collector names them below the innermost module range open around the
# graph's call (analysis/compiled_graph_join.h): the call of the module that compiled (its
# forward), the autograd node it made (its backward); with none open, the root is `root`, named by
# class as modules.py names roots.
# Runs on: the thread that imports Inductor (install), the compiling thread (maps), and any thread
# that calls a compiled graph (its range).
import json
import os
import sys
import threading

from . import compat, compiled

MAPS_ENV = "GPUATTR_KERNEL_MAPS"
MAP_FORMAT = "gpuattr.kernel_map/1"
GRAPH_RANGE_PREFIX = "torch.compile: "
PROFILER_RANGE = "## Call CompiledFxGraph %s ##"  # Inductor's record_function per graph call
_WATCHED = ("torch._inductor.codecache", "torch._inductor.debug")
UNMAPPED_MARK = ("gpuattr.pytorch: compiled graph %s has no kernel map: Inductor loaded it from "
                 "its cache, compiled before gpuattr saw it, and its launches stay on its range "
                 "(run once with TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 to map it)")


def map_line(key, range_name, sites, root_name_of_class):
    """The map of one graph as its line of the maps file (see the module's comment)."""
    calls = []
    for site in sites:
        call = {"kernel": site.callee, "generated": site.generated, "phase": site.phase,
                "modules": [qualified for qualified, _ in site.chain or []]}
        if site.modules and len(site.modules) > 1:
            call["fused"] = list(site.modules)
        calls.append(call)
    line = {"format": MAP_FORMAT, "graph": key, "range": range_name, "calls": calls}
    roots = [site.chain[0] for site in sites if site.chain and site.chain[0][0] == ""]
    if roots:
        line["root_class"] = roots[0][1]
        line["root"] = root_name_of_class(roots[0][1])
    return line


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
        self._write_lock = threading.Lock()  # two threads compiling write whole lines each
        self._range_of_key = {}  # wrapper key -> its graph's range name
        self.kernel_maps = compiled.KernelMaps(self._mapped)

    def install(self):
        """Installs the maps now if the program already imported Inductor, else once it does."""
        compat.after_import(_WATCHED, self.install_loaded)

    def install_loaded(self):
        """Installs the maps over the Inductor modules the program has loaded; an error leaves
        them uninstalled (kernel_maps.unavailable says why), never the program's import."""
        try:
            inductor = [module for name, module in list(sys.modules.items())
                        if name.startswith("torch._inductor") and module is not None]
            virtualized = sys.modules.get("torch._inductor.virtualized")
            self.kernel_maps.install(sys.modules[_WATCHED[1]], sys.modules[_WATCHED[0]],
                                     virtualized, inductor)
            if self.kernel_maps.unavailable is None:
                self._name_profiler_ranges(sys.modules.get("torch._inductor.output_code"))
        except Exception as error:  # noqa: BLE001 - never the program's problem
            self.kernel_maps.unavailable = "installing the maps failed: %r" % (error,)

    def _mapped(self, module, sites, is_backward):
        key = module.__name__.rsplit(".", 1)[-1]  # the code-cache key of Inductor's file
        if is_backward is None:
            # Loaded from Inductor's cache: the map gpuattr kept when it saw the graph compile.
            saved = self._map_cache.load(key) if self._map_cache is not None else None
            if saved is None:
                self._ranges.nvtx.mark(UNMAPPED_MARK % key)
            else:
                sites, is_backward = saved
        elif self._map_cache is not None:
            try:
                self._map_cache.save(key, sites, is_backward)
            except OSError:
                pass  # the next run maps what it compiles; this one is mapped all the same
        name = graph_range_name(key, is_backward)
        self._range_of_key[key] = name
        self._write(map_line(key, name, sites, self._module_names.root_name_of_class))
        module.call = self._in_range(module.call, name)

    def _name_profiler_ranges(self, output_code):
        """Has each CompiledFxGraph, once Inductor set it up (post_compile, after its wrapper
        loaded: compiled or from the cache), write the name torch.profiler gives its calls beside
        its graph's range. A torch whose graphs have no FX graph cache key writes none."""
        graph_class = getattr(output_code, "CompiledFxGraph", None)
        post_compile = getattr(graph_class, "post_compile", None)
        if post_compile is None:
            return
        graphs = self

        def post_compile_then_name(graph, *args, **kwargs):
            result = post_compile(graph, *args, **kwargs)
            try:
                graphs._name_profiler_range(getattr(graph, "cache_key", None),
                                            getattr(graph, "_fx_graph_cache_key", None))
            except Exception:  # noqa: BLE001 - never the program's problem
                pass
            return result

        graph_class.post_compile = post_compile_then_name

    def _name_profiler_range(self, key, fx_graph_key):
        name = self._range_of_key.get(key)
        if name is None or not isinstance(fx_graph_key, str) or not fx_graph_key:
            return  # not mapped, or no key to name it by (Inductor's caches off)
        self._write({"format": MAP_FORMAT, "graph": key, "range": name,
                     "profiler_range": PROFILER_RANGE % fx_graph_key})

    def _write(self, line):
        if self._maps_path is None:
            return
        text = json.dumps(line, separators=(",", ":")) + "\n"
        with self._write_lock, open(self._maps_path, "a", encoding="utf-8") as out:
            out.write(text)

    def _in_range(self, call, name):
        guard = self._guard

        def call_in_graph_range(*args, **kwargs):
            return guard.call_in_range(lambda _: name, call, args, kwargs)

        return call_in_graph_range
