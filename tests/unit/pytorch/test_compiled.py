# The compiled room: a wrapper's call sites from its source, module paths from dynamo's names,
# and, on a torch that compiles, the map of a real two-block model's forward and backward graphs.
import contextlib
import sys
import unittest

import torch

import simgpu_compiled  # tests/simgpu/python, on PYTHONPATH
from gpuattr_pytorch import compiled

_CPU_WRAPPER = '''
async_compile = AsyncCompile()
cpp_fused_gelu_1 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""...""")
cpp_fused_add_2 = async_compile.cpp_pybinding(['float*'], r"""...""")
class Runner:
    def call(self, args):
        primals_1, primals_2 = args
        buf0 = empty_strided_cpu((4, 32), (32, 1), torch.float32)
        extern_kernels.addmm(primals_2, primals_1, reinterpret_tensor(primals_1, (1,)), out=buf0)
        buf1 = empty_strided_cpu((4, 32), (32, 1), torch.float32)
        cpp_fused_gelu_1(buf0, buf1)
        buf2 = empty_strided_cpu((4, 32), (32, 1), torch.float32)
        cpp_fused_gelu_1(buf1, buf2)
        buf3 = torch.ops.aten.native_dropout.default(buf2, 0.1, True)
        cpp_fused_add_2(buf3)
        return (buf3, )
'''

_TRITON_WRAPPER = '''
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', """...""")
def call(args):
    arg0_1, = args
    with torch.cuda._DeviceGuard(0):
        buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_0.run(arg0_1, buf0, 4, stream=stream0)
    return (buf0, )
'''


class WrapperCallSitesTest(unittest.TestCase):
    def test_cpu_wrapper_in_call_order_with_their_buffers(self):
        sites = compiled.wrapper_call_sites(_CPU_WRAPPER)
        self.assertEqual([(s.callee, s.generated) for s in sites], [
            ("extern_kernels.addmm", False), ("cpp_fused_gelu_1", True),
            ("cpp_fused_gelu_1", True), ("torch.ops.aten.native_dropout.default", False),
            ("cpp_fused_add_2", True)])
        self.assertIn("buf0", sites[0].buffers)  # out=buf0
        self.assertEqual(sites[1].buffers, ["buf0", "buf1"])
        self.assertEqual(sites[3].buffers, ["buf2", "buf3"])  # its argument, and its target
        self.assertTrue(all(site.modules is None for site in sites))  # nothing matched yet

    def test_triton_kernels_are_called_through_run(self):
        sites = compiled.wrapper_call_sites(_TRITON_WRAPPER)
        self.assertEqual([(s.callee, s.generated) for s in sites],
                         [("triton_poi_fused_add_0", True)])
        self.assertEqual(sites[0].buffers[:2], ["arg0_1", "buf0"])

    def test_a_module_without_call_has_none(self):
        self.assertEqual(compiled.wrapper_call_sites("x = 1\n"), [])


class MatchTest(unittest.TestCase):
    def test_a_recurring_kernel_is_matched_by_its_buffers_not_its_order(self):
        sites = compiled.wrapper_call_sites(_CPU_WRAPPER)
        written = [compiled.WrittenKernel("cpp_fused_gelu_1", {"buf2"}, ["blocks.1.act"],
                                          compiled.FORWARD),
                   compiled.WrittenKernel("cpp_fused_gelu_1", {"buf1"}, ["blocks.0.act"],
                                          compiled.FORWARD),
                   compiled.WrittenKernel("extern_kernels.addmm", {"buf0"}, ["blocks.0.fc"],
                                          compiled.FORWARD)]
        compiled.match(sites, written)
        self.assertEqual([site.modules for site in sites[:3]],
                         [["blocks.0.fc"], ["blocks.0.act"], ["blocks.1.act"]])
        self.assertIsNone(sites[3].modules)  # no kernel was written for it: never guessed
        self.assertIsNone(sites[4].modules)


class ModulePathTest(unittest.TestCase):
    def test_dynamo_source_names(self):
        def stack(*sources):
            return {str(i): (source, object) for i, source in enumerate(sources)}

        self.assertEqual(compiled.module_path(stack("L['self']", "L['self'].blocks[0]",
                                                    "L['self'].blocks[0].attn")),
                         "blocks.0.attn")
        self.assertEqual(compiled.module_path(stack("L['model'].head")), "head")
        self.assertEqual(compiled.module_path(stack("L['self'].layers['attn'].q")), "layers.attn.q")
        self.assertEqual(compiled.module_path(stack("L['self']")), "")
        self.assertIsNone(compiled.module_path(None))
        self.assertIsNone(compiled.module_path({}))


class _Node:
    """An FX node as describe_origins reads it."""

    def __init__(self, op_name, stack, backward=False, fwd_stack=None):
        self.op = "call_function"
        self.target = getattr(torch.ops.aten, op_name).default
        self.meta = {"nn_module_stack": stack}
        if backward:
            self.meta["partitioner_tag"] = "is_backward"
            self.meta["fwd_nn_module_stack"] = fwd_stack


