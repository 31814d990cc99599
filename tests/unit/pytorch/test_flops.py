# The FLOP counter: rule expressions are checked before they run, and counts are the analytic
# ones on the shapes that really ran.
import unittest

import torch

from gpuattr_pytorch import flops


class _Op:
    """An aten op as the counter sees it: its packet (none in torch's registry) and name."""
    _overloadpacket = None


class RuleExpressionTest(unittest.TestCase):
    def test_arithmetic_over_arguments_and_helpers_compiles(self):
        code = flops.compile_expression("2 * prod(a0) * a1[-1]", "test")
        self.assertEqual(eval(code, {"prod": lambda shape: 6, "__builtins__": {}},
                              {"a0": (2, 3), "a1": (3, 4)}), 48)

    def test_what_a_rule_may_not_do_is_refused_with_the_place(self):
        for text, why in (("__import__('os')", "only "), ("a0.__class__", ".numel"),
                          ("lambda: 1", "Lambda is not allowed"), ("1 +", "test.flops")):
            with self.assertRaises(flops.RuleFileError) as raised:
                flops.compile_expression(text, "test.flops")
            self.assertIn(why, str(raised.exception))
        with self.assertRaises(flops.RuleFileError):
            flops.compile_expression(3, "test.flops")


class CounterTest(unittest.TestCase):
    def setUp(self):
        self.counter = flops.load_counter(torch)

    def test_a_matrix_product_is_two_flops_per_multiply_add(self):
        a, b = torch.ones(4, 3), torch.ones(3, 5)
        result = torch.mm(a, b)
        counted = self.counter.count(torch.ops.aten.mm.default, "aten::mm", (a, b), {}, result)
        self.assertEqual(counted[0], flops.COUNTED)
        self.assertEqual(counted[1], 2 * 4 * 3 * 5)
        self.assertEqual(counted[2], (4 * 3 + 3 * 5 + 4 * 5) * 4)  # read once, written once
        self.assertEqual(counted[3], "float32")

    def test_views_are_free_and_an_op_without_a_rule_is_unknown(self):
        a = torch.ones(2, 2)
        self.assertEqual(self.counter.count(_Op(), "aten::view", (a, [4]), {}, a.view(4)),
                         (flops.FREE,))
        self.assertEqual(self.counter.count(_Op(), "aten::no_such_op", (a,), {}, a),
                         (flops.UNKNOWN,))


if __name__ == "__main__":
    unittest.main()
