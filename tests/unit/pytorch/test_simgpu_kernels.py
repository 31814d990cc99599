# The simulated GPU's model of PyTorch's device work (tests/simgpu/python/simgpu_kernels.py),
# decided from each op's schema: what launches nothing on a GPU launches nothing here, and the
# ops that write lists of tensors in place (foreach ops, fused optimizers) launch one
# multi_tensor_apply kernel.
import unittest

import torch
import simgpu_kernels
from torch.utils._python_dispatch import TorchDispatchMode


class _Recorded(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.work = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        self.work.append((func.overloadpacket.__name__,
                          simgpu_kernels.device_work(func, result, args)))
        return result


def _launches(function):
    with _Recorded() as recorded:
        function()
    return {name: work for name, work in recorded.work}


class DeviceWorkTest(unittest.TestCase):
    def test_views_and_metadata_launch_nothing_and_item_copies_back(self):
        x = torch.ones(4, 4)
        work = _launches(lambda: (x.view(16), x.t(), x.add(1).sum().item()))
        self.assertIsNone(work["view"])
        self.assertIsNone(work["t"])
        self.assertEqual(work["add"].kind, simgpu_kernels.KERNEL)
        self.assertEqual(work["_local_scalar_dense"].kind, simgpu_kernels.COPY_TO_HOST)

    def test_an_in_place_foreach_op_is_one_multi_tensor_kernel(self):
        tensors = [torch.zeros(32), torch.zeros(32)]
        work = _launches(lambda: torch._foreach_add_(tensors, 1.0))["_foreach_add_"]
        self.assertEqual(work.kind, simgpu_kernels.KERNEL)
        self.assertIn("multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
                      "TensorListMetadata<1>, at::native::(anonymous namespace)::"
                      "_foreach_add__functor<float>", work.name)
        self.assertEqual(work.duration_ns, 2000 + 64 // 16)

    @unittest.skipUnless(hasattr(torch, "_fused_adamw_"), "this torch has no fused AdamW")
    def test_a_fused_optimizer_step_is_one_kernel_over_its_four_lists(self):
        linear = torch.nn.Linear(4, 4)
        linear(torch.ones(2, 4)).sum().backward()
        optimizer = torch.optim.AdamW(linear.parameters(), fused=True)
        work = _launches(optimizer.step)
        self.assertIn("TensorListMetadata<4>", work["_fused_adamw_"].name)
        self.assertIn("TensorListMetadata<1>", work["_foreach_add_"].name)  # the step counters


if __name__ == "__main__":
    unittest.main()
