#!/usr/bin/env python3
"""ktr against Flax and Optax, a system ktr did not write (run by scripts/crosscheck.sh in CI).

1. Same weights, same batch: ktr's logits, loss and gradients equal Flax's, and one Adam and one AdamW step (from
   those gradients) equal Optax's parameters, for the MLP and the SimpleCNN, within a relative tolerance of 1e-4
   (of the largest value). The same check runs on LAYER_MODELS, small models (batch 8, inputs like 9x9x2 or 12
   features) that together cover every layer token: every activation (relu, tanh, sigmoid, silu, gelu, gelu_tanh,
   leaky_relu, elu, softplus, sine, identity) both fused into a dense or conv and standalone; layernorm after a
   dense and after a conv (over the channels); dropout (identity at evaluation); conv1x1/3x3/5x5/7x7; the :s2 form
   on odd extents (XLA's SAME padding, symmetric there) and on even ones (asymmetric: the smaller half first); the
   :valid form; maxpool2 and avgpool2 on odd extents (the last row and column dropped); globalavgpool; a
   non-square input (H and W kept apart); dense on an image (the implicit flatten). FIELD_MODELS end in a
   convolution (or regress): their output is a field, their targets floats of its shape, their loss the mean
   squared error; upsample2 (jnp.repeat twice), convT2x2 (nn.ConvTranspose), the circular padding and the skip
   connections (save/add/concat: a U-Net, a residual MLP, a tensor used twice) are checked there.
2. ktr trains a few hundred steps, exports safetensors; Flax evaluates the exported weights with the exported input
   transform: the test accuracy matches `ktr eval` to within one sample of the test set, the test loss
   to 1e-4 relative (plus the rounding of the 4 decimals `ktr eval` prints).
3. Flax trains a few hundred steps, saves Flax-named safetensors; `ktr import` + `ktr eval` reaches the accuracy
   Flax reports, to within one sample.
4. Acceptance: a regression (REGRESSION_MODEL, huber loss), a U-Net on 16x16 fields (ACCEPTANCE_UNET) and a
   residual MLP (ACCEPTANCE_RESIDUAL), each trained on .npy arrays and exported, score in Flax, with the exported
   input transform, the held-out MSE `ktr eval` prints (1e-4 relative); ACCEPTANCE_CNN (conv5x5 gelu, maxpool2,
   avgpool2) goes through check 2 on Fashion-MNIST.
5. bf16 (where `ktr info` lists it): ktr's --precision bf16 against Flax's mixed precision (dtype=jnp.bfloat16,
   param_dtype=jnp.float32, the loss in fp32) for BF16_MODELS (the MLP, the SimpleCNN, a layernorm/gelu model), same
   weights and batch: every output and gradient passes when max |ktr - flax_bf16| <= 2 max |flax_bf16 - flax_fp32|
   + 1e-6 (per tensor: Flax rounds every layer's output to bf16, ktr only the inputs of its products; the mean
   loss, whose bf16 errors may cancel by chance, may also take the logits' budget through |d loss| <= 2 max
   |d logits|), and ktr's bf16 must differ from its fp32 (the precision took effect).
6. Reinforcement learning: one TD3, one DDPG and two SAC updates (state-dependent and free log sigma, alpha tuned)
   of ktr's rl/ layer (ktr_rl_crosscheck: TorchFort's
   semantics, plain SGD so that each step is its gradient) against the same update written here in JAX from the
   same weights, batch, smoothed target actions and (SAC) noise: the target action within the smoothing clip of the
   target policy's (SAC: the same sample), log alpha's step, the critics' and the policy's losses, every network's
   step (hence every gradient, SAC's reparameterised one included) and every target's Polyak average.
Any drift in a layer's layout, the flatten order, the loss or an optimiser step fails it.

    crosscheck.py --ktr build/openmp/apps/ktr --tool build/openmp/tests/ktr_crosscheck \
                  --rl-tool build/openmp/tests/ktr_rl_crosscheck [--jobs 2] [--section NAME]
"""
import argparse
import concurrent.futures
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax import traverse_util
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

