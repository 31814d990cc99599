# The op mode: aten ops in ranges named as torch.profiler names them, FLOP and byte marks from
# inside them, and flop_counter's refusals.
import json
import os
import tempfile
import threading
import unittest
from unittest import mock

import torch
from torch.utils.checkpoint import checkpoint

import gpuattr_pytorch

from fake_nvtx import RecordingNvtx
from gpuattr_pytorch import compat, flops
from gpuattr_pytorch.op_mode import (BYTES_DOMAIN, FLOPS_DOMAIN, OPS_DOMAIN, OpMode,
                                     flop_counter)
from gpuattr_pytorch.ranges import Guard, Ranges


class _FixedCounter:
    """Counts every op the same: (COUNTED, 7, 9, "float32") for aten::mm, FREE otherwise."""

    def count(self, func, op, args, kwargs, result):
        return (flops.COUNTED, 7, 9, "float32") if op == "aten::mm" else (flops.FREE,)


class OpModeTest(unittest.TestCase):
    def _run_mm(self, op_ranges, counter):
        nvtx = RecordingNvtx()
        ranges = Ranges(nvtx)
        op_mode = OpMode(torch, ranges, Guard(nvtx, ranges, None), op_ranges, counter)
        a, b = torch.ones(2, 2), torch.ones(2, 2)
        op_mode.enter()
        op_mode.enter()  # once per thread
        try:
            torch.mm(a, b).t()
        finally:
            op_mode.mode.__exit__(None, None, None)
        self.assertFalse(ranges.stack.in_op_mode)
        return nvtx.take()

    def test_op_ranges_are_named_as_torch_profiler_names_them(self):
        events = self._run_mm(True, None)
        self.assertEqual(events, [("push", "aten::mm"), ("pop",), ("push", "aten::t"), ("pop",)])

    def test_counted_ops_send_flops_and_bytes_from_inside_their_range(self):
        events = self._run_mm(True, _FixedCounter())
        self.assertEqual(events, [
            ("push", "aten::mm"),
            ("domain_mark", FLOPS_DOMAIN, "aten::mm float32", 7),
            ("domain_mark", BYTES_DOMAIN, "aten::mm float32", 9),
            ("pop",),
            ("push", "aten::t"),
            ("domain_mark", OPS_DOMAIN, "free aten::t", 1),
            ("pop",)])

    def test_counting_without_op_ranges(self):
        events = self._run_mm(False, _FixedCounter())
        self.assertEqual([event[0] for event in events], ["domain_mark"] * 3)


class ThreadScopeTest(unittest.TestCase):
    def test_a_thread_other_than_the_main_one_leaves_the_mode_when_its_call_returns(self):
        nvtx = RecordingNvtx()
        ranges = Ranges(nvtx)
        op_mode = OpMode(torch, ranges, Guard(nvtx, ranges, None), True, None)
        a = torch.ones(2, 2)
        seen = []

        def worker():
            op_mode.enter()
            torch.mm(a, a)
            op_mode.leave_if_scoped()
            torch.mm(a, a)  # after the call: no range
            seen.append(ranges.stack.op_mode_entered)

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        self.assertEqual(seen, [False])
        self.assertEqual(nvtx.pushed(), ["aten::mm"])

    def test_a_thread_running_a_reentrant_checkpoint_leaves_the_mode_stack_as_it_found_it(self):
        # Autograd gives a node back the modes it started with when the node returns: a mode left
        # inside one (at the recompute's outermost module call, or its inner backward's end)
        # came back, and the program's own `with` exit then popped ours in place of its mode,
        # which stayed in the thread's C++ state (an abort at exit, under torch 1.13).
        nvtx = RecordingNvtx()
        annotator = gpuattr_pytorch.Annotator(torch, nvtx, op_ranges=True)
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        x = torch.ones(3, 2, requires_grad=True)
        depths = []

        class ProgramMode(compat.dispatch_mode_base(torch)[0]):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        def worker():
            with ProgramMode():
                loss = checkpoint(model, x, use_reentrant=True).sum()
                loss.backward()
            depths.append(torch._C._len_torch_dispatch_stack())

        with mock.patch.object(torch.Tensor, "backward", torch.Tensor.backward), \
                mock.patch.object(torch.autograd, "backward", torch.autograd.backward):
            annotator.module_calls.install()
            annotator.patches.wrap_backward()
            try:
                thread = threading.Thread(target=worker)
                thread.start()
                thread.join()
            finally:
                for handle in annotator.guard.handles:
                    handle.remove()
        self.assertEqual(depths, [0])
        self.assertEqual(nvtx.marks(), [])  # nothing disabled the annotator
        self.assertIn("aten::addmm", nvtx.pushed())  # the mode was on for the thread's calls

    def test_the_main_thread_keeps_it(self):
        nvtx = RecordingNvtx()
        ranges = Ranges(nvtx)
        op_mode = OpMode(torch, ranges, Guard(nvtx, ranges, None), True, None)
        op_mode.enter()
        try:
            op_mode.leave_if_scoped()
            self.assertTrue(ranges.stack.op_mode_entered)
        finally:
            op_mode.mode.__exit__(None, None, None)
            ranges.stack.op_mode_entered = False


class FlopCounterTest(unittest.TestCase):
    def test_none_unless_asked_for(self):
        nvtx = RecordingNvtx()
        self.assertIsNone(flop_counter(torch, nvtx, environ={}))
        self.assertEqual(nvtx.take(), [])

    def test_counting_says_its_rules(self):
        nvtx = RecordingNvtx()
        counter = flop_counter(torch, nvtx, environ={"GPUATTR_FLOPS": "1"})
        self.assertIsNotNone(counter)
        self.assertEqual(nvtx.marks(), ["gpuattr.flops: counting (%s)" % counter.description])
        self.assertIn("flop_rules.json", counter.description)

    def test_off_without_domain_marks(self):
        nvtx = RecordingNvtx(domain_marks=False)
        self.assertIsNone(flop_counter(torch, nvtx, environ={"GPUATTR_FLOPS": "1"}))
        self.assertEqual(nvtx.marks(), ["gpuattr.flops: off: its marks need NVTX domains, and "
                                        "libnvtx3interop could not be loaded"])

    def test_off_with_a_rule_file_that_cannot_be_used(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "rules.json")
            with open(path, "w") as file:
                json.dump({"format": "something else"}, file)
            nvtx = RecordingNvtx()
            environ = {"GPUATTR_FLOPS": "1", "GPUATTR_FLOP_RULES": path}
            self.assertIsNone(flop_counter(torch, nvtx, environ=environ))
        self.assertEqual(nvtx.marks(), ["gpuattr.flops: off: a rule file cannot be used: %s: "
                                        "not a %s file" % (path, flops.RULES_FORMAT)])

    def test_this_torch_has_the_dispatch_modes_counting_needs(self):
        self.assertIsNone(compat.dispatch_mode_base(torch)[1])


if __name__ == "__main__":
    unittest.main()
