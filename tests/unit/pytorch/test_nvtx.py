# The NVTX binding: which library it binds, and the Capabilities it reports for each; the
# compiled core's binding where it is built (GPUATTR_TESTCORE_DIR), and the fallback from it.
import ctypes
import os
import tempfile
import types
import unittest
from unittest import mock

import torch

from core_for_tests import CORE_DIR, NO_CORE
from gpuattr_pytorch.nvtx import (CORE_ENV, CORE_SOURCE, Capabilities, CoreNvtx, EventAttributes,
                                  Nvtx, bind, load_core)

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


class CoreLoadingTest(unittest.TestCase):
    """load_core and bind: the compiled core where it loads, else why not, in the mark."""

    def setUp(self):
        patcher = mock.patch.dict(os.environ, {CORE_ENV: ""})
        patcher.start()
        self.addCleanup(patcher.stop)
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def test_a_directory_without_the_core_says_it_is_not_built(self):
        core, why_not = load_core(self.directory.name)
        self.assertIsNone(core)
        self.assertEqual(why_not, "not built: no _gpuattr_core in " + self.directory.name)

    def test_a_broken_core_falls_back_to_pure_python_and_the_mark_says_why(self):
        path = os.path.join(self.directory.name, "_gpuattr_core.abi3.so")
        with open(path, "w") as broken:
            broken.write("not an ELF file\n")
        calls = []
        nvtx, core, mark = bind(_torch_with_binding(calls), self.directory.name)
        self.assertIsNone(core)
        self.assertIsInstance(nvtx, Nvtx)
        self.assertTrue(mark.startswith("gpuattr.pytorch: core: python (ImportError: "), mark)
        self.assertIn(path, mark)

    def test_asking_for_pure_python_is_named_as_the_reason(self):
        os.environ[CORE_ENV] = "python"
        self.assertEqual(load_core(CORE_DIR or self.directory.name), (None, CORE_ENV + "=python"))
        _, _, mark = bind(_torch_with_binding([]), CORE_DIR or self.directory.name)
        self.assertEqual(mark, "gpuattr.pytorch: core: python (GPUATTR_PYTORCH_CORE=python)")

    @unittest.skipUnless(CORE_DIR, NO_CORE)
    def test_the_built_core_binds_with_every_capability(self):
        nvtx, core, mark = bind(torch, CORE_DIR)
        self.assertEqual(mark, "gpuattr.pytorch: core: compiled")
        self.assertEqual(core.__name__, "gpuattr_pytorch._gpuattr_core")
        self.assertIsInstance(nvtx, CoreNvtx)
        self.assertEqual(nvtx.capabilities.source, CORE_SOURCE)
        self.assertTrue(nvtx.capabilities.context_ranges)
        self.assertTrue(nvtx.capabilities.domain_marks)
        # No tool is injected here: NVTX3 makes each call a no-op; each name is cached once.
        for _ in range(2):
            self.assertIsNone(nvtx.push("nn.Module: layer1 \udcff"))
            self.assertIsNone(nvtx.push_context("nn.Module: Net_0"))
            self.assertIsNone(nvtx.pop_context())
            self.assertIsNone(nvtx.pop())
            self.assertIsNone(nvtx.mark("gpuattr.pytorch: a mark"))
            self.assertIsNone(nvtx.domain_mark(b"gpuattr.flops", "aten::mm float32", 2 ** 40))
            self.assertIsNone(nvtx.domain_mark(b"gpuattr.flops", "counting", None))

    @unittest.skipUnless(CORE_DIR, NO_CORE)
    def test_the_built_core_raises_on_wrong_arguments(self):
        nvtx, _, _ = bind(torch, CORE_DIR)
        with self.assertRaises(TypeError):
            nvtx.domain_mark(b"gpuattr.flops", "aten::mm float32")
        with self.assertRaises(TypeError):
            nvtx.push(b"not a str")
        with self.assertRaises(OverflowError):
            nvtx.domain_mark(b"gpuattr.flops", "aten::mm float32", -1)


if __name__ == "__main__":
    unittest.main()