jax.config.update("jax_default_matmul_precision", "highest")  # FP32 matmuls, as ktr's
RTOL = 1e-4
MODELS = {
    "mlp": "in=28x28x1 flatten dense:512:relu dense:512:relu dense:10",
    "cnn": "in=28x28x1 conv3x3:32:relu avgpool2 flatten dense:10",
}
# The acceptance models: a regression on .npy arrays (huber loss), a CNN description on Fashion-MNIST.
REGRESSION_MODEL = "in=6 dense:64:silu layernorm dense:64:tanh dropout:0.1 dense:1"
ACCEPTANCE_CNN = "in=28x28x1 conv5x5:16:gelu maxpool2 conv3x3:32:relu avgpool2 flatten dense:10"
# Same weights, same batch only: every layer token, each model small enough to take a moment.
LAYER_MODELS = {
    "dense_acts_a": "in=12 dense:16:relu dense:16:tanh dense:16:sigmoid dense:16:silu dense:5",
    "dense_acts_b": "in=12 dense:16:gelu dense:16:gelu_tanh dense:16:leaky_relu dense:16:elu dense:5",
    "dense_acts_c": "in=12 dense:16:softplus dense:16:sine dense:16:identity dense:5",
    "standalone_a": "in=12 dense:16 relu dense:16 tanh dense:16 sigmoid dense:16 silu dense:5",
    "standalone_b": "in=12 dense:16 gelu dense:16 gelu_tanh dense:16 leaky_relu dense:16 elu dense:5",
    "standalone_c": "in=12 dense:16 softplus dense:16 sine dense:16 identity dense:5",
    "dense_layernorm": "in=12 dense:16 layernorm relu dropout:0.25 dense:16:gelu layernorm dense:5",
    "conv1x1": "in=9x9x2 conv1x1:4:leaky_relu conv1x1:3 elu dense:5",
    "conv5x5_layernorm": "in=9x9x2 conv5x5:6:gelu layernorm globalavgpool dense:5",
    "conv7x7_valid": "in=9x9x2 conv7x7:4:tanh:valid flatten dense:5",
    "conv_s2_odd": "in=9x9x2 conv3x3:6:s2 silu conv5x5:4:sigmoid:s2 flatten dense:5",
    "conv_s2_even": "in=8x8x2 conv3x3:6:softplus:s2 conv7x7:4:relu:s2 flatten dense:5",
    "conv_s2_valid": "in=9x8x2 conv3x3:6:gelu_tanh:s2:valid conv1x1:4:identity:s2 flatten dense:5",
    "pools": "in=11x11x2 conv3x3:4:sine maxpool2 dropout:0.25 conv3x3:4 layernorm avgpool2 flatten dense:5",
}
# Field-to-field models (they end in a convolution): float targets of the output's shape, the mean squared error
# over every element; the same logits, loss, gradients and optimiser steps are checked.
BF16_MODELS = {
    "mlp": MODELS["mlp"],
    "cnn": MODELS["cnn"],
    "layernorm_gelu": "in=28x28x1 flatten dense:128:gelu layernorm dense:64:gelu_tanh layernorm dense:10",
}
FIELD_MODELS = {
    "field_conv": "in=8x8x2 conv3x3:6:tanh conv3x3:3",
    "field_pool_conv": "in=9x9x2 conv5x5:4:gelu maxpool2 conv1x1:6:s2 layernorm conv3x3:2",
    "field_upsample": "in=8x6x2 conv3x3:4:relu maxpool2 conv3x3:6:silu upsample2 conv3x3:3:tanh conv1x1:2",
    # Skip connections, transposed convolutions and periodic padding: a U-Net (concat across a max pool, both
    # upsample2 and convT2x2), a residual MLP (add), a tensor used twice and the input saved before any layer
    # with parameters, and circular convolutions at stride 1 and 2, a window wider than the image included.
    "unet": "in=8x8x1 conv3x3:4:relu save:a maxpool2 conv3x3:6:relu save:b maxpool2 conv3x3:8:tanh "
            "convT2x2:6:relu concat:b conv3x3:6:relu upsample2 concat:a conv3x3:4:gelu conv1x1:1",
    "residual_mlp": "in=8 dense:16:tanh save:r dense:16:tanh add:r dense:1",
    "skip_twice": "in=6 save:x dense:6:sigmoid save:a dense:6:tanh add:a concat:a dense:6 add:x dense:3",
    "circular": "in=7x6x2 conv3x3:4:silu:circular conv5x5:3:s2:circular conv7x7:2:circular convT2x2:2",
    "circular_wide": "in=3x4x2 conv7x7:3:tanh:circular save:c conv1x1:3:circular add:c conv3x3:1:s2:circular",
}
# The acceptance models, trained from .npy arrays on the command line: a U-Net on 16x16 fields, a
# residual MLP on 8 features.
ACCEPTANCE_UNET = ("in=16x16x1 conv3x3:16:relu save:a maxpool2 conv3x3:32:relu upsample2 concat:a "
                   "conv3x3:16:relu conv1x1:1")
ACCEPTANCE_RESIDUAL = "in=8 dense:64:tanh save:r dense:64:tanh add:r dense:1"
ACTIVATIONS = {
    "relu": nn.relu,
    "tanh": nn.tanh,
    "sigmoid": nn.sigmoid,
    "silu": nn.silu,
    "gelu": lambda x: nn.gelu(x, approximate=False),
    "gelu_tanh": lambda x: nn.gelu(x, approximate=True),
    "leaky_relu": nn.leaky_relu,  # slope 0.01
    "elu": nn.elu,
    "softplus": nn.softplus,
    "sine": jnp.sin,
    "identity": lambda x: x,
}


def activation(name, x):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}' ({', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name](x)


def conv_options(token, parts):
    """The parts after convKxK:N, in the order ACT, s2, valid or circular (each optional): (activation, strides,
    padding)."""
    rest = list(parts[2:])
    act = rest.pop(0) if rest and rest[0] in ACTIVATIONS else None
    strides = (2, 2) if rest and rest[0] == "s2" else (1, 1)
    rest = rest[1:] if strides == (2, 2) else rest
    padding = {"valid": "VALID", "circular": "CIRCULAR"}.get(rest[0], "SAME") if rest else "SAME"
    rest = rest[1:] if padding != "SAME" else rest
    if rest:
        raise ValueError(f"bad conv token '{token}' (convKxK:N[:ACT][:s2][:valid|:circular])")
    return act, strides, padding


