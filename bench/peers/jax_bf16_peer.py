#!/usr/bin/env python3
"""ktr's bf16 peer: JAX + Flax + Optax in Flax's mixed precision, the program `ktr train --precision bf16` is
measured against (on the CPU by bench/peers/ktr-vs-jax-bf16.sh, on a GPU by scripts/gpu-run.sh's bf16 stage).

The models compute in bfloat16 with float32 parameters (`dtype=jnp.bfloat16, param_dtype=jnp.float32`: Flax's
mixed precision, as ktr's bf16), the loss in float32, Adam (lr 1e-3) on the float32 parameters. Written the fast
way: Fashion-MNIST device_put once (uint8), permutation and gather inside the jitted step, and K steps per dispatch
through jax.lax.scan (one loss read-back per dispatch). Prints one line per variant:
  peer=jax-bf16 model=mlp variant=scan-16 batch=256 precision=bf16 samples_per_s=... step_ms=...
and, with --epochs, the test accuracy after that many epochs of the scan variant:
  peer=jax-bf16 model=mlp ... test_accuracy=88.1

  python3 jax_bf16_peer.py --data DIR [--model mlp|cnn] [--batch 256] [--steps 640] [--k 16] [--epochs 0]
"""
import argparse
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state

from idx_data import find, read_idx


class MLP(nn.Module):  # ktr's Model::mlp()
    dtype: object = jnp.bfloat16

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(512, dtype=self.dtype)(x))
        x = nn.relu(nn.Dense(512, dtype=self.dtype)(x))
        return nn.Dense(10, dtype=self.dtype)(x)


class SimpleCNN(nn.Module):  # ktr's Model::simple_cnn()
    dtype: object = jnp.bfloat16

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(features=32, kernel_size=(3, 3), dtype=self.dtype)(x))
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        return nn.Dense(10, dtype=self.dtype)(x.reshape((x.shape[0], -1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=640, help="timed steps per variant (a multiple of every K)")
    ap.add_argument("--k", default="16")
    ap.add_argument("--epochs", type=int, default=0, help="also train this many epochs and print test accuracy")
    ap.add_argument("--precision", default="bf16", choices=["bf16"], help="the only one (the shared peer's flag)")
    args = ap.parse_args()

    images = read_idx(find(args.data, "train-images-idx3-ubyte"))
    labels = read_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int32)
    n, B = images.shape[0], args.batch
    model = MLP() if args.model == "mlp" else SimpleCNN()
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 28, 28, 1)))["params"]  # float32
    fresh = lambda: train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))
    dev_x = jax.device_put(images.reshape(n, 28, 28, 1))
    dev_y = jax.device_put(labels)
    mean, std = float(images.mean()), float(images.std())  # standardised inputs, as ktr's default
    nb = n // B

    def loss_fn(p, x, y):
        logits = model.apply({"params": p}, x).astype(jnp.float32)  # the loss in float32
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    def gathered_step(state, perm, i):
        idx = jax.lax.dynamic_slice(perm, (i * B,), (B,))
        x = (dev_x[idx].astype(jnp.float32) - mean) / std
        loss, grads = jax.value_and_grad(loss_fn)(state.params, x, dev_y[idx])
        return state.apply_gradients(grads=grads), loss

    report = lambda variant, secs, steps, extra="": print(
        f"peer=jax-bf16 model={args.model} variant={variant} batch={B} precision=bf16 "
        f"samples_per_s={steps * B / secs:.0f} step_ms={1e3 * secs / steps:.4f}{extra}", flush=True)
    perm = jax.random.permutation(jax.random.PRNGKey(1), n)

    rstep = jax.jit(gathered_step)
    state = fresh()
    for i in range(20):
        state, loss = rstep(state, perm, i % nb)
        float(loss)
    t = time.perf_counter()
    for i in range(args.steps):
        state, loss = rstep(state, perm, i % nb)
        float(loss)
    report("resident", time.perf_counter() - t, args.steps)

    for K in [int(k) for k in args.k.split(",")]:
        def multi(state, perm, i0):
            return jax.lax.scan(lambda s, i: gathered_step(s, perm, (i0 + i) % nb), state, jnp.arange(K))

        mstep = jax.jit(multi)
        state = fresh()
        state, losses = mstep(state, perm, 0)
        np.asarray(losses)
        dispatches = args.steps // K
        t = time.perf_counter()
        for d in range(dispatches):
            state, losses = mstep(state, perm, d * K)
            np.asarray(losses)
        secs = time.perf_counter() - t
        extra = ""
        if args.epochs > 0:  # whole epochs of this variant from fresh parameters, then the test accuracy
            state = fresh()
            for e in range(args.epochs):
                p = jax.random.permutation(jax.random.PRNGKey(10 + e), n)
                for d in range(nb // K):
                    state, losses = mstep(state, p, d * K)
                np.asarray(losses)
            tx = read_idx(find(args.data, "t10k-images-idx3-ubyte")).reshape(-1, 28, 28, 1)
            ty = read_idx(find(args.data, "t10k-labels-idx1-ubyte"))
            logits = jax.jit(lambda p, x: model.apply({"params": p}, (x.astype(jnp.float32) - mean) / std))(
                state.params, jax.device_put(tx))
            extra = f" epochs={args.epochs} test_accuracy={100 * float(np.mean(np.argmax(logits, -1) == ty)):.2f}"
        report(f"scan-{K}", secs, dispatches * K, extra)


if __name__ == "__main__":
    main()
