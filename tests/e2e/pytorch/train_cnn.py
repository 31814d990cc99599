"""A small CNN training loop, unannotated: what `gpuattr run` must make sense of by itself.

N steps of: DataLoader (2 workers) -> Net (conv, a checkpointed block, a classifier head) ->
nn.CrossEntropyLoss -> backward -> Adam. Prints one line (the final loss) so that a test can
compare stdout with a bare run's. With --timings FILE it writes the host time of each call it
makes, measured with time.perf_counter_ns around the call, as JSON lines {"call", "step", "ns"}.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.utils.checkpoint
import torch.utils.data


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.block = Block(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 8 * 8, 10))

    def forward(self, x):
        x = self.stem(x)
        x = torch.utils.checkpoint.checkpoint(self.block, x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--timings")
    args = parser.parse_args()
    torch.manual_seed(0)
    images = torch.randn(args.steps * 8, 1, 8, 8)
    labels = torch.randint(0, 10, (args.steps * 8,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                         batch_size=8, num_workers=2)
    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    timings = []

    def timed(call, step, function, *call_args):
        start = time.perf_counter_ns()
        result = function(*call_args)
        timings.append({"call": call, "step": step, "ns": time.perf_counter_ns() - start})
        return result

    loss = None
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        output = timed("forward", step, model, x)
        loss = timed("loss", step, criterion, output, y)
        timed("backward", step, loss.backward)
        timed("optimizer", step, optimizer.step)
    if args.timings:
        with open(args.timings, "w") as out:
            for timing in timings:
                out.write(json.dumps(timing) + "\n")
    print("final loss %.6f" % loss.item())


if __name__ == "__main__":
    main()
