"""The models train_simulated.py trains on the simulated GPU, each with its activation
checkpointing chosen by name:

  reentrant       checkpoint(use_reentrant=True): the forward runs without a graph, and
                  CheckpointFunctionBackward recomputes it and runs its backward inside itself
  non_reentrant   checkpoint(use_reentrant=False), torch 2's default: the forward's own nodes
                  run, and the first one that needs a saved tensor recomputes the block
  selective       non_reentrant with a policy (torch >= 2.4's create_selective_checkpoint_
                  contexts) that saves the matrix products' outputs: only the rest is recomputed

  net     Net: a linear embedding, one checkpointed Block (linear, tanh), a head; an op of the
          root's own between its submodules
  blocks  Blocks: an embedding, two checkpointed TransformerMlpBlocks (LayerNorm, Linear, GELU,
          Linear, then a residual add and tanh of the block's own), a head
"""
import torch
import torch.nn as nn
import torch.utils.checkpoint

CHECKPOINTS = ("reentrant", "non_reentrant", "selective")


def _selective_context():
    """The context_fn of selective checkpointing: matrix products are saved, the rest is
    recomputed."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    saved = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)

    def policy(ctx, op, *args, **kwargs):
        return (CheckpointPolicy.MUST_SAVE if op in saved else
                CheckpointPolicy.PREFER_RECOMPUTE)

    return create_selective_checkpoint_contexts(policy)


def checkpointed(function, checkpoint, *args):
    """function(*args) under the activation checkpointing named `checkpoint`."""
    if checkpoint == "reentrant":
        return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=True)
    if checkpoint == "non_reentrant":
        return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)
    return torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False,
                                             context_fn=_selective_context)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.linear(x))


class Net(nn.Module):
    def __init__(self, checkpoint):
        super().__init__()
        self.checkpoint = checkpoint
        self.embed = nn.Linear(6, 8)
        self.block = Block(8)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        x = self.embed(x) * 2.0  # an op of Net's own, between its submodules
        x = checkpointed(self.block, self.checkpoint, x)
        return self.head(x)


class TransformerMlpBlock(nn.Module):
    """A pre-norm MLP block. Its last op, tanh, saves its output, so a non-reentrant checkpoint
    that stops recomputing once it has every saved tensor still reruns the whole block."""

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return torch.tanh(x + self.fc2(self.act(self.fc1(self.norm(x)))))


class Blocks(nn.Module):
    def __init__(self, checkpoint):
        super().__init__()
        self.checkpoint = checkpoint
        self.embed = nn.Linear(6, 8)
        self.blocks = nn.ModuleList([TransformerMlpBlock(8) for _ in range(2)])
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = checkpointed(block, self.checkpoint, x)
        return self.head(x)


MODELS = {"net": Net, "blocks": Blocks}


def make_model(name, checkpoint):
    return MODELS[name](checkpoint)