def _stack(*sources):
    return {str(i): (source, "torch.nn.Linear") for i, source in enumerate(sources)}


class DescribeOriginsTest(unittest.TestCase):
    FC = _stack("L['self']", "L['self'].fc")
    ACT = _stack("L['self']", "L['self'].act")

    def test_views_launch_nothing_and_an_extern_kernel_is_its_op(self):
        origins = [_Node("view", self.FC), _Node("gelu", self.ACT)]
        modules, chain, phase = compiled.describe_origins(origins, False)
        self.assertEqual((modules, [name for name, _ in chain], phase), (["act"], ["", "act"],
                                                                         compiled.FORWARD))
        origins = [_Node("addmm", self.FC), _Node("view", self.ACT)]
        modules, chain, _ = compiled.describe_origins(origins, False, extern_op="addmm")
        self.assertEqual(modules, ["fc"])
        self.assertEqual(chain[-1], ("fc", "Linear"))

    def test_a_fused_kernel_is_its_modules_deepest_common_one(self):
        origins = [_Node("add", self.FC), _Node("gelu", self.ACT), _Node("mul", {})]
        modules, chain, _ = compiled.describe_origins(origins, False)
        self.assertEqual(modules, ["act", "fc"])
        self.assertEqual([name for name, _ in chain], [""])  # a node of no module says nothing

    def test_phases_by_graph_and_partitioner_tag(self):
        moved = _Node("mul", {}, backward=True, fwd_stack=self.FC)
        self.assertEqual(compiled.describe_origins([moved], False)[2], compiled.FORWARD)
        self.assertEqual(compiled.describe_origins([moved], True)[0], ["fc"])
        self.assertEqual(compiled.describe_origins([moved], True)[2], compiled.BACKWARD)
        recomputed = _Node("gelu", self.ACT)
        self.assertEqual(compiled.describe_origins([recomputed], True)[2], compiled.RECOMPUTE)
        self.assertIsNone(compiled.describe_origins([], True)[2])


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 32)
        self.act = torch.nn.GELU()
        self.proj = torch.nn.Linear(32, 16)

    def forward(self, x):
        return x + self.proj(self.act(self.fc(self.ln(x))))


@unittest.skipUnless(hasattr(torch, "compile"), "torch %s does not compile" % torch.__version__)
class CompiledModelTest(unittest.TestCase):
    def test_the_forward_and_backward_graphs_of_two_blocks(self):
        import torch._inductor.codecache
        import torch._inductor.debug
        import torch._inductor.virtualized

        maps = compiled.KernelMaps()
        loaded = [module for name, module in list(sys.modules.items())
                  if name.startswith("torch._inductor") and module is not None]
        maps.install(torch._inductor.debug, torch._inductor.codecache,
                     torch._inductor.virtualized, loaded)
        self.assertIsNone(maps.unavailable)
        # The simulated GPU's hook (tests/simgpu/python) records each generated kernel's call as
        # the wrapper makes it, through a parse of its own.
        called = []
        simgpu_compiled.HookedWrappers(lambda work: called.append(work.name),
                                       contextlib.nullcontext)
        torch._dynamo.reset()
        model = torch.nn.Sequential(_Block(), _Block())
        with torch._inductor.config.patch(force_disable_caches=True):
            compiled_model = torch.compile(model)
            compiled_model(torch.randn(4, 16, requires_grad=True)).sum().backward()
        self.assertIsNone(maps.unavailable)
        self.assertEqual(len(maps.maps), 2)
        forward, backward = maps.maps.values()
        for sites in (forward, backward):
            unmatched = [site for site in sites if site.modules is None]
            self.assertEqual(unmatched, [])
        # Forward: each Linear's GEMM is its own module's; the two GELUs share one kernel, each
        # call with its own block's module.
        gemms = [site.modules for site in forward if site.callee == "extern_kernels.addmm"]
        self.assertEqual(gemms, [["0.fc"], ["0.proj"], ["1.fc"], ["1.proj"]])
        gelus = [site.modules for site in forward if "gelu" in site.callee]
        self.assertEqual(gelus, [["0.act"], ["1.act"]])
        self.assertEqual({site.phase for site in forward}, {compiled.FORWARD})
        # Backward: every call is backward, by the module of the forward node it differentiates.
        self.assertEqual({site.phase for site in backward}, {compiled.BACKWARD})
        weight_gradients = {tuple(site.modules) for site in backward
                            if site.callee == "extern_kernels.mm"}
        self.assertLessEqual({("0.fc",), ("0.proj",), ("1.fc",), ("1.proj",)},
                             weight_gradients)
        # The map's order is the order the wrappers call their kernels in: the forward wrapper,
        # loaded and called first, then the backward one.
        self.assertEqual([site.callee for sites in maps.maps.values() for site in sites
                          if site.generated], called)


if __name__ == "__main__":
    unittest.main()