class FromDescription(nn.Module):
    """The Flax model of a ktr description (Flax's default module names: Dense_0, Conv_0, ConvTranspose_0,
    LayerNorm_0, ...), from the token definitions: save:NAME remembers x, add:NAME is x + saved, concat:NAME is
    jnp.concatenate([x, saved], -1), convT2x2:N is nn.ConvTranspose(N, (2, 2), strides=(2, 2))."""
    description: str
    dtype: object = None  # jnp.bfloat16: Flax's mixed precision (float32 parameters, bf16 computation)

    @nn.compact
    def __call__(self, x):
        dt = {"dtype": self.dtype} if self.dtype is not None else {}
        tokens = self.description.split()
        if not tokens or not tokens[0].startswith("in="):
            raise ValueError(f"description must start with in=HxWxC or in=D: '{self.description}'")
        saved = {}
        for token in tokens[1:]:
            parts = token.split(":")
            conv = re.fullmatch(r"conv([1357])x\1", parts[0])
            if parts[0] == "dense" and len(parts) in (2, 3):
                x = nn.Dense(int(parts[1]), **dt)(x.reshape((x.shape[0], -1)))
                x = activation(parts[2], x) if len(parts) == 3 else x
            elif conv and len(parts) >= 2:
                k = int(conv.group(1))
                act, strides, padding = conv_options(token, parts)
                x = nn.Conv(int(parts[1]), (k, k), strides=strides, padding=padding, **dt)(x)
                x = activation(act, x) if act else x
            elif parts[0] == "convT2x2" and len(parts) in (2, 3):
                x = nn.ConvTranspose(int(parts[1]), (2, 2), strides=(2, 2), **dt)(x)
                x = activation(parts[2], x) if len(parts) == 3 else x
            elif parts[0] == "save" and len(parts) == 2:
                saved[parts[1]] = x
            elif parts[0] == "add" and len(parts) == 2:
                x = x + saved[parts[1]]
            elif parts[0] == "concat" and len(parts) == 2:
                x = jnp.concatenate([x, saved[parts[1]]], axis=-1)
            elif token in ACTIVATIONS:
                x = activation(token, x)
            elif token == "layernorm":
                x = nn.LayerNorm(epsilon=1e-6, **dt)(x)
            elif parts[0] == "dropout" and len(parts) == 2:
                x = nn.Dropout(rate=float(parts[1]), deterministic=True)(x)
            elif token == "maxpool2":
                x = nn.max_pool(x, (2, 2), strides=(2, 2))
            elif token == "avgpool2":
                x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            elif token == "upsample2":
                x = jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2)
            elif token == "globalavgpool":
                x = jnp.mean(x, axis=(1, 2))
            elif token == "flatten":
                x = x.reshape((x.shape[0], -1))
            else:
                raise ValueError(f"unknown token '{token}' in '{self.description}'")
        return x


def input_shape(desc):
    """The per-sample input shape of a description: (H, W, C) from in=HxWxC, (D,) from in=D."""
    return tuple(int(d) for d in desc.split()[0][len("in="):].split("x"))


def classes(desc):
    """The class count: the features of the last dense token."""
    return int([t for t in desc.split() if t.startswith("dense:")][-1].split(":")[1])


def flat(params):
    return {k: np.asarray(v, np.float32) for k, v in traverse_util.flatten_dict(params["params"], sep=".").items()}


def tree(flat_params):
    return {"params": traverse_util.unflatten_dict({k: jnp.asarray(v) for k, v in flat_params.items()}, sep=".")}


def loss_fn(model, params, x, y):
    logits = model.apply(params, x).astype(jnp.float32)  # a bf16 model's loss in fp32
    if y.dtype == np.float32:  # a field model's targets: the mean squared error over every element
        return optax.squared_error(logits, y).mean(), logits
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits


def close(name, got, want, failures):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want).max() / scale
    status = "ok" if got.shape == want.shape and err <= RTOL else "FAIL"
    if status == "FAIL":
        failures.append(name)
    print(f"  {name:28s} max |ktr - flax| / max |flax| = {err:.2e} {status}")


def same_weights_same_batch(args, work, failures, fields=False):
    """Check 1 on MODELS and LAYER_MODELS, or (fields) on FIELD_MODELS, each with its own inputs' generator."""
    rng = np.random.default_rng(1 if fields else 0)
    for name, desc in (FIELD_MODELS if fields else {**MODELS, **LAYER_MODELS}).items():
        model = FromDescription(desc)
        x = rng.uniform(-1.5, 1.5, (8, *input_shape(desc))).astype(np.float32)
        params = model.init(jax.random.PRNGKey(1), x)
        if name in FIELD_MODELS:
            y = rng.normal(0, 1, model.apply(params, x).shape).astype(np.float32)
        else:
            y = rng.integers(0, classes(desc), 8).astype(np.int32)
        weights = os.path.join(work, f"{name}.safetensors")
        save_file(flat(params), weights)
        np.save(os.path.join(work, "x.npy"), x)
        np.save(os.path.join(work, "y.npy"), y)
        out = os.path.join(work, f"{name}-ktr.safetensors")
        subprocess.run([args.tool, desc, weights, os.path.join(work, "x.npy"), os.path.join(work, "y.npy"), out],
                       check=True)
        ktr = load_file(out)
        (loss, logits), grads = jax.value_and_grad(lambda p: loss_fn(model, p, x, y), has_aux=True)(params)
        print(f"{name}: {desc}")
        close("logits", ktr["logits"], logits, failures)
        close("loss", ktr["loss"][0], loss, failures)
        for k, v in flat(grads).items():
            close(f"grad {k}", ktr[f"grad.{k}"], v, failures)
        # The optimiser step from the same gradients (ktr's): Adam divides each gradient by its own magnitude, so
        # the step of a gradient near eps would otherwise amplify the last-bit differences checked above.
        ktr_grads = tree({k: ktr[f"grad.{k}"] for k in flat(grads)})
        for opt_name, opt in (("adam", optax.adam(1e-3)), ("adamw", optax.adamw(1e-3, weight_decay=1e-4))):
            updates, _ = opt.update(ktr_grads, opt.init(params), params)
            stepped = flat(optax.apply_updates(params, updates))
            before = flat(params)
            for k, v in stepped.items():
                # Compare the step itself (new - old): the parameters are ~1e3 times larger than the update.
                close(f"{opt_name} step {k}", ktr[f"{opt_name}.{k}"] - before[k], v - before[k], failures)


