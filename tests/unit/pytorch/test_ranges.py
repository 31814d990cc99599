# Each thread's open ranges, and the guard: what an exception leaves open is closed, the first
# error of a hook disables the annotator for good and names itself, and a wrapped call behaves
# exactly as before.
import threading
import unittest

from core_for_tests import CORE, NO_CORE
from fake_nvtx import RecordingNvtx
from gpuattr_pytorch.ranges import Guard, Ranges, make_ranges


class _Handle:
    def __init__(self):
        self.removed = False

    def remove(self):
        self.removed = True


class RangesTest(unittest.TestCase):
    core = None

    def setUp(self):
        self.nvtx = RecordingNvtx()
        self.ranges = make_ranges(self.nvtx, self.core)

    def test_calls_that_nest_pop_one_range_each(self):
        self.ranges.push("a")
        self.ranges.push("b")
        self.ranges.pop_to("b")
        self.ranges.pop_to("a")
        self.assertEqual(self.nvtx.take(), [("push", "a"), ("push", "b"), ("pop",), ("pop",)])
        self.assertEqual(self.ranges.stack.names, [])

    def test_popping_to_an_outer_range_closes_what_an_exception_left_above_it(self):
        for name in ("step", "module", "left open"):
            self.ranges.push(name)
        self.ranges.pop_to("module")
        self.assertEqual(self.ranges.stack.names, ["step"])
        self.assertEqual(self.nvtx.take()[3:], [("pop",), ("pop",)])

    def test_a_name_that_is_not_open_pops_nothing(self):
        self.ranges.push("a")
        self.ranges.pop_to("b")
        self.assertEqual(self.ranges.stack.names, ["a"])
        self.assertEqual(self.nvtx.take(), [("push", "a")])

    def test_each_thread_has_its_own_stack(self):
        self.ranges.push("main")
        seen = []
        thread = threading.Thread(target=lambda: seen.append(list(self.ranges.stack.names)))
        thread.start()
        thread.join()
        self.assertEqual(seen, [[]])


    def test_it_has_the_binding_and_the_stack(self):
        self.assertIs(self.ranges.nvtx, self.nvtx)
        self.ranges.push("a")
        self.assertEqual(self.ranges.stack.names, ["a"])

    def test_an_error_of_the_binding_is_raised_with_the_name_kept(self):
        def failing_pop():
            raise ValueError("pop failed")

        self.nvtx.pop = failing_pop
        self.ranges.push("a")
        with self.assertRaisesRegex(ValueError, "pop failed"):
            self.ranges.pop_to("a")
        self.assertEqual(self.ranges.stack.names, [])


@unittest.skipUnless(CORE, NO_CORE)
class CoreRangesTest(RangesTest):
    """The same cases for the compiled core's Ranges."""

    core = CORE

    def test_it_is_the_cores(self):
        self.assertIsInstance(self.ranges, CORE.Ranges)
        self.assertNotIsInstance(self.ranges, Ranges)


class GuardTest(unittest.TestCase):
    def setUp(self):
        self.nvtx = RecordingNvtx()
        self.ranges = Ranges(self.nvtx)
        self.compiling = False
        self.guard = Guard(self.nvtx, self.ranges, lambda: self.compiling)

    def test_a_hooks_first_error_disables_it_removes_the_hooks_and_is_named(self):
        handle = _Handle()
        self.guard.handles.append(handle)
        calls = []

        def hook(value):
            calls.append(value)
            raise ValueError("bad %d" % value)

        guarded = self.guard.guarded(hook)
        self.assertIsNone(guarded(1))
        self.assertIsNone(guarded(2))
        self.assertEqual(calls, [1])
        self.assertFalse(self.guard.enabled)
        self.assertTrue(handle.removed)
        self.assertEqual(self.nvtx.marks(), ["gpuattr.pytorch: disabled: ValueError: bad 1"])

    def test_nothing_runs_while_torch_compile_traces(self):
        calls = []
        guarded = self.guard.guarded(calls.append)
        self.compiling = True
        guarded("traced")
        self.assertFalse(self.guard.may_emit())
        self.compiling = False
        guarded("eager")
        self.assertEqual(calls, ["eager"])
        self.assertTrue(self.guard.may_emit())

    def test_a_wrapped_call_returns_its_result_inside_its_range(self):
        def add(a, b=0):
            self.assertEqual(self.ranges.stack.names, ["add"])
            return a + b

        wrapped = self.guard.around(lambda function: function.__name__, add)
        self.assertEqual(wrapped(1, b=2), 3)
        self.assertEqual(wrapped.__name__, "add")
        self.assertEqual(self.nvtx.take(), [("push", "add"), ("pop",)])

    def test_a_wrapped_call_that_raises_closes_its_range_and_raises_the_same(self):
        error = KeyError("the program's")

        def fail():
            self.ranges.push("left open by the exception")
            raise error

        with self.assertRaises(KeyError) as raised:
            self.guard.around(lambda function: "fail", fail)()
        self.assertIs(raised.exception, error)
        self.assertEqual(self.ranges.stack.names, [])
        self.assertTrue(self.guard.enabled)

    def test_an_error_naming_the_range_disables_but_the_call_runs(self):
        def name_of(function):
            raise RuntimeError("naming")

        self.assertEqual(self.guard.around(name_of, lambda: "ran")(), "ran")
        self.assertFalse(self.guard.enabled)
        self.assertEqual(self.nvtx.pushed(), [])
        self.assertEqual(self.nvtx.marks(), ["gpuattr.pytorch: disabled: RuntimeError: naming"])

    def test_no_range_when_the_name_is_none(self):
        self.assertEqual(self.guard.around(lambda function: None, lambda: 5)(), 5)
        self.assertEqual(self.nvtx.take(), [])

    def test_inside_runs_in_the_range_after_a_call_that_returned(self):
        seen = []

        def inside(function, args, kwargs, result):
            seen.append((list(self.ranges.stack.names), args, kwargs, result))

        self.guard.call_in_range(lambda function: "op", max, (1, 4), {}, inside=inside)
        self.assertEqual(seen, [(["op"], (1, 4), {}, 4)])


if __name__ == "__main__":
    unittest.main()
