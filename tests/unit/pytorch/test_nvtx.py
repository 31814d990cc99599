# The NVTX binding: which library it binds, and the Capabilities it reports for each.
import ctypes
import os
import types
import unittest

import torch

from gpuattr_pytorch.nvtx import Capabilities, EventAttributes, Nvtx

_TOOLKIT_LIBRARY = os.environ.get("GPUATTR_TEST_NVTX_LIBRARY", "")


def _torch_with_binding(calls):
    """A torch whose _C._nvtx records what is called (as a torch built with CUDA has it)."""
    binding = types.SimpleNamespace(rangePushA=lambda name: calls.append(("push", name)),
                                    rangePop=lambda: calls.append(("pop",)),
                                    markA=lambda text: calls.append(("mark", text)))
    return types.SimpleNamespace(_C=types.SimpleNamespace(_nvtx=binding), __version__="fake")


class NvtxBindingTest(unittest.TestCase):
    def test_event_attributes_have_nvtx3s_layout(self):
        self.assertEqual(ctypes.sizeof(EventAttributes), 48)

    @unittest.skipUnless(_TOOLKIT_LIBRARY, "the CUDA toolkit has no libnvtx3interop")
    def test_the_toolkits_library_has_context_ranges_and_domain_marks(self):
        nvtx = Nvtx(torch, _TOOLKIT_LIBRARY)
        self.assertEqual(nvtx.capabilities.source, _TOOLKIT_LIBRARY)
        self.assertTrue(nvtx.capabilities.context_ranges)
        self.assertTrue(nvtx.capabilities.domain_marks)
        # With no tool injected, NVTX calls return without effect; each name is bound once.
        for _ in range(2):
            nvtx.push("nn.Module: layer1")
            nvtx.push_context("nn.Module: Net_0")
            nvtx.pop_context()
            nvtx.pop()
            nvtx.mark("gpuattr.pytorch: a mark")
            nvtx.domain_mark(b"gpuattr.flops", "aten::mm float32", 2 ** 40)
            nvtx.domain_mark(b"gpuattr.flops", "counting", None)

    def test_without_the_library_torchs_binding_has_ranges_only(self):
        calls = []
        nvtx = Nvtx(_torch_with_binding(calls), "/nonexistent/libnvtx3interop.so.1")
        self.assertEqual(nvtx.capabilities.source, "torch._C._nvtx")
        self.assertFalse(nvtx.capabilities.context_ranges)
        self.assertFalse(nvtx.capabilities.domain_marks)
        self.assertIsNone(nvtx.push_context)
        self.assertIsNone(nvtx.domain_mark)
        nvtx.push("step")
        nvtx.mark("text")
        nvtx.pop()
        self.assertEqual(calls, [("push", "step"), ("mark", "text"), ("pop",)])

    def test_without_any_binding_the_annotator_stays_out(self):
        no_nvtx = types.SimpleNamespace(_C=types.SimpleNamespace(), __version__="fake")
        with self.assertRaises(AttributeError):
            Nvtx(no_nvtx, "/nonexistent/libnvtx3interop.so.1")

    def test_capabilities_say_what_they_are(self):
        self.assertIn("context_ranges=True", repr(Capabilities("lib", True, False)))


if __name__ == "__main__":
    unittest.main()
