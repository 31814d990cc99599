# The compiled room at run time: a graph's map line in gpuattr's file, the range around each
# call of its wrapper, gpuattr's map cache for graphs loaded from Inductor's cache, and the
# install once the program imports Inductor.
import json
import os
import sys
import tempfile
import types
import unittest

from fake_nvtx import RecordingNvtx
from gpuattr_pytorch import compat, compiled, compiled_graphs, kernel_map_cache
from gpuattr_pytorch.modules import ModuleNames
from gpuattr_pytorch.ranges import Guard, Ranges

ROOT = ("", "Gpt")
BLOCK = ("blocks.0", "Block")
FC = ("blocks.0.fc", "Linear")


class RootNamesTest(unittest.TestCase):
    def test_a_root_named_earlier_keeps_its_name(self):
        names = ModuleNames()
        names.root_name(types.SimpleNamespace())  # a SimpleNamespace_0 first
        self.assertEqual(names.root_name_of_class("SimpleNamespace"),
                         "nn.Module: SimpleNamespace_0")
        self.assertEqual(names.root_name_of_class("Gpt"), "nn.Module: Gpt_0")


def _site(callee, generated, chain, phase, modules=None):
    site = compiled.CallSite(callee, generated, [])
    site.chain, site.phase, site.modules = chain, phase, modules or [chain[-1][0]]
    return site


class MappedGraphTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.nvtx = RecordingNvtx()
        ranges = Ranges(self.nvtx)
        self.graphs = compiled_graphs.CompiledGraphs(ranges, Guard(self.nvtx, ranges, None),
                                                     ModuleNames(), self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def lines(self):
        with open(os.path.join(self.dir.name, "%d.jsonl" % os.getpid())) as maps:
            return [json.loads(line) for line in maps]

    def test_forward_and_backward_maps_and_a_range_per_call(self):
        forward = types.ModuleType("torch._inductor.runtime.compile_tasks.cabc")
        forward.call = lambda args: list(reversed(args))
        sites = [_site("cpp_fused_gelu_0", True, [ROOT, BLOCK], compiled.FORWARD,
                       ["blocks.0.act", "blocks.0.ln"]),
                 _site("extern_kernels.addmm", False, [ROOT, BLOCK, FC], compiled.FORWARD),
                 compiled.CallSite("extern_kernels.mm", False, [])]  # matched nothing
        self.graphs._mapped(forward, sites, False)
        backward = types.ModuleType("cdef")
        backward.call = lambda args: args
        self.graphs._mapped(backward, [_site("extern_kernels.mm", False, [ROOT, BLOCK, FC],
                                             compiled.RECOMPUTE)], True)
        first, second = self.lines()
        self.assertEqual(first, {
            "format": "gpuattr.kernel_map/1", "graph": "cabc",
            "range": "torch.compile: cabc forward", "root_class": "Gpt",
            "root": "nn.Module: Gpt_0", "calls": [
                {"kernel": "cpp_fused_gelu_0", "generated": True, "phase": "forward",
                 "modules": ["", "blocks.0"], "fused": ["blocks.0.act", "blocks.0.ln"]},
                {"kernel": "extern_kernels.addmm", "generated": False, "phase": "forward",
                 "modules": ["", "blocks.0", "blocks.0.fc"]},
                {"kernel": "extern_kernels.mm", "generated": False, "phase": None,
                 "modules": []}]})
        self.assertEqual(second["range"], "torch.compile: cdef backward")
        self.assertEqual(second["calls"][0]["phase"], "recompute")
        # The wrapper's call runs inside its graph's range and returns what it returned.
        self.assertEqual(forward.call([1, 2]), [2, 1])
        self.assertEqual(self.nvtx.take(), [("push", "torch.compile: cabc forward"), ("pop",)])

    def test_a_graph_of_no_module_names_no_root(self):
        graph = types.ModuleType("cabc")
        graph.call = lambda args: args
        self.graphs._mapped(graph, [_site("k", True, [], compiled.FORWARD, [""])], False)
        line, = self.lines()
        self.assertNotIn("root", line)
        self.assertEqual(line["calls"][0]["modules"], [])

    def test_a_set_up_graph_is_named_as_torch_profiler_names_its_calls(self):
        class FakeCompiledFxGraph:  # Inductor's, as set up after its wrapper loaded
            def __init__(self, cache_key, fx_graph_cache_key):
                self.cache_key, self._fx_graph_cache_key = cache_key, fx_graph_cache_key

            def post_compile(self, *args):
                return ("set up", args)

        self.graphs._name_profiler_ranges(types.SimpleNamespace(
            CompiledFxGraph=FakeCompiledFxGraph))
        graph = types.ModuleType("cabc")
        graph.call = lambda args: args
        self.graphs._mapped(graph, [_site("k", True, [ROOT], compiled.FORWARD)], False)
        self.assertEqual(FakeCompiledFxGraph("cabc", "fkey").post_compile(1), ("set up", (1,)))
        FakeCompiledFxGraph("cabc", None).post_compile()  # Inductor's caches off: no key
        FakeCompiledFxGraph("unmapped", "fother").post_compile()
        _, named = self.lines()
        self.assertEqual(named, {"format": "gpuattr.kernel_map/1", "graph": "cabc",
                                 "range": "torch.compile: cabc forward",
                                 "profiler_range": "## Call CompiledFxGraph fkey ##"})


class KernelMapCacheTest(unittest.TestCase):
    def test_a_saved_map_loads_as_it_was_and_a_broken_one_is_none(self):
        with tempfile.TemporaryDirectory() as directory:
            cache = kernel_map_cache.KernelMapCache(os.path.join(directory, "maps"))
            self.assertIsNone(cache.load("cabc"))
            cache.save("cabc", [_site("k", True, [ROOT, FC], compiled.RECOMPUTE)], True)
            sites, is_backward = cache.load("cabc")
            self.assertTrue(is_backward)
            self.assertEqual([(s.callee, s.generated, s.chain, s.modules, s.phase)
                              for s in sites],
                             [("k", True, [ROOT, FC], ["blocks.0.fc"], compiled.RECOMPUTE)])
            with open(os.path.join(directory, "maps", "cabc.json"), "w") as broken:
                broken.write('{"format": "gpuattr.kernel_map_cache/1", "calls": [')
            self.assertIsNone(cache.load("cabc"))

    def test_the_directory_by_environment(self):
        self.assertEqual(kernel_map_cache.default_directory({"GPUATTR_KERNEL_MAP_CACHE": "/m"}),
                         "/m")
        self.assertEqual(kernel_map_cache.default_directory({"XDG_CACHE_HOME": "/c"}),
                         "/c/gpuattr/kernel-maps")


class CachedGraphTest(unittest.TestCase):
    """A wrapper Inductor loads from its cache has no kernels written: its map is the one gpuattr
    kept when the graph compiled, or a mark says it has none."""

    def test_a_graph_loaded_from_inductors_cache(self):
        with tempfile.TemporaryDirectory() as directory:
            cache = kernel_map_cache.KernelMapCache(directory)
            nvtx = RecordingNvtx()
            ranges = Ranges(nvtx)
            graphs = compiled_graphs.CompiledGraphs(ranges, Guard(nvtx, ranges, None),
                                                    ModuleNames(), directory, cache)
            compiled_once = types.ModuleType("cabc")
            compiled_once.call = lambda args: args
            graphs._mapped(compiled_once, [_site("k", True, [ROOT, FC], compiled.FORWARD)],
                           False)
            loaded = types.ModuleType("cabc")
            loaded.call = lambda args: args
            graphs._mapped(loaded, [compiled.CallSite("k", True, [])], None)
            never_seen = types.ModuleType("cdef")
            never_seen.call = lambda args: args
            graphs._mapped(never_seen, [compiled.CallSite("k", True, [])], None)
            with open(os.path.join(directory, "%d.jsonl" % os.getpid())) as maps:
                first, second, third = [json.loads(line) for line in maps]
            self.assertEqual(second, first)
            self.assertEqual(third["range"], "torch.compile: cdef")
            self.assertIsNone(third["calls"][0]["phase"])
            self.assertEqual(nvtx.marks(), [compiled_graphs.UNMAPPED_MARK % "cdef"])


class LazyInstallTest(unittest.TestCase):
    def test_installs_once_the_program_imported_inductor(self):
        import torch

        if not hasattr(torch, "compile"):
            self.skipTest("torch %s does not compile" % torch.__version__)
        nvtx = RecordingNvtx()
        ranges = Ranges(nvtx)
        graphs = compiled_graphs.CompiledGraphs(ranges, Guard(nvtx, ranges, None), ModuleNames(),
                                                None)
        already = all(name in sys.modules for name in compiled_graphs._WATCHED)
        graphs.install()
        if not already:
            self.assertEqual(graphs.kernel_maps.unavailable, "not installed")
            import torch._inductor.codecache  # noqa: F401 - the program's import
            import torch._inductor.debug  # noqa: F401
        self.assertIsNone(graphs.kernel_maps.unavailable)
        self.assertFalse(any(isinstance(finder, compat.ImportWatcher)
                             for finder in sys.meta_path))


if __name__ == "__main__":
    unittest.main()
