"""A small GPT trained on random tokens: plain PyTorch, no annotation of any kind.

A decoder-only transformer in the style of nanoGPT: token and position embeddings, blocks of
causal self-attention and an MLP, each block under activation checkpointing, the loss computed
with F.cross_entropy inside the model's forward, AdamW, and gradient clipping.

`scripts/demo.sh` profiles it under `gpuattr run` (on the simulated GPU when there is no real
one); on a machine with a GPU, `gpuattr run -- python examples/pytorch/train.py --device cuda`.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
import torch.utils.data


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        # For torch without scaled_dot_product_attention (before 2.0).
        self.register_buffer("scale", torch.tensor(1.0 / math.sqrt(n_embd // n_head)))
        self.register_buffer("causal", torch.ones(block_size, block_size, dtype=torch.bool).tril())

    def forward(self, x):
        batch, length, channels = x.size()
        q, k, v = self.c_attn(x).split(channels, dim=2)
        q, k, v = (t.view(batch, length, self.n_head, channels // self.n_head).transpose(1, 2)
                   for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * self.scale
            mask = self.causal[:length, :length]
            y = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(batch, length, channels)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=64, block_size=16, n_embd=32, n_head=4, n_layer=2):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        positions = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--compile-mode", default="default",
                        help="torch.compile's mode (reduce-overhead: CUDA graphs)")
    args = parser.parse_args()
    torch.manual_seed(0)
    tokens = torch.randint(0, 64, (args.steps * args.batch, 17))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens),
                                         batch_size=args.batch, shuffle=True)
    model = GPT().to(args.device)
    step_model = torch.compile(model, mode=args.compile_mode) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    for (batch,) in loader:
        batch = batch.to(args.device)
        optimizer.zero_grad()
        _, loss = step_model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
