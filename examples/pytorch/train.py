"""A small image classifier's training loop: plain PyTorch, no annotation of any kind.

`scripts/demo.sh` profiles it under `gpuattr run` (on the simulated GPU when there is no real
one); on a machine with a GPU, `gpuattr run -- python3 examples/pytorch/train.py --device cuda`.
A residual stage runs under activation checkpointing, so its forward is recomputed in backward.
"""
import argparse

import torch
import torch.nn as nn
import torch.utils.checkpoint
import torch.utils.data


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(channels)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.act(self.norm1(self.conv1(x)))
        return self.act(x + self.norm2(self.conv2(y)))


class Classifier(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.stage1 = ResidualBlock(16)
        self.stage2 = ResidualBlock(16)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, classes))

    def forward(self, x):
        x = self.stage1(self.stem(x))
        x = torch.utils.checkpoint.checkpoint(self.stage2, x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    images = torch.randn(args.steps * args.batch, 3, 16, 16)
    labels = torch.randint(0, 10, (args.steps * args.batch,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                         batch_size=args.batch, shuffle=True)
    model = Classifier().to(args.device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        x, y = x.to(args.device), y.to(args.device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print("final loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