def bf16_mixed_precision(args, work, failures):
    info = subprocess.run([args.ktr, "info"], check=True, capture_output=True, text=True).stdout
    line = next((l for l in info.splitlines() if l.startswith("precisions:")), "")
    if "bf16" not in line:
        why = next((l for l in info.splitlines() if l.startswith("bf16 matmuls:")), "bf16 matmuls: ?")
        print(f"bf16: SKIPPED, this build or CPU cannot run it ({why.split(':', 1)[1].strip()})")
        return
    rng = np.random.default_rng(3)
    for name, desc in BF16_MODELS.items():
        f32, b16 = FromDescription(desc), FromDescription(desc, dtype=jnp.bfloat16)
        x = rng.uniform(-1.5, 1.5, (16, *input_shape(desc))).astype(np.float32)
        y = rng.integers(0, classes(desc), 16).astype(np.int32)
        params = f32.init(jax.random.PRNGKey(2), x)
        weights = os.path.join(work, f"bf16-{name}.safetensors")
        save_file(flat(params), weights)
        np.save(os.path.join(work, "x.npy"), x)
        np.save(os.path.join(work, "y.npy"), y)
        outs = {}
        for precision in ("fp32", "bf16"):
            outs[precision] = os.path.join(work, f"bf16-{name}-ktr-{precision}.safetensors")
            subprocess.run([args.tool, desc, weights, os.path.join(work, "x.npy"), os.path.join(work, "y.npy"),
                            outs[precision], precision], check=True)
        ktr, ktr32 = load_file(outs["bf16"]), load_file(outs["fp32"])
        flax = {}
        for tag, model in (("fp32", f32), ("bf16", b16)):
            (loss, logits), grads = jax.value_and_grad(lambda p: loss_fn(model, p, x, y), has_aux=True)(params)
            flax[tag] = {"logits": logits, "loss": loss, **{f"grad.{k}": v for k, v in flat(grads).items()}}
        print(f"bf16 {name}: {desc} (budget: 2 max |flax_bf16 - flax_fp32| + 1e-6; the loss also 2x the logits')")
        moved = 0.0
        budgets = {}
        for key in flax["bf16"]:
            want, ref = (np.asarray(flax[t][key], np.float64) for t in ("bf16", "fp32"))
            got = np.asarray(ktr[key], np.float64).reshape(want.shape)
            err, budget = np.abs(got - want).max(), 2 * np.abs(want - ref).max() + 1e-6
            if key == "loss":  # a mean of B terms, whose bf16 errors may cancel by chance: also the logits'
                budget = max(budget, 2 * budgets["logits"])  # budget through |d loss| <= 2 max |d logits|
            budgets[key] = budget
            moved = max(moved, np.abs(got - np.asarray(ktr32[key], np.float64).reshape(want.shape)).max())
            status = "ok" if err <= budget else "FAIL"
            if status == "FAIL":
                failures.append(f"bf16 {name} {key}")
            print(f"  {key:28s} max |ktr - flax_bf16| = {err:.2e} <= budget {budget:.2e} {status}")
        if moved == 0.0:
            failures.append(f"bf16 {name}: ktr's bf16 run equals its fp32 run")
            print("  FAIL: ktr's bf16 run computed exactly what its fp32 run did")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + np.ascontiguousarray(array, np.uint8).tobytes())


def prepare_data(args, data):
    """Fashion-MNIST (its first 6400 training images: 200 steps an epoch at batch 32; the whole test set), so that
    accuracies are far from 100% and a wrong layout shows; `ktr synth` data where Fashion-MNIST is absent."""
    fm = args.fashion_mnist
    os.makedirs(data, exist_ok=True)
    if not os.path.exists(os.path.join(fm, "t10k-images-idx3-ubyte.gz")):
        print(f"{fm}: no Fashion-MNIST, using ktr synth data (accuracies near 100%)")
        subprocess.run([args.ktr, "synth", "--out", data, "--train", "6400", "--test", "2000"], check=True,
                       stdout=subprocess.DEVNULL)
        return
    write_idx(os.path.join(data, "train-images-idx3-ubyte.gz"), read_idx(os.path.join(fm, "train-images-idx3-ubyte.gz"))[:6400])
    write_idx(os.path.join(data, "train-labels-idx1-ubyte.gz"), read_idx(os.path.join(fm, "train-labels-idx1-ubyte.gz"))[:6400])
    for part in ("images-idx3", "labels-idx1"):
        write_idx(os.path.join(data, f"t10k-{part}-ubyte.gz"), read_idx(os.path.join(fm, f"t10k-{part}-ubyte.gz")))
    print(f"data: the first 6400 training images of {fm}, its 10000 test images")


def accuracy_line(text):
    m = re.search(r"accuracy ([0-9.]+)%.* over ([0-9]+) samples", text)
    return float(m.group(1)) / 100, int(m.group(2))


def exported(st, x):
    """The Flax model and parameters of a `ktr export` file, and x under its input transform as ktr's gather applies
    it: x * ktr.input_scale + ktr.input_shift per feature where the file holds them, else
    x * ktr.normalize_scale + ktr.normalize_shift."""
    with safe_open(st, "np") as f:
        meta = f.metadata()
    tensors = load_file(st)
    if "ktr.input_scale" in tensors:
        x = x * tensors["ktr.input_scale"] + tensors["ktr.input_shift"]
    else:
        x = x * np.float32(meta["ktr.normalize_scale"]) + np.float32(meta["ktr.normalize_shift"])
    params = tree({k: v for k, v in tensors.items() if not k.startswith("ktr.")})
    return FromDescription(meta["ktr.model"]), params, x


def ktr_to_flax(args, data, work, failures, models=None):
    """models: name -> --model value (mlp, cnn or a description); MODELS by name where not given."""
    images = read_idx(os.path.join(data, "t10k-images-idx3-ubyte.gz"))[..., None].astype(np.float32)
    labels = read_idx(os.path.join(data, "t10k-labels-idx1-ubyte.gz")).astype(np.int32)
    for name, model_flag in (models or {name: name for name in MODELS}).items():
        ckpt, st = os.path.join(work, f"{name}.ckpt"), os.path.join(work, f"{name}-trained.safetensors")
        subprocess.run([args.ktr, "train", "--data", data, "--model", model_flag, "--epochs", "1", "--batch", "32",
                        "--threads", "2", "--checkpoint", ckpt], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.ktr, "export", "--checkpoint", ckpt, "--out", st], check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run([args.ktr, "eval", "--checkpoint", ckpt, "--data", data, "--threads", "2"],
                             check=True, capture_output=True, text=True).stdout
        ktr_acc, n = accuracy_line(out)
        ktr_loss = float(re.search(r"accuracy [0-9.]+%, loss ([0-9.]+)", out).group(1))
        model, params, x = exported(st, images)
        logits = model.apply(params, x)
        flax_acc = float((np.argmax(logits, -1) == labels).mean())
        flax_loss = float(optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean())
        ok = abs(flax_acc - ktr_acc) * n <= 1.0 + 1e-6
        failures += [] if ok else [f"ktr->flax {name}"]
        print(f"{name}: trained in ktr (200 steps), exported; test accuracy ktr eval {100 * ktr_acc:.2f}%, "
              f"Flax on the exported weights {100 * flax_acc:.2f}% ({'ok' if ok else 'FAIL'}, within one sample)")
        # ktr eval prints the loss to 4 decimals: its rounding (5e-5) on top of the relative tolerance.
        ok = abs(flax_loss - ktr_loss) <= RTOL * ktr_loss + 5e-5
        failures += [] if ok else [f"ktr->flax {name} loss"]
        print(f"{name}: test loss (cross-entropy mean) ktr eval {ktr_loss:.4f}, Flax on the exported weights "
              f"{flax_loss:.6f} ({'ok' if ok else 'FAIL'}, within {RTOL:g} relative and the printed rounding)")


