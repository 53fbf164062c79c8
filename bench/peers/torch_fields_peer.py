#!/usr/bin/env python3
"""ktr's PyTorch peer for field surrogates on a CPU: the U-Net and the periodic net of issue 43 (32x32 fields),
trained with Adam (lr 1e-3) on the mean squared error in float32 and under torch.autocast("cpu", bfloat16),
channels-last, written the fast way for eager PyTorch (the fields loaded once, a batch gathered by index per step,
set_to_none gradients, one read-back at the end). Prints one line per precision:
  peer=torch model=unet batch=32 precision=fp32 samples_per_s=... test_mse=... torch=2.x threads=2

  python3 torch_fields_peer.py --data DIR --model unet|periodic [--batch 32] [--epochs 1] [--precision fp32,bf16]
                               [--threads 2]
DIR holds x.npy, y.npy (training fields and targets, (N, 32, 32, 1) float32) and xt.npy, yt.npy (held out).
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn


class UNet(nn.Module):  # in=32x32x1 conv3x3:16:relu save:s1 maxpool2 conv3x3:32:relu save:s2 maxpool2
    # conv3x3:64:relu upsample2 concat:s2 conv3x3:32:relu upsample2 concat:s1 conv3x3:16:relu conv3x3:1
    def __init__(self):
        super().__init__()
        self.c0, self.c1, self.c2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1), nn.Conv2d(
            32, 64, 3, padding=1)
        self.c3, self.c4, self.c5 = nn.Conv2d(96, 32, 3, padding=1), nn.Conv2d(48, 16, 3, padding=1), nn.Conv2d(
            16, 1, 3, padding=1)
        self.pool, self.up, self.relu = nn.MaxPool2d(2), nn.Upsample(scale_factor=2), nn.ReLU()

    def forward(self, x):
        s1 = self.relu(self.c0(x))
        s2 = self.relu(self.c1(self.pool(s1)))
        h = self.relu(self.c2(self.pool(s2)))
        h = self.relu(self.c3(torch.cat([self.up(h), s2], 1)))  # ktr's concat appends the saved channels
        h = self.relu(self.c4(torch.cat([self.up(h), s1], 1)))
        return self.c5(h)


class Periodic(nn.Module):  # in=32x32x1 conv3x3:16:gelu:circular save:a conv3x3:32:gelu:s2:circular
    # conv3x3:32:gelu:circular convT2x2:16 add:a conv3x3:1:circular
    def __init__(self):
        super().__init__()
        circ = dict(padding=1, padding_mode="circular")
        self.c0 = nn.Conv2d(1, 16, 3, **circ)
        self.c1 = nn.Conv2d(16, 32, 3, stride=2, **circ)
        self.c2 = nn.Conv2d(32, 32, 3, **circ)
        self.t = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.c3 = nn.Conv2d(16, 1, 3, **circ)
        self.gelu = nn.GELU()

    def forward(self, x):
        a = self.gelu(self.c0(x))
        h = self.gelu(self.c2(self.gelu(self.c1(a))))
        return self.c3(self.t(h) + a)


def nchw(a):  # (N, H, W, C) float32 -> a channels-last NCHW tensor
    return torch.from_numpy(np.ascontiguousarray(a.transpose(0, 3, 1, 2))).contiguous(
        memory_format=torch.channels_last)


def run(args, precision):
    torch.manual_seed(0)
    x, y = nchw(np.load(f"{args.data}/x.npy")), nchw(np.load(f"{args.data}/y.npy"))
    xt, yt = nchw(np.load(f"{args.data}/xt.npy")), nchw(np.load(f"{args.data}/yt.npy"))
    model = (UNet() if args.model == "unet" else Periodic()).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n, b = x.shape[0], args.batch
    steps = args.epochs * (n // b)
    bf16 = precision == "bf16"

    def step(idx):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = nn.functional.mse_loss(model(x[idx]).float(), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    gen = torch.Generator().manual_seed(1)
    for _ in range(3):  # warm-up: oneDNN primitives created, allocator settled
        step(torch.randint(0, n, (b,), generator=gen))
    start = time.perf_counter()
    loss = None
    for e in range(args.epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(n // b):
            loss = step(perm[i * b:(i + 1) * b])
    float(loss)  # the one read-back
    seconds = time.perf_counter() - start
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        test_mse = float(nn.functional.mse_loss(model(xt).float(), yt))
    print(f"peer=torch model={args.model} batch={b} precision={precision} samples_per_s={steps * b / seconds:.1f} "
          f"test_mse={test_mse:.6g} torch={torch.__version__} threads={torch.get_num_threads()}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--model", choices=["unet", "periodic"], default="unet")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--precision", default="fp32,bf16")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    for precision in args.precision.split(","):
        run(args, precision)


if __name__ == "__main__":
    main()
