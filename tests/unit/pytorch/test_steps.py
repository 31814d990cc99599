# Steps: one ProfilerStep#N at a time, numbered in order, owned by the thread that opened it;
# autograd's other threads see the step's open ranges below its first module as their context.
import threading
import unittest

from fake_nvtx import RecordingNvtx
from gpuattr_pytorch.ranges import Ranges
from gpuattr_pytorch.steps import Steps


def _on_another_thread(function):
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


class StepsTest(unittest.TestCase):
    def setUp(self):
        self.nvtx = RecordingNvtx()
        self.ranges = Ranges(self.nvtx)
        self.steps = Steps(self.ranges)

    def test_steps_open_once_and_are_numbered_in_order(self):
        for _ in range(2):
            self.steps.open()
            self.steps.open()
            self.steps.close()
            self.steps.close()
        self.assertEqual(self.nvtx.take(), [("push", "ProfilerStep#0"), ("pop",),
                                            ("push", "ProfilerStep#1"), ("pop",)])
        self.assertEqual(self.steps.number, 2)

    def test_closing_a_step_closes_what_an_exception_left_open_inside_it(self):
        self.steps.open()
        self.ranges.push("nn.Module: Net_0")
        self.ranges.stack.modules.append("a module call that raised")
        self.steps.close()
        self.assertEqual(self.nvtx.take()[2:], [("pop",), ("pop",)])
        self.assertEqual(self.ranges.stack.names, [])
        self.assertEqual(self.ranges.stack.modules, [])

    def test_only_the_thread_that_opened_the_step_closes_it(self):
        self.steps.open()
        _on_another_thread(self.steps.close)
        self.assertTrue(self.steps.is_open)
        self.steps.close()
        self.assertFalse(self.steps.is_open)

    def test_other_threads_run_inside_the_steps_ranges_below_its_first_module(self):
        self.ranges.push("enumerate(DataLoader)#It.__next__")
        self.ranges.pop_to("enumerate(DataLoader)#It.__next__")
        self.steps.open()
        self.ranges.push("region")
        self.ranges.push("nn.Module: Net_0")
        self.ranges.push("nn.Module: layer")
        self.assertEqual(_on_another_thread(self.steps.off_thread_context),
                         ("ProfilerStep#0", "region"))
        self.assertEqual(self.steps.off_thread_context(), ())  # the step's own thread
        self.ranges.pop_to("nn.Module: Net_0")
        self.ranges.push("backward")
        self.assertEqual(_on_another_thread(self.steps.off_thread_context),
                         ("ProfilerStep#0", "region"))

    def test_no_context_when_no_step_is_open(self):
        self.assertEqual(_on_another_thread(self.steps.off_thread_context), ())

    def test_root_calls_open_no_step_while_backward_runs(self):
        self.assertTrue(self.steps.may_open_at_root_call())
        self.steps.enter_backward()
        self.steps.enter_backward()
        self.steps.leave_backward()
        self.assertTrue(self.steps.in_backward())
        self.assertFalse(self.steps.may_open_at_root_call())
        self.steps.leave_backward()
        self.assertFalse(self.steps.in_backward())


if __name__ == "__main__":
    unittest.main()