def regression_data(work):
    """2000 samples of 6 float32 features on different scales (the per-feature transform matters), a smooth
    nonlinear target (N, 1) with a little noise; the first 1600 train, the last 400 are held out."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2000, 6)) * [1, 3, 0.5, 10, 2, 0.2] + [0, 1, -2, 5, 0, 3]).astype(np.float32)
    z = (x - [0, 1, -2, 5, 0, 3]) / [1, 3, 0.5, 10, 2, 0.2]
    y = np.sin(2 * z[:, 0]) + 0.5 * np.tanh(z[:, 1] * z[:, 2]) + 0.3 * z[:, 3] * np.cos(z[:, 4]) - 0.2 * z[:, 5] ** 2
    y = (y + 0.05 * rng.normal(size=2000))[:, None].astype(np.float32)
    return save_splits(work, "regression", x, y, 1600)


def save_splits(work, name, x, y, n_train):
    """x and y split at n_train into {name}-{x,y}-{train,test}.npy; their paths as xtrain, ytrain, xtest, ytest."""
    paths = {}
    for part, rows in (("train", slice(0, n_train)), ("test", slice(n_train, None))):
        for kind, array in (("x", x), ("y", y)):
            paths[kind + part] = os.path.join(work, f"{name}-{kind}-{part}.npy")
            np.save(paths[kind + part], np.ascontiguousarray(array[rows], np.float32))
    return paths


def field_data(work):
    """1200 periodic 16x16 fields (a few random Fourier modes each) and the same fields one step of
    advection-diffusion later (np.roll: periodic), (N, 16, 16, 1); the first 1000 train."""
    rng = np.random.default_rng(1)
    n, grid = 1200, np.arange(16) * 2 * np.pi / 16
    u = np.zeros((n, 16, 16))
    for _ in range(4):
        kx, ky = rng.integers(1, 4, (2, n, 1, 1))
        phase, amp = rng.uniform(0, 2 * np.pi, (n, 1, 1)), rng.normal(0, 1, (n, 1, 1))
        u += amp * np.sin(kx * grid[:, None] + ky * grid[None, :] + phase)
    lap = np.roll(u, 1, 1) + np.roll(u, -1, 1) + np.roll(u, 1, 2) + np.roll(u, -1, 2) - 4 * u
    v = u + 0.2 * lap - 0.5 * (np.roll(u, -1, 2) - np.roll(u, 1, 2)) / 2
    return save_splits(work, "field", u[..., None], v[..., None], 1000)


def acceptance_case(args, work, failures, name, model_desc, paths, loss, epochs):
    """Trains model_desc in ktr on .npy arrays, exports it; Flax on the exported weights must score the held-out
    MSE `ktr eval` prints (over every element of a field), 1e-4 relative."""
    arrays = ["--features", paths["xtrain"], "--targets", paths["ytrain"],
              "--test-features", paths["xtest"], "--test-targets", paths["ytest"]]
    ckpt, st = os.path.join(work, f"{name}.ckpt"), os.path.join(work, f"{name}-trained.safetensors")
    subprocess.run([args.ktr, "train", *arrays, "--model", model_desc, "--loss", loss, "--epochs", str(epochs),
                    "--batch", "32", "--threads", "2", "--checkpoint", ckpt], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([args.ktr, "export", "--checkpoint", ckpt, "--out", st], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([args.ktr, "eval", "--checkpoint", ckpt, *arrays, "--threads", "2"],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"held-out split(?: \([^)]*\))?: mse ([0-9.eE+-]+), rmse [0-9.eE+-]+(?:, loss [0-9.eE+-]+)? over ([0-9]+) samples", out)
    model, params, x = exported(st, np.load(paths["xtest"]))
    err = np.asarray(model.apply(params, x), np.float64) - np.load(paths["ytest"])
    flax_mse = float(np.mean(err ** 2))
    ktr_mse = float(m.group(1)) if m else float("nan")
    ok = m is not None and int(m.group(2)) == len(err) and abs(flax_mse - ktr_mse) <= RTOL * ktr_mse + 1e-7
    failures += [] if ok else [f"acceptance {name}"]
    print(f"{name}: {model_desc}, {loss}, trained in ktr on .npy arrays, exported; test mse ktr eval {ktr_mse:.6g}, "
          f"Flax on the exported weights {flax_mse:.6g} ({'ok' if ok else 'FAIL'}, within {RTOL:g} relative)")


def acceptance(args, data, work, failures):
    """The issues' acceptance: a regression MLP (silu, layernorm, tanh, dropout; huber loss), a U-Net on 16x16
    fields and a residual MLP, each trained in ktr on .npy arrays and exported, score in Flax what `ktr eval`
    prints; a CNN description (conv5x5 gelu, maxpool2, conv3x3, avgpool2) does the same on Fashion-MNIST."""
    acceptance_case(args, work, failures, "regression", REGRESSION_MODEL, regression_data(work), "huber", 5)
    acceptance_case(args, work, failures, "unet", ACCEPTANCE_UNET, field_data(work), "mse", 4)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2000, 8)).astype(np.float32)
    y = (np.sin(x[:, :4]).sum(1) + 0.5 * x[:, 4] * x[:, 5] - 0.3 * x[:, 6] ** 2 + 0.1 * x[:, 7])[:, None]
    acceptance_case(args, work, failures, "residual", ACCEPTANCE_RESIDUAL, save_splits(work, "residual", x, y, 1600),
                    "mse", 5)
    ktr_to_flax(args, data, work, failures, {"conv_gelu_pools": ACCEPTANCE_CNN})


def flax_to_ktr(args, data, work, failures):
    images = read_idx(os.path.join(data, "train-images-idx3-ubyte.gz"))[..., None].astype(np.float32) / 255
    labels = read_idx(os.path.join(data, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    test_x = read_idx(os.path.join(data, "t10k-images-idx3-ubyte.gz"))[..., None].astype(np.float32) / 255
    test_y = read_idx(os.path.join(data, "t10k-labels-idx1-ubyte.gz"))
    for name, desc in MODELS.items():
        model = FromDescription(desc)
        params = model.init(jax.random.PRNGKey(2), images[:1])
        opt = optax.adam(1e-3)
        state = opt.init(params)

        @jax.jit
        def step(params, state, x, y):
            grads = jax.grad(lambda p: loss_fn(model, p, x, y)[0])(params)
            updates, state = opt.update(grads, state, params)
            return optax.apply_updates(params, updates), state

        for i in range(0, 200 * 32, 32):
            j = i % (len(images) - 32)
            params, state = step(params, state, images[j:j + 32], labels[j:j + 32])
        flax_acc = float((np.argmax(model.apply(params, test_x), -1) == test_y).mean())
        st, ckpt = os.path.join(work, f"{name}-flax.safetensors"), os.path.join(work, f"{name}-flax.ckpt")
        save_file(flat(params), st, metadata={"ktr.normalize_scale": repr(1 / 255), "ktr.normalize_shift": "0"})
        subprocess.run([args.ktr, "import", "--model", name, "--weights", st, "--out", ckpt], check=True,
                       stdout=subprocess.DEVNULL)
        ktr_acc, n = accuracy_line(subprocess.run([args.ktr, "eval", "--checkpoint", ckpt, "--data", data],
                                                  check=True, capture_output=True, text=True).stdout)
        ok = abs(flax_acc - ktr_acc) * n <= 1.0 + 1e-6
        failures += [] if ok else [f"flax->ktr {name}"]
        print(f"{name}: trained in Flax (200 Adam steps), imported; test accuracy Flax {100 * flax_acc:.2f}%, "
              f"ktr eval {100 * ktr_acc:.2f}% ({'ok' if ok else 'FAIL'}, within one sample)")


def rl_mlp(params, prefix, x, hidden):
    """The dense network whose Flax-named parameters start with `prefix` (Dense_0, Dense_1, ...), `hidden` after
    every layer but the last."""
    layers = sorted({k[len(prefix):].split(".")[0] for k in params if k.startswith(prefix)})
    for i, name in enumerate(layers):
        x = x @ params[f"{prefix}{name}.kernel"] + params[f"{prefix}{name}.bias"]
        if i + 1 < len(layers):
            x = hidden(x)
    return x


def rl_one_update(args, work, failures):
    """One update of ktr's TD3 and DDPG against the same update in JAX (see check 6 above)."""
    gamma, rho, lr, clip, lo, hi = 0.9, 0.8, 0.1, 0.3, -1.0, 1.0

    for algo in ("td3", "ddpg", "td3_per"):
        out = os.path.join(work, f"rl-{algo}.safetensors")
        subprocess.run([args.rl_tool, algo, out], check=True)
        k = {n: jnp.asarray(v) for n, v in load_file(out).items()}
        critics = 1 if algo == "ddpg" else 2
        per = algo == "td3_per"  # prioritized replay, 2-step windows: gamma^2, weighted losses, new priorities
        w = k["w"] if per else jnp.ones_like(k["r"])
        before = {n[len("before."):]: v for n, v in k.items() if n.startswith("before.")}
        after = {n[len("after."):]: v for n, v in k.items() if n.startswith("after.")}
        s, s2, r, d = k["s"], k["s_next"], k["r"], k["d"]
        a = k["a"][:, s.shape[1]:]
        a_next = k["target_input"][:, s.shape[1]:]
        print(f"rl {algo}: one update, batch {s.shape[0]}, {critics} critic(s)")
        policy = lambda p, pre, x: rl_mlp(p, pre, x, jnp.tanh)
        critic = lambda p, pre, x, u: rl_mlp(p, pre, jnp.concatenate([x, u], axis=1), nn.relu)[:, 0]
        # The smoothed target action: the target policy's plus noise clipped to +-clip, clamped to [lo, hi].
        pt = policy(before, "policy_target.", s2)
        inside = (a_next > lo) & (a_next < hi)
        smooth_ok = bool(jnp.all(jnp.where(inside, jnp.abs(a_next - pt) <= clip + 1e-5, True)))
        print(f"  {'target smoothing':28s} {'ok' if smooth_ok else 'FAIL'}")
        if not smooth_ok:
            failures.append(f"rl {algo} target smoothing")
        q_next = jnp.min(jnp.stack([critic(before, f"critic{i}_target.", s2, a_next) for i in range(critics)]), 0)
        y = r + (gamma ** 2 if per else gamma) * (1 - d) * q_next
        if per and not bool(jnp.any(jnp.abs(w - 1) > 1e-3)):
            failures.append(f"rl {algo}: the importance weights are all 1, the weighting is not checked")
        if per:  # each drawn leaf's raw priority is now |critic 0 (before its step) - y| + 1e-6, the last draw's
            td = jnp.abs(critic(before, "critic0.", s, a) - y) + 1e-6
            last = {int(leaf): b for b, leaf in enumerate(k["leaf"].tolist())}
            got = jnp.asarray([k["priorities"][leaf] for leaf in last])
            close("priorities", got, jnp.asarray([td[b] for b in last.values()]), failures)
        q_loss = 0.0
        new = {}
        for i in range(critics):
            names = [n for n in before if n.startswith(f"critic{i}.")]
            loss = lambda p: jnp.mean(w * (critic({**before, **p}, f"critic{i}.", s, a) - y) ** 2)
            value, grads = jax.value_and_grad(loss)({n: before[n] for n in names})
            q_loss += value
            for n in names:
                new[n] = before[n] - lr * grads[n]
        close("critic loss (sum)", k["q_loss"][0], q_loss, failures)
        # The policy's loss through the first critic as just updated.
        names = [n for n in before if n.startswith("policy.")]
        loss = lambda p: -jnp.mean(critic(new, "critic0.", s, policy(p, "policy.", s)))
        value, grads = jax.value_and_grad(loss)({n: before[n] for n in names})
        close("policy loss", k["p_loss"][0], value, failures)
        for n in names:
            new[n] = before[n] - lr * grads[n]
        for n in sorted(new):
            close(f"step {n}", after[n] - before[n], new[n] - before[n], failures)
        for n in sorted(new):
            net, param = n.split(".", 1)
            t = f"{net}_target.{param}"
            close(f"polyak {t}", after[t], rho * before[t] + (1 - rho) * new[n], failures)


