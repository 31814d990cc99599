# What the running torch offers, found by feature: each probe on this torch, and on stand-ins for
# the torches it does not have (dynamo without torch.compiler, a hook API without keywords).
import sys
import types
import unittest

import torch

from gpuattr_pytorch import compat

_TORCH2 = hasattr(torch, "compile")


def _torch_version():
    return tuple(int(part) for part in torch.__version__.split(".")[:2])


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


class GlobalForwardHookTest(unittest.TestCase):
    def test_this_torch_passes_keyword_arguments_where_it_can(self):
        seen = []
        hook = compat.register_global_forward_hook(
            torch, lambda module, args, kwargs, output: seen.append(("kwargs", kwargs)),
            lambda module, args, output: seen.append(("plain", None)))
        try:
            torch.nn.Identity()(torch.ones(1))
            linear = torch.nn.Linear(1, 1)
            linear(input=torch.ones(1)) if hook.with_kwargs else linear(torch.ones(1))
        finally:
            hook.handle.remove()
        if hook.with_kwargs:
            self.assertEqual(seen[0], ("kwargs", {}))
            self.assertEqual(list(seen[1][1]), ["input"])
        else:
            self.assertEqual(seen, [("plain", None), ("plain", None)])
        # torch >= 2.1 takes both; 1.13 neither.
        takes_both = _torch_version() >= (2, 1)
        self.assertEqual((hook.with_kwargs, hook.always_call), (takes_both, takes_both))

    def test_a_torch_without_keywords_gets_the_plain_hook(self):
        registered = []

        def register(hook, **options):
            if options:
                raise TypeError("unexpected keyword argument")
            registered.append(hook)
            return "handle"

        fake = types.SimpleNamespace(nn=types.SimpleNamespace(modules=types.SimpleNamespace(
            module=types.SimpleNamespace(register_module_forward_hook=register))))
        plain = object()
        hook = compat.register_global_forward_hook(fake, object(), plain)
        self.assertEqual((hook.handle, hook.with_kwargs, hook.always_call),
                         ("handle", False, False))
        self.assertEqual(registered, [plain])


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
