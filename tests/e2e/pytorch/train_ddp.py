"""A data-parallel training loop for torchrun: gloo, DistributedDataParallel or FSDP2, unannotated.

Each rank trains its shard for N steps (DataLoader with a DistributedSampler -> DDP(Net) ->
nn.MSELoss -> backward, whose gradients DDP all-reduces over gloo -> SGD) and prints one line.
With --fsdp2, Net's Linear layers and Net itself are under torch.distributed.fsdp.fully_shard
(torch >= 2.6; torch.distributed._composable.fsdp from 2.4) instead of DDP: FSDP2 all-gathers
the parameters for forward and backward and reduce-scatters the gradients.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.utils.data
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


def fully_shard_net():
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    model = Net()
    fully_shard(model.encoder[0])
    fully_shard(model.head)
    fully_shard(model)
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fsdp2", action="store_true")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    dataset = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=False)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64 // (2 * args.steps) // 2 * 2,
                                         sampler=sampler)
    model = fully_shard_net() if args.fsdp2 else DistributedDataParallel(Net())
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss = None
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print("rank %d final loss %.6f" % (rank, loss.item()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
