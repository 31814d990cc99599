"""Small models whose FLOPs the e2e tests compute by hand (docs/pytorch.md §FLOPs), unannotated.

    flops_models.py MODEL [--steps N] [--step-ms MS] [--timings FILE]

MODEL is one of:
  mlp     Linear(64, 32) -> ReLU -> Linear(32, 4) over a batch of 8; loss out.sum(); SGD
  conv    Conv2d(3, 8, 3, padding=1) over a batch of (2, 3, 16, 16); loss out.sum(); SGD
  block   a transformer block over (2, 5, 16), 2 heads: LayerNorm, Linear qkv, QK^T, softmax,
          times V, Linear out, residual, LayerNorm, Linear 16->64, GELU, Linear 64->16,
          residual; loss out.sum(); SGD
  unknown mlp's Linear then torch.special.erfinv, an op no rule knows; SGD
  lesson  the profiling lesson's block under no_grad: Linear 1024x1024 over a batch of 8192,
          then mul 0.5, add 0.1, gelu(tanh), add the residual, clamp(-3, 3); no optimizer

Each step sleeps --step-ms after optimizer.step, so that a step's wall time is known. With
--timings FILE it appends one JSON line per step end, {"pid", "under_gpuattr", "end_ns"} with
time.monotonic_ns() right after optimizer.step returned, for the bare run's own timer. With
--fake-flop-registry it stands in for torch >= 2.1's FlopCounterMode registry (which torch 1.13
has not) before torch is imported, with one formula: aten::mm is 7 FLOPs a call.
Prints nothing.
"""
import argparse
import json
import os
import sys
import time
import types

if "--fake-flop-registry" in sys.argv:
    _fake = types.ModuleType("torch.utils.flop_counter")
    _fake.flop_registry = {}
    sys.modules["torch.utils.flop_counter"] = _fake

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        head_dim = dim // self.heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        attended = (scores @ v).transpose(1, 2).reshape(batch, seq, dim)
        x = x + self.out(attended)
        return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))


class Erfinv(nn.Module):
    def forward(self, x):
        return torch.special.erfinv(torch.tanh(x))


class Lesson(nn.Module):
    """Linear 1024x1024, then the five-op elementwise chain (tests/gpu/torch_lesson.py)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1024, 1024)
        self.chain = Chain()

    def forward(self, x, residual):
        return self.chain(self.linear(x), residual)


class Chain(nn.Module):
    def forward(self, h, residual):
        y = h * 0.5
        y = y + 0.1
        y = torch.nn.functional.gelu(y, approximate="tanh")
        y = y + residual
        return torch.clamp(y, -3.0, 3.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "conv", "block", "unknown", "lesson"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--step-ms", type=float, default=0.0)
    parser.add_argument("--timings")
    parser.add_argument("--fake-flop-registry", action="store_true")
    args = parser.parse_args()
    if args.fake_flop_registry:  # the annotator holds the same dict since torch was imported
        sys.modules["torch.utils.flop_counter"].flop_registry[torch.ops.aten.mm] = (
            lambda *args, out_val=None, **kwargs: 7)
    torch.manual_seed(0)
    if args.model == "lesson":
        model = Lesson()
        x = torch.randn(8192, 1024)
        residual = torch.randn(8192, 1024)
        with torch.no_grad():
            for _ in range(args.steps):
                model(x, residual)
        return
    if args.model == "mlp":
        model, x = Mlp(), torch.randn(8, 64)
    elif args.model == "conv":
        model, x = nn.Conv2d(3, 8, 3, padding=1), torch.randn(2, 3, 16, 16)
    elif args.model == "block":
        model, x = Block(), torch.randn(2, 5, 16)
    else:
        model, x = nn.Sequential(nn.Linear(64, 32), Erfinv()), torch.randn(8, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    timings = open(args.timings, "a") if args.timings else None
    under_gpuattr = "gpuattr" in os.environ.get("LD_PRELOAD", "")
    for _ in range(args.steps):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        if timings is not None:
            timings.write(json.dumps({"pid": os.getpid(), "under_gpuattr": under_gpuattr,
                                      "end_ns": time.monotonic_ns()}) + "\n")
            timings.flush()
        time.sleep(args.step_ms / 1000.0)


if __name__ == "__main__":
    main()
