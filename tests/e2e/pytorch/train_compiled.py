"""A torch.compile'd GPT-style model trained on the simulated GPU, with the truth of every launch.

    python train_compiled.py --truth FILE [--steps N] [--selective-checkpoint] [--graph-break]
                             [--eager]

The device side of the compiled-model tests (pytorch_compiled_e2e_test.cpp). The model, two
pre-norm transformer blocks (layer norm, causal self-attention, an MLP with GELU) and a head, is
compiled (default mode) as one function of forward and loss; backward runs its compiled backward
graph; fused AdamW steps eagerly (its step counters live on the device, so no `.item()` reads
them back: one foreach kernel and one fused kernel per step, as on a GPU). simgpu_compiled hooks every wrapper Inductor loads, so each kernel Inductor generated
launches one simulated kernel named as Inductor named it, and each aten op a wrapper calls (the
extern GEMMs) launches what simgpu_kernels gives it; the optimizer and the loss's `.item()` run
inside the same dispatch mode, which is never active around a compiled call (Dynamo would run
the frame eagerly). The truth (--truth, the simulator's format, DESIGN §5) is
each launch as the simulated GPU ran it, from this script's own bookkeeping, with no range path
(under `gpuattr run --pytorch off` nothing is attributed); and for each launch a compiled graph
made, `compiled`: its graph's range, its module and its phase, where the annotator's report must
place it, from Inductor's provenance tracking, which this script turns on (compiled_truth.py;
none when Inductor loaded the graph from its cache).

Prints the losses, then one line of dynamo's counters (graph_break, recompiles, unimplemented) and
how many compiled wrappers reached the simulated GPU, which a bare run prints alike.
"""
import argparse
import functools
import json
import os
import threading

import torch
import torch.nn as nn

import compiled_truth  # beside this script
import simgpu_compiled  # tests/simgpu/python, on PYTHONPATH
import simgpu_kernels
import simgpu_torch

WIDTH = 32
HEADS = 4
TOKENS = 16
BATCH = 2
VOCAB = 64


class Truth:
    """Each launch as the simulated GPU ran it, and where a compiled graph's launch belongs
    (`compiled`, compiled_truth.py; None outside compiled graphs)."""

    def __init__(self, gpu, compiled):
        self.gpu = gpu
        self.compiled = compiled
        self.activities = []

    def launch(self, work):
        compiled = self.compiled.place_of_launch()
        launched = self.gpu.run(work)
        if launched is None:
            raise RuntimeError("the simulated GPU did not run " + work.name)
        launch_ns, start_ns, end_ns, correlation = launched
        copy = work.kind == simgpu_kernels.COPY_TO_HOST
        self.activities.append({
            "kind": "memcpy" if copy else "kernel", "name": "memcpy_DtoH" if copy else work.name,
            "correlation_id": correlation, "device": 0, "stream": 0, "launch_ns": launch_ns,
            "start_ns": start_ns, "end_ns": end_ns, "thread": threading.current_thread().name,
            "range_path": [], "attribution": "none", "graph_node": None,
            "compiled": compiled})

    def write(self, path):
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"processes": [{"pid": os.getpid(), "rank": None, "name": "train",
                                      "activities": self.activities, "ranges": [],
                                      "marks": []}]}, out)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        batch, tokens, width = x.shape
        heads = [part.view(batch, tokens, HEADS, width // HEADS).transpose(1, 2)
                 for part in self.qkv(x).split(width, dim=2)]
        mixed = nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        return self.proj(mixed.transpose(1, 2).reshape(batch, tokens, width))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


def save_only_matmuls(ctx, op, *args, **kwargs):
    """Selective activation checkpointing's policy: keep the outputs of GEMMs and attention (whose
    recomputation would replay its random state), recompute the rest."""
    saved = op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default) or (
        "scaled_dot_product" in str(op))
    return (torch.utils.checkpoint.CheckpointPolicy.MUST_SAVE if saved
            else torch.utils.checkpoint.CheckpointPolicy.MUST_RECOMPUTE)


class Block(nn.Module):
    def __init__(self, selective_checkpoint=False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.mlp = Mlp()
        self.selective_checkpoint = selective_checkpoint

    def forward(self, x):
        if not self.selective_checkpoint:
            return self.layers(x)
        contexts = functools.partial(torch.utils.checkpoint.create_selective_checkpoint_contexts,
                                     save_only_matmuls)
        return torch.utils.checkpoint.checkpoint(self.layers, x, use_reentrant=False,
                                                 context_fn=contexts)

    def layers(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, selective_checkpoint=False, graph_break=False):
        super().__init__()
        self.graph_break = graph_break
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block(selective_checkpoint) for _ in range(2))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.graph_break:
            torch._dynamo.graph_break()
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def loss_of(model, tokens, targets):
    return nn.functional.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--truth", required=True)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--selective-checkpoint", action="store_true",
                        help="checkpoint each block, recomputing all but its GEMMs in backward")
    parser.add_argument("--graph-break", action="store_true",
                        help="break the graph between the embedding and the blocks")
    parser.add_argument("--eager", action="store_true",
                        help="run the same model without compiling it, for comparison")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Gpt(args.selective_checkpoint, args.graph_break)
    if args.selective_checkpoint:
        # Inductor fuses a recomputed op into the backward kernel that reads it (that kernel is
        # backward's): unfused, the recomputation is kernels of its own.
        torch._inductor.config.max_fusion_size = 1
    truth = Truth(simgpu_torch.SimulatedGpu(), compiled_truth.CompiledTruth({"model": model}))

    def launch_per_op():
        return simgpu_torch.KernelPerOp(truth.launch)

    hooks = simgpu_compiled.HookedWrappers(truth.launch, launch_per_op,
                                           truth.compiled.see_wrapper)
    if not hooks.installed:
        raise SystemExit("this torch has no PyCodeCache.load_by_key_path to hook")
    compiled_loss = torch.compile(loss_of)
    with launch_per_op():
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1, fused=True)
        tokens = torch.randint(0, VOCAB, (BATCH, TOKENS))
        targets = torch.randint(0, VOCAB, (BATCH, TOKENS))
    for _ in range(args.steps):
        if args.eager:
            with launch_per_op():
                loss = loss_of(model, tokens, targets)
                loss.backward()
        else:
            loss = compiled_loss(model, tokens, targets)
            loss.backward()
        with launch_per_op():
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            print("loss %.6f" % loss.item())
    from torch._dynamo.utils import counters

    counted = {name: dict(counters[name])
               for name in ("graph_break", "recompiles", "unimplemented")}
    print("dynamo %s wrappers on the simulated GPU: %d"
          % (json.dumps(counted, sort_keys=True), hooks.count))
    truth.gpu.synchronize()
    truth.write(args.truth)


if __name__ == "__main__":
    main()
