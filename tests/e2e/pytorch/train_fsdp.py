"""A fully sharded data-parallel training loop for torchrun: gloo, FSDP2, unannotated.

Each rank trains its shard for N steps (DataLoader with a DistributedSampler -> Net, each Linear
and the whole under torch.distributed.fsdp.fully_shard (torch >= 2.6; 2.4's
torch.distributed._composable.fsdp before) -> nn.MSELoss -> backward, whose gradients FSDP2
reduce-scatters over gloo after all-gathering the parameters for forward and backward -> SGD)
and prints one line.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.utils.data

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:
    from torch.distributed._composable.fsdp import fully_shard


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
    model = Net()
    fully_shard(model.encoder[0])
    fully_shard(model.head)
    fully_shard(model)
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