def rl_sac_update(args, work, failures):
    """One SAC update of ktr's (state-dependent and free log sigma, alpha tuned, SGD everywhere) against the same
    update in JAX, from the same weights, batch and noise: log alpha's step, the target actions, the critics' and the
    policy's losses, every network's step (the reparameterised policy gradient included) and the critics' Polyak
    averages."""
    gamma, rho, lr = 0.9, 0.8, 0.1

    def log1m_tanh2(u):
        return 2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u))

    for variant in ("sac", "sac_free"):
        out = os.path.join(work, f"rl-{variant}.safetensors")
        subprocess.run([args.rl_tool, variant, out], check=True)
        k = {n: jnp.asarray(v) for n, v in load_file(out).items()}
        before = {n[len("before."):]: v for n, v in k.items() if n.startswith("before.")}
        after = {n[len("after."):]: v for n, v in k.items() if n.startswith("after.")}
        s, s2, r, d = k["s"], k["s_next"], k["r"], k["d"]
        S, A = s.shape[1], k["eps_policy"].shape[1]
        a_old = k["a"][:, S:]
        print(f"rl {variant}: one update, batch {s.shape[0]}, alpha tuned")
        critic = lambda p, pre, x, u: rl_mlp(p, pre, jnp.concatenate([x, u], axis=1), nn.relu)[:, 0]

        def sample(p, x, eps):
            out_ = rl_mlp(p, "policy.", x, jnp.tanh)
            mu = out_[:, :A]
            ls = p["log_sigma"][None, :] if variant == "sac_free" else out_[:, A:]
            ls = jnp.clip(ls, -20.0, 2.0)
            u = mu + jnp.exp(ls) * eps
            logp = jnp.sum(-0.5 * eps ** 2 - ls - 0.5 * jnp.log(2 * jnp.pi) - log1m_tanh2(u), axis=1)
            return jnp.tanh(u), logp

        # log alpha: -mean(log alpha (log pi + target entropy)), target entropy -A, its SGD step.
        _, logp = sample(before, s, k["eps_alpha"])
        log_alpha = before["log_alpha"][0] - lr * (-jnp.mean(logp - A))
        close("log alpha step", after["log_alpha"][0] - before["log_alpha"][0], log_alpha - before["log_alpha"][0],
              failures)
        alpha = jnp.exp(log_alpha)
        a_next, logp_next = sample(before, s2, k["eps_target"])
        close("target action", k["target_input"][:, S:], a_next, failures)
        q_next = jnp.minimum(critic(before, "critic0_target.", s2, a_next), critic(before, "critic1_target.", s2, a_next))
        y = r + gamma * (1 - d) * (q_next - alpha * logp_next)
        q_loss, new = 0.0, {}
        for i in range(2):
            names = [n for n in before if n.startswith(f"critic{i}.")]
            loss = lambda p: jnp.mean((critic({**before, **p}, f"critic{i}.", s, a_old) - y) ** 2)
            value, grads = jax.value_and_grad(loss)({n: before[n] for n in names})
            q_loss += value
            new.update({n: before[n] - lr * grads[n] for n in names})
        close("critic loss (sum)", k["q_loss"][0], q_loss, failures)
        names = [n for n in before if n.startswith("policy.")] + (["log_sigma"] if variant == "sac_free" else [])

        def policy_loss(p):
            act, lp = sample({**before, **p}, s, k["eps_policy"])
            q = jnp.minimum(critic(new, "critic0.", s, act), critic(new, "critic1.", s, act))
            return jnp.mean(alpha * lp - q)

        value, grads = jax.value_and_grad(policy_loss)({n: before[n] for n in names})
        close("policy loss", k["p_loss"][0], value, failures)
        new.update({n: before[n] - lr * grads[n] for n in names})
        for n in sorted(new):
            close(f"step {n}", after[n] - before[n], new[n] - before[n], failures)
        for n in sorted(x for x in new if x.startswith("critic")):
            net, param = n.split(".", 1)
            t = f"{net}_target.{param}"
            close(f"polyak {t}", after[t], rho * before[t] + (1 - rho) * new[n], failures)



