# What the running torch offers, found by feature: each probe on this torch, and on stand-ins for
# the torches it does not have (dynamo without torch.compiler).
import sys
import types
import unittest

import torch

from gpuattr_pytorch import compat

_TORCH2 = hasattr(torch, "compile")


class IsCompilingTest(unittest.TestCase):
    def test_this_torch(self):
        is_compiling = compat.find_is_compiling(torch)
        if _TORCH2:
            self.assertFalse(is_compiling())
        else:
            self.assertIsNone(is_compiling)  # torch 1.13: no dynamo, nothing ever compiles

    def test_torch_compiler_is_compiling_when_there_is_one(self):
        check = lambda: True  # noqa: E731
        fake = types.SimpleNamespace(compiler=types.SimpleNamespace(is_compiling=check))
        self.assertIs(compat.find_is_compiling(fake), check)

    def test_dynamos_only_once_the_program_loaded_it(self):
        fake = types.SimpleNamespace(compile=lambda model: model)  # torch 2.0-2.2
        is_compiling = compat.find_is_compiling(fake)
        saved = sys.modules.get("torch._dynamo")
        try:
            sys.modules.pop("torch._dynamo", None)
            self.assertFalse(is_compiling())
            sys.modules["torch._dynamo"] = types.SimpleNamespace(is_compiling=lambda: True)
            self.assertTrue(is_compiling())
        finally:
            if saved is None:
                sys.modules.pop("torch._dynamo", None)
            else:
                sys.modules["torch._dynamo"] = saved

    def test_the_probe_never_imports_dynamo(self):
        if "torch._dynamo" in sys.modules:
            self.skipTest("this interpreter imported torch._dynamo before the test")
        is_compiling = compat.find_is_compiling(torch)
        if is_compiling is not None:
            is_compiling()
        self.assertNotIn("torch._dynamo", sys.modules)


class AutogradNodeSupportTest(unittest.TestCase):
    def test_this_torchs_nodes_have_prehooks_and_metadata(self):
        node = (torch.ones(1, requires_grad=True) * 2).grad_fn
        node_type, why_not = compat.autograd_node_support(torch, node)
        self.assertIs(node_type, torch._C._functions.AccumulateGrad)
        self.assertIsNone(why_not)

    def test_nodes_without_prehooks_say_why(self):
        node_type, why_not = compat.autograd_node_support(torch, object())
        self.assertIsNone(node_type)
        self.assertIn("register_prehook", why_not)
        self.assertIn(torch.__version__, why_not)


class DispatchModeTest(unittest.TestCase):
    def test_this_torch_has_dispatch_modes(self):
        base, why_not = compat.dispatch_mode_base(torch)
        self.assertIsNotNone(base)
        self.assertIsNone(why_not)


if __name__ == "__main__":
    unittest.main()
