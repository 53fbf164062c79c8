#!/usr/bin/env python3
"""ktr's PyTorch peer on a CPU: the MLP and the SimpleCNN of `ktr train`, trained with Adam (lr 1e-3) in float32
and with torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's mixed precision: bf16 matmuls and convolutions,
float32 parameters), measured beside ktr by bench/peers/ktr-vs-jax-bf16.sh.

Written the fast way for eager PyTorch: Fashion-MNIST loaded once into a uint8 tensor, each step gathers its batch
by index and standardises it (no DataLoader, no host copies per step), set_to_none gradients, the loss read back
once at the end. Prints one line per precision:
  peer=torch model=mlp batch=256 precision=bf16 samples_per_s=... step_ms=... torch=2.x threads=2

  python3 torch_peer.py --data DIR [--model mlp|cnn] [--batch 256] [--steps 640] [--precision fp32,bf16]
                        [--threads 2] [--compile]
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn

from idx_data import find, read_idx


def mlp():  # ktr's Model::mlp()
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def simple_cnn():  # ktr's Model::simple_cnn(): conv3x3:32:relu avgpool2 flatten dense:10
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 14 * 14, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=640, help="timed steps per precision")
    ap.add_argument("--precision", default="fp32,bf16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true", help="torch.compile the step's model (inductor)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    images = torch.from_numpy(read_idx(find(args.data, "train-images-idx3-ubyte")).copy()).reshape(-1, 1, 28, 28)
    labels = torch.from_numpy(read_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int64))
    n, B = images.shape[0], args.batch
    mean, std = float(images.float().mean()), float(images.float().std())  # standardised inputs, as ktr's default
    perm = torch.randperm(n)
    nb = n // B

    for precision in args.precision.split(","):
        model = mlp() if args.model == "mlp" else simple_cnn()
        step_model = torch.compile(model) if args.compile else model
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()

        def step(i):
            idx = perm[(i % nb) * B:(i % nb + 1) * B]
            x = (images[idx].float() - mean) / std
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = step_model(x)
            loss = loss_fn(logits.float(), labels[idx])  # the loss in float32
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        for i in range(20):
            step(i)
        t = time.perf_counter()
        for i in range(args.steps):
            loss = step(i)
        float(loss.detach())
        secs = time.perf_counter() - t
        print(f"peer=torch model={args.model} batch={B} precision={precision} "
              f"samples_per_s={args.steps * B / secs:.0f} step_ms={1e3 * secs / args.steps:.4f} "
              f"torch={torch.__version__} threads={torch.get_num_threads()}"
              f"{' compiled' if args.compile else ''}", flush=True)


if __name__ == "__main__":
    main()
