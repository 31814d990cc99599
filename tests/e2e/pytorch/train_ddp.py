"""A data-parallel training loop for torchrun: gloo, DistributedDataParallel, unannotated.

Each rank trains its shard for N steps (DataLoader with a DistributedSampler -> DDP(Net) ->
nn.MSELoss -> backward, whose gradients DDP all-reduces over gloo -> SGD) and prints one line.
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    dataset = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=False)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64 // (2 * args.steps) // 2 * 2,
                                         sampler=sampler)
    model = DistributedDataParallel(Net())
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
