# Module calls: their range names, their nesting, the step a root call opens, and the boundary of
# what a call claims (its positional and keyword arguments); over the pure-Python path and the
# compiled core's ModuleCalls.
import unittest

import torch

from fake_nvtx import open_paths
from gpuattr_pytorch.backward import CLAIM_KEY
from gpuattr_pytorch.modules import ModuleNames
from core_for_tests import CORE, NO_CORE
from rooms import Rooms


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, hidden):
        return self.linear(hidden).relu()


class KeywordCaller(torch.nn.Module):
    """Calls its block with a keyword argument made by an op of its own (the mul)."""

    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        self.scaled = x * 2
        return self.block(hidden=self.scaled)


class Raising(torch.nn.Module):
    def forward(self, x):
        raise ValueError("the program's own error")


class ModuleNamesTest(unittest.TestCase):
    def test_roots_by_class_and_number_submodules_by_qualified_name(self):
        names = ModuleNames()
        first, second = KeywordCaller(), KeywordCaller()
        self.assertEqual(names.root_name(first), "nn.Module: KeywordCaller_0")
        self.assertEqual(names.root_name(second), "nn.Module: KeywordCaller_1")
        self.assertEqual(names.root_name(first), "nn.Module: KeywordCaller_0")
        self.assertIsNone(names.submodule_name(first, []))
        self.assertEqual(names.submodule_name(first.block.linear, [first]),
                         "nn.Module: block.linear")
        # With no root call open (a checkpoint's recompute): the name under its last root.
        self.assertEqual(names.submodule_name(first.block.linear, []), "nn.Module: block.linear")
        self.assertIsNone(names.submodule_name(torch.nn.ReLU(), [first]))


class ModuleCallsTest(unittest.TestCase):
    core = None  # the pure-Python path

    def setUp(self):
        self.original_call = torch.nn.Module.__call__
        self.rooms = Rooms(core=self.core)

    def tearDown(self):
        self.rooms.close()

    def test_calls_nest_under_the_step_their_root_call_opened(self):
        model = torch.nn.Sequential(Block(), torch.nn.ReLU())
        model(torch.ones(1, 2))
        self.assertEqual(open_paths(self.rooms.nvtx.events), [
            ("ProfilerStep#0",),
            ("ProfilerStep#0", "nn.Module: Sequential_0"),
            ("ProfilerStep#0", "nn.Module: Sequential_0", "nn.Module: 0"),
            ("ProfilerStep#0", "nn.Module: Sequential_0", "nn.Module: 0", "nn.Module: 0.linear"),
            ("ProfilerStep#0", "nn.Module: Sequential_0", "nn.Module: 1")])
        # No optimizer in this process: the root call's return ended the step.
        self.assertEqual(self.rooms.ranges.stack.names, [])
        self.assertEqual(self.rooms.steps.number, 1)

    def test_a_keyword_argument_bounds_the_claim(self):
        model = KeywordCaller()
        output = model(torch.ones(1, 2, requires_grad=True))
        relu_claim = output.grad_fn.metadata[CLAIM_KEY][0]
        mul_claim = model.scaled.grad_fn.metadata[CLAIM_KEY][0]
        # Calls are numbered as they start: the root first, then its block. The root's op stays
        # the root's.
        self.assertLess(mul_claim, relu_claim)
        self.assertEqual(open_paths(self.rooms.nvtx.events)[-1],
                         ("ProfilerStep#0", "nn.Module: KeywordCaller_0", "nn.Module: block",
                          "nn.Module: block.linear"))

    def test_a_call_that_raised_closes_its_range_and_the_error_is_the_programs(self):
        model = torch.nn.Sequential(torch.nn.Identity(), Raising())
        for _ in range(2):  # the first call names the submodules, the second finds them named
            with self.assertRaisesRegex(ValueError, "the program's own error"):
                model(torch.ones(1))
            self.assertEqual(self.rooms.ranges.stack.names, [])
            self.assertEqual(self.rooms.ranges.stack.modules, [])
        self.assertTrue(self.rooms.guard.enabled)
        self.assertEqual(self.rooms.nvtx.marks(), [])
        self.assertEqual(self.rooms.steps.number, 2)
        self.assertEqual(self.rooms.nvtx.pushed()[-3:], [
            "nn.Module: Sequential_0", "nn.Module: 0", "nn.Module: 1"])

    def test_the_calls_results_are_the_programs(self):
        model = KeywordCaller()
        x = torch.ones(1, 2)
        with_annotator = model(x)
        self.rooms.close()
        self.assertIs(torch.nn.Module.__call__, self.original_call)
        self.assertTrue(torch.equal(with_annotator, model(x)))

    def test_loss_modules_are_known_while_they_run(self):
        seen = []

        class Probe(torch.nn.MSELoss):
            def forward(probe, a, b):
                seen.append(self.rooms.module_calls.innermost_is_loss())
                return super().forward(a, b)

        Probe()(torch.ones(1), torch.zeros(1))
        self.assertEqual(seen, [True])
        self.assertFalse(self.rooms.module_calls.innermost_is_loss())

    def test_an_error_of_the_annotator_disables_it_and_the_call_runs(self):
        model = Block()
        model(torch.ones(1, 2))

        def failing_push(name):
            raise RuntimeError("the annotator's own error")

        self.rooms.nvtx.push = failing_push
        output = model(torch.ones(1, 2))
        self.assertEqual(output.shape, (1, 2))
        self.assertFalse(self.rooms.guard.enabled)
        self.assertEqual(self.rooms.nvtx.marks(), [
            "gpuattr.pytorch: disabled: RuntimeError: the annotator's own error"])
        self.assertIs(torch.nn.Module.__call__, self.original_call)  # torch's, put back

    @unittest.skipUnless(hasattr(torch, "compile"), "this torch does not compile")
    def test_a_compiled_region_runs_its_module_calls_unseen(self):
        model = torch.nn.Sequential(Block())
        compiled = torch.compile(model, backend="eager")
        for _ in range(2):
            output = compiled(torch.ones(1, 2))
        self.assertTrue(torch.equal(output, model(torch.ones(1, 2))))
        # The wrapper's call is the root's range; inside the region nothing is (its graphs are
        # named by their kernel maps), then the eager call again has every range.
        self.assertEqual(self.rooms.nvtx.pushed(), [
            "ProfilerStep#0", "nn.Module: Sequential_0", "ProfilerStep#1",
            "nn.Module: Sequential_0", "ProfilerStep#2", "nn.Module: Sequential_1",
            "nn.Module: 0", "nn.Module: 0.linear"])
        self.assertEqual(self.rooms.nvtx.marks(), [])

    def test_no_boundary_without_grad(self):
        model = Block()
        with torch.no_grad():
            output = model(torch.ones(1, 2))
        self.assertIsNone(output.grad_fn)
        self.assertEqual(self.rooms.nvtx.pushed()[1:], ["nn.Module: Block_0",
                                                        "nn.Module: linear"])


@unittest.skipIf(CORE is None, NO_CORE)
class CoreModuleCallsTest(ModuleCallsTest):
    """The same cases over the compiled core's ModuleCalls (submodule calls in C)."""

    core = CORE


if __name__ == "__main__":
    unittest.main()
