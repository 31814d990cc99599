# Backward by module: each autograd node runs under the module path of the call that made it, a
# leaf's accumulator is `backward_unlinked`, nodes on another thread than the step's run inside
# the step, and without context ranges or node hooks nothing is claimed.
import collections
import threading
import types
import unittest

import torch

from core_for_tests import CORE, NO_CORE
from fake_nvtx import open_paths
from gpuattr_pytorch.backward import CLAIM_KEY, grad_nodes
from rooms import Rooms

_ROOT = "nn.Module: Sequential_0"


def _model():
    return torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())


def _leaf_paths(events):
    return {path for path in open_paths(events) if path[-1].startswith("backward")}


class GradNodesTest(unittest.TestCase):
    grad_nodes = staticmethod(grad_nodes)

    def test_tensors_in_lists_tuples_and_dicts_that_need_a_gradient(self):
        leaf = torch.ones(1, requires_grad=True)
        made = leaf * 2
        nested = [made, (made + 1, {"x": made - 1, "no grad": torch.ones(1)}), leaf]
        self.assertEqual([type(node).__name__ for node in self.grad_nodes(nested, torch.Tensor)],
                         ["MulBackward0", "AddBackward0", "SubBackward0"])

    def test_only_a_few_levels_deep(self):
        deep = leaf = torch.ones(1, requires_grad=True) * 2
        for _ in range(5):
            deep = [deep]
        self.assertEqual(self.grad_nodes(deep, torch.Tensor), [])
        self.assertEqual(len(self.grad_nodes(deep[0], torch.Tensor)), 1)
        self.assertIs(self.grad_nodes(leaf, torch.Tensor)[0], leaf.grad_fn)

    def test_subclasses_of_tuples_and_dicts_and_other_objects(self):
        made = torch.ones(1, requires_grad=True) * 3
        pair = types.SimpleNamespace(tensor=made)  # not walked: neither a container nor a tensor
        value = (torch.return_types.max((made + 1, made.long())),
                 collections.OrderedDict(a=made - 1, b=pair), "text", None, 3)
        self.assertEqual([type(node).__name__ for node in self.grad_nodes(value, torch.Tensor)],
                         ["AddBackward0", "SubBackward0"])

    def test_an_object_that_claims_the_tensor_class_counts_as_a_tensor(self):
        made = torch.ones(1, requires_grad=True) * 5

        class Claiming:  # isinstance(Claiming(), torch.Tensor) through __class__
            __class__ = torch.Tensor
            requires_grad = True
            grad_fn = made.grad_fn

        self.assertIsInstance(Claiming(), torch.Tensor)
        self.assertEqual(self.grad_nodes([Claiming(), 1.5, True], torch.Tensor), [made.grad_fn])
        # The core's fast isinstance assumes torch.Tensor's metaclass keeps type's check.
        self.assertNotIn("__instancecheck__", vars(type(torch.Tensor)))

    def test_what_a_property_raises_is_raised(self):
        class Broken(torch.Tensor):
            @property
            def requires_grad(self):
                raise RuntimeError("no flag")

        broken = torch.ones(1).as_subclass(Broken)
        with self.assertRaisesRegex(RuntimeError, "no flag"):
            self.grad_nodes([broken], torch.Tensor)


@unittest.skipUnless(CORE, NO_CORE)
class CoreGradNodesTest(GradNodesTest):
    """The same cases for the compiled core's grad_nodes."""

    grad_nodes = staticmethod(CORE.grad_nodes if CORE else None)


class ClaimsTest(unittest.TestCase):
    def setUp(self):
        self.rooms = Rooms()

    def tearDown(self):
        self.rooms.close()

    def test_each_node_runs_under_the_module_that_made_it(self):
        model = _model()
        loss = model(torch.ones(1, 2)).sum()
        self.rooms.nvtx.take()
        self.rooms.backward(loss)
        self.assertEqual(_leaf_paths(self.rooms.nvtx.events), {
            ("backward",),  # the sum, made by no module call
            (_ROOT, "nn.Module: 1", "backward"),
            (_ROOT, "nn.Module: 0", "backward"),
            ("backward_unlinked",)})  # the parameters' accumulators
        self.assertEqual(self.rooms.ranges.stack.names, [])
        self.assertEqual(self.rooms.ranges.stack.nodes, [])

    def test_a_node_claimed_by_a_nested_call_stays_with_it(self):
        model = _model()
        output = model(torch.ones(1, 2))
        relu, addmm = output.grad_fn, output.grad_fn.next_functions[0][0]
        # Calls are numbered as they start (Sequential, Linear, ReLU): each node keeps the
        # innermost call that made it, and the ReLU's claim stops at the Linear's output.
        self.assertLess(addmm.metadata[CLAIM_KEY][0], relu.metadata[CLAIM_KEY][0])
        self.assertEqual(relu.metadata[CLAIM_KEY][1], (addmm,))

    def test_nodes_on_another_thread_run_inside_the_step(self):
        model = _model()
        self.rooms.steps.optimizer_seen = True  # the step ends at optimizer.step(), not the call
        self.rooms.steps.open()
        loss = model(torch.ones(1, 2)).sum()
        self.rooms.nvtx.take()
        thread = threading.Thread(target=self.rooms.backward, args=(loss,))
        thread.start()
        thread.join()
        self.assertIn(("ProfilerStep#0", _ROOT, "nn.Module: 0", "backward"),
                      _leaf_paths(self.rooms.nvtx.events))
        self.rooms.steps.close()

    def test_a_node_hook_error_disables_the_annotator_and_backward_runs_on(self):
        model = _model()
        loss = model(torch.ones(1, 2)).sum()

        def failing_push(name):
            raise RuntimeError("push failed")

        self.rooms.nvtx.push_context = failing_push
        self.rooms.backward(loss)
        self.assertIsNotNone(model[0].weight.grad)
        self.assertFalse(self.rooms.guard.enabled)
        self.assertIn("gpuattr.pytorch: disabled: RuntimeError: push failed",
                      self.rooms.nvtx.marks())


class WithoutWhatClaimsNeedTest(unittest.TestCase):
    def test_without_context_ranges_nothing_is_claimed(self):
        rooms = Rooms(context_ranges=False)
        try:
            output = _model()(torch.ones(1, 2))
            self.assertFalse(rooms.claims.enabled)
            self.assertNotIn(CLAIM_KEY, output.grad_fn.metadata)
        finally:
            rooms.close()

    def test_nodes_without_prehooks_turn_it_off_with_a_mark(self):
        rooms = Rooms()
        try:
            rooms.claims.claim([types.SimpleNamespace()], 1, (), ("nn.Module: Net_0",))
            self.assertFalse(rooms.claims.enabled)
            self.assertEqual(len(rooms.nvtx.marks()), 1)
            self.assertIn("gpuattr.pytorch: backward by module off: ", rooms.nvtx.marks()[0])
        finally:
            rooms.close()


if __name__ == "__main__":
    unittest.main()
