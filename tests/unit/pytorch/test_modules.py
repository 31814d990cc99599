# Module calls: their range names, their nesting, the step a root call opens, and the boundary of
# what a call claims (its positional and, where torch passes them, keyword arguments).
import unittest

import torch

from fake_nvtx import open_paths
from gpuattr_pytorch.backward import CLAIM_KEY
from gpuattr_pytorch.modules import ModuleNames
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


class ModuleHooksTest(unittest.TestCase):
    def setUp(self):
        self.rooms = Rooms()

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

    def test_a_keyword_argument_bounds_the_claim_where_torch_passes_keywords(self):
        model = KeywordCaller()
        output = model(torch.ones(1, 2, requires_grad=True))
        relu_claim = output.grad_fn.metadata[CLAIM_KEY][0]
        mul_claim = model.scaled.grad_fn.metadata[CLAIM_KEY][0]
        # Calls are numbered as they start: the root first, then its block.
        if self.rooms.forward_hook.with_kwargs:
            self.assertLess(mul_claim, relu_claim)  # the root's op stays the root's
        else:
            self.assertEqual(mul_claim, relu_claim)  # torch 1.13: the block's walk takes it

    def test_a_call_that_raised_closes_its_range_where_torch_runs_hooks_always(self):
        model = torch.nn.Sequential(Raising())
        with self.assertRaises(ValueError):
            model(torch.ones(1))
        names = self.rooms.ranges.stack.names
        self.assertTrue(self.rooms.guard.enabled)  # torch calls it without kwargs then
        self.assertEqual(self.rooms.nvtx.marks(), [])
        if self.rooms.forward_hook.always_call:
            self.assertEqual(names, [])
        else:  # torch 1.13: open until the step closes
            self.assertEqual(names[1:], ["nn.Module: Sequential_0", "nn.Module: 0"])

    def test_loss_modules_are_known_while_they_run(self):
        seen = []

        class Probe(torch.nn.MSELoss):
            def forward(probe, a, b):
                seen.append(self.rooms.module_hooks.innermost_is_loss())
                return super().forward(a, b)

        Probe()(torch.ones(1), torch.zeros(1))
        self.assertEqual(seen, [True])
        self.assertFalse(self.rooms.module_hooks.innermost_is_loss())

    def test_no_boundary_without_grad(self):
        model = Block()
        with torch.no_grad():
            output = model(torch.ones(1, 2))
        self.assertIsNone(output.grad_fn)
        self.assertEqual(self.rooms.nvtx.pushed()[1:], ["nn.Module: Block_0",
                                                        "nn.Module: linear"])


if __name__ == "__main__":
    unittest.main()
