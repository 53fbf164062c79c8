"""Burgers' physics-informed training step in JAX, written the fast way: the residual u_t + u u_x - nu u_xx by
nested jax.grad, vmapped over the collocation points, Adam from Optax, 16 steps per jit call by lax.scan. The same
network (2 inputs, DEPTH tanh layers of WIDTH, 1 output), points and steps as `ktr bench derivatives`.

  python jax_pinn_peer.py --widths 20,64,256 --depth 4 --points 2048 --steps 64
Prints one line per width: width=W steps_per_s=S (after a compiled warm-up call).
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

NU = 0.01 / np.pi


def init(key, width, depth):
    sizes = [2] + [width] * depth + [1]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (fan_in, fan_out)) / np.sqrt(fan_in), jnp.zeros(fan_out)))
    return params


def mlp(params, point):
    h = point
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return (h @ w + b)[0]


def residual(params, point):
    u = lambda p: mlp(params, p)
    du = jax.grad(u)(point)  # (u_x, u_t)
    uxx = jax.grad(lambda p: jax.grad(u)(p)[0])(point)[0]
    return du[1] + u(point) * du[0] - NU * uxx


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--widths", default="20,64,256")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--points", type=int, default=2048)
    p.add_argument("--steps", type=int, default=64, help="timed steps (a multiple of 16)")
    a = p.parse_args()
    rng = np.random.default_rng(5)
    points = jnp.asarray(np.stack([rng.uniform(-1, 1, a.points), rng.uniform(0, 1, a.points)], 1), jnp.float32)
    opt = optax.adam(1e-3)

    def loss(params):
        return jnp.mean(jax.vmap(lambda q: residual(params, q))(points) ** 2)

    @jax.jit
    def sixteen(params, state):
        def step(carry, _):
            prm, st = carry
            value, grads = jax.value_and_grad(loss)(prm)
            updates, st = opt.update(grads, st, prm)
            return (optax.apply_updates(prm, updates), st), value
        return jax.lax.scan(step, (params, state), None, length=16)

    for width in [int(w) for w in a.widths.split(",")]:
        params = init(jax.random.PRNGKey(0), width, a.depth)
        carry = (params, opt.init(params))
        carry, losses = sixteen(*carry)
        jax.block_until_ready(losses)
        t0 = time.perf_counter()
        for _ in range(a.steps // 16):
            carry, losses = sixteen(*carry)
        jax.block_until_ready(losses)
        print(f"width={width} steps_per_s={a.steps / (time.perf_counter() - t0):.1f}", flush=True)


if __name__ == "__main__":
    main()