# Input derivatives (models/jet.hpp) against JAX on the same weights: u, the spec's columns from jax.jacfwd and
# jax.hessian of the Flax model at each point, and the parameter gradient of sum(su * u) + sum(sd * derivs) from
# jax.grad of the same columns.
JET_MODELS = {
    "jet_tanh_silu": ("in=3 dense:16:tanh dense:16:silu dense:2", "d0 d2 d0,1 d1,1 lap lap0,2"),
    "jet_gelu_sine": ("in=2 dense:12:gelu dense:12:sine dense:12:gelu_tanh dense:1", "d1 d0 d0,0 lap"),
    "jet_sigmoid_softplus": ("in=2 dense:10:sigmoid dense:10:softplus dense:3", "d0 d1 d0,1"),
    "jet_relu_first": ("in=4 dense:16:relu dense:16:elu dense:16:leaky_relu dense:2", "d0 d3"),
}


def spec_columns(spec, d, jac, hess):
    """The spec's columns (m, T) from one point's Jacobian (m, d) and Hessian (m, d, d)."""
    cols = []
    for tok in spec.split():
        if tok.startswith("lap"):
            idx = range(d) if tok == "lap" else [int(i) for i in tok[3:].split(",")]
            cols.append(sum(hess[:, i, i] for i in idx))
        else:
            ij = [int(i) for i in tok[1:].split(",")]
            cols.append(jac[:, ij[0]] if len(ij) == 1 else hess[:, ij[0], ij[1]])
    return jnp.stack(cols, axis=-1)


