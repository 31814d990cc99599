# What the annotator wraps in torch: the whole annotator is installed once for this process (its
# patches cannot be taken back), over a recording NVTX.
import unittest

import torch
import torch.nn.functional as F

import gpuattr_pytorch
from fake_nvtx import RecordingNvtx, open_paths
from gpuattr_pytorch.patches import functional_losses

_nvtx = RecordingNvtx()
_annotator = None


def setUpModule():
    global _annotator
    _annotator = gpuattr_pytorch.Annotator(torch, _nvtx)
    _annotator.install()


class LossModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(2, 3)
        self.criterion = torch.nn.CrossEntropyLoss()

    def forward(self, x, target, by_module=False):
        logits = self.head(x)
        if by_module:
            return self.criterion(logits, target)
        return F.cross_entropy(logits, target)


class PatchesTest(unittest.TestCase):
    def setUp(self):
        _nvtx.take()
        self.assertTrue(_annotator.guard.enabled)

    def tearDown(self):
        self.assertEqual(_nvtx.marks(), [])  # nothing disabled the annotator
        self.assertEqual(_annotator.ranges.stack.names, [])

    def _train_step(self, model, optimizer, *inputs, **options):
        optimizer.zero_grad()
        loss = model(*inputs, **options)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        torch.nn.utils.clip_grad.clip_grad_value_(model.parameters(), 1.0)
        optimizer.step()

    def test_a_training_step_names_its_optimizer_loss_and_clipping(self):
        model = LossModel()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        number = _annotator.steps.number
        self._train_step(model, optimizer, torch.ones(4, 2), torch.zeros(4, dtype=torch.long))
        step = "ProfilerStep#%d" % number
        paths = open_paths(_nvtx.events)
        root = paths[2][1]  # LossModel_<k>: k counts this class's roots in this process
        self.assertTrue(root.startswith("nn.Module: LossModel_"))
        self.assertEqual(paths[:2], [(step,),
                                     (step, "Optimizer.zero_grad#SGD.zero_grad")])
        self.assertIn((step, root, "nn.functional.cross_entropy"), paths)
        self.assertIn((step, "torch.nn.utils.clip_grad_norm_"), paths)
        self.assertIn((step, "torch.nn.utils.clip_grad_value_"), paths)
        self.assertEqual(paths[-1], (step, "Optimizer.step#SGD.step"))
        self.assertIn((step, root, "nn.Module: head", "backward"), paths)
        self.assertEqual(_annotator.steps.number, number + 1)

    def test_a_loss_modules_own_functional_call_adds_no_range(self):
        model = LossModel()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self._train_step(model, optimizer, torch.ones(4, 2), torch.zeros(4, dtype=torch.long),
                         by_module=True)
        pushed = _nvtx.pushed()
        self.assertIn("nn.Module: criterion", pushed)
        self.assertNotIn("nn.functional.cross_entropy", pushed)

    def test_a_batch_fetch_is_named_as_torch_profiler_names_it(self):
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(2, 1)))
        self.assertEqual(len(list(loader)), 2)
        self.assertEqual(_nvtx.pushed(), ["enumerate(DataLoader)#_SingleProcessDataLoaderIter"
                                          ".__next__"] * 3)  # the third ends the iteration

    def test_wrapped_functions_keep_their_names_and_results(self):
        self.assertEqual(F.mse_loss.__name__, "mse_loss")
        self.assertEqual(F.mse_loss(torch.ones(2), torch.zeros(2)).item(), 1.0)
        self.assertEqual(_nvtx.pushed(), ["nn.functional.mse_loss"])

    def test_functional_losses_are_the_loss_functions_only(self):
        losses = functional_losses(F)
        for name in ("cross_entropy", "mse_loss", "nll_loss", "kl_div",
                     "binary_cross_entropy_with_logits"):
            self.assertIn(name, losses)
        for name in ("relu", "linear", "softmax"):
            self.assertNotIn(name, losses)


if __name__ == "__main__":
    unittest.main()