def jet_derivatives(args, work, failures):
    rng = np.random.default_rng(3)
    for name, (desc, spec) in JET_MODELS.items():
        model = FromDescription(desc)
        d = input_shape(desc)[0]
        x = rng.uniform(-1.5, 1.5, (6, d)).astype(np.float32)
        params = model.init(jax.random.PRNGKey(2), x)
        tokens = len(spec.split())
        m = model.apply(params, x).shape[1]
        su = rng.normal(0, 1, (6, m)).astype(np.float32)
        sd = rng.normal(0, 1, (6, m, tokens)).astype(np.float32)
        weights = os.path.join(work, f"{name}.safetensors")
        save_file(flat(params), weights)
        paths = {k: os.path.join(work, f"{name}-{k}.npy") for k in ("x", "su", "sd")}
        for k, v in (("x", x), ("su", su), ("sd", sd)):
            np.save(paths[k], v)
        out = os.path.join(work, f"{name}-jet.safetensors")
        subprocess.run([args.tool, "--jet", desc, weights, paths["x"], spec, paths["su"], paths["sd"], out],
                       check=True)
        ktr = load_file(out)

        def columns(p):
            f = lambda point: model.apply(p, point[None])[0]
            u = jax.vmap(f)(x)
            jac = jax.vmap(jax.jacfwd(f))(x)
            hess = jax.vmap(jax.hessian(f))(x)
            return u, jax.vmap(lambda j, h: spec_columns(spec, d, j, h))(jac, hess)

        u, derivs = columns(params)
        grads = jax.grad(lambda p: jnp.sum(su * columns(p)[0]) + jnp.sum(sd * columns(p)[1]))(params)
        print(f"{name}: {desc} | {spec}")
        close("u", ktr["u"], u, failures)
        close("derivs", ktr["derivs"], derivs, failures)
        for k, v in flat(grads).items():
            close(f"grad {k}", ktr[f"grad.{k}"], v, failures)


# The checks above, each runnable on its own (--section): they share nothing but the inputs, so --jobs runs them
# as separate processes, that many at a time (each JAX process keeps about one core busy).
SECTIONS = {  # the longest first
    "same_weights": lambda args, data, work, failures: same_weights_same_batch(args, work, failures),
    "same_weights_fields": lambda args, data, work, failures: same_weights_same_batch(args, work, failures, True),
    "jets": lambda args, data, work, failures: jet_derivatives(args, work, failures),
    "bf16": lambda args, data, work, failures: bf16_mixed_precision(args, work, failures),
    "acceptance": acceptance,
    "flax_to_ktr": flax_to_ktr,
    "ktr_to_flax": ktr_to_flax,
    "rl_sac": lambda args, data, work, failures: rl_sac_update(args, work, failures),
    "rl_update": lambda args, data, work, failures: rl_one_update(args, work, failures),
}
DATA_SECTIONS = {"acceptance", "flax_to_ktr", "ktr_to_flax"}  # the ones that read Fashion-MNIST


def run_sections(args, names):
    """Runs `names` in this process; the failures."""
    failures = []
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        if DATA_SECTIONS.intersection(names):
            prepare_data(args, data)
        for name in names:
            start = time.monotonic()
            SECTIONS[name](args, data, work, failures)
            print(f"[{name}: {time.monotonic() - start:.0f} s]")
    return failures


def run_in_parallel(args):
    """Every section as its own process, args.jobs at a time; each one's output printed whole, in order."""
    base = [sys.executable, os.path.abspath(__file__), "--ktr", args.ktr, "--tool", args.tool, "--rl-tool",
            args.rl_tool, "--fashion-mnist", args.fashion_mnist]
    def one(name):
        return subprocess.run(base + ["--section", name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        runs = {name: pool.submit(one, name) for name in SECTIONS}
        failures = []
        for name, run in runs.items():
            out = run.result()
            sys.stdout.write(out.stdout)
            sys.stdout.flush()
            if out.returncode != 0:
                failures.append(f"section {name} (exit {out.returncode})")
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ktr", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--rl-tool", required=True)
    p.add_argument("--fashion-mnist", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--section", choices=list(SECTIONS), help="run this check alone")
    p.add_argument("--jobs", type=int, default=1, help="run the checks as that many processes at a time")
    args = p.parse_args()
    if args.section:
        failures = run_sections(args, [args.section])
        if failures:
            print(f"crosscheck {args.section}: FAILED: " + ", ".join(failures))
        return 1 if failures else 0
    print(f"jax {jax.__version__}, optax {optax.__version__}, numpy {np.__version__}; tolerance {RTOL:g} relative")
    failures = run_in_parallel(args) if args.jobs > 1 else run_sections(args, list(SECTIONS))
    print("crosscheck: " + ("all checks passed" if not failures else "FAILED: " + ", ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
