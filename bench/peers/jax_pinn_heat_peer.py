"""The heat problem of examples/c/pinn_heat.c in JAX, for the accuracy comparison: u_t = 0.4 u_xx on [0, 1]^2,
u(x, 0) = sin(pi x), u = 0 at x = 0 and 1. The same points (1,024 interior from the plastic-number recurrence, 128
boundary, 128 initial), network (2 inputs, three tanh layers of 32, 1 output, lecun_normal kernels and zero biases
as Flax's Dense), loss (the three mean squared terms summed), Adam (Optax's, 2e-3 cosine-decayed towards 1e-4 over
4,000 steps) for ADAM steps, then optax.lbfgs (10 pairs, its zoom line search) for LBFGS iterations. Each seed
draws its own initial weights.

  python jax_pinn_heat_peer.py --seeds 1,2,3,4,5 --adam 1500 --lbfgs 500
Prints one line per seed: seed=S adam_l2=E1 adam_loss=L1 lbfgs_l2=E2 lbfgs_loss=L2 lbfgs_evaluations=N (relative L2 errors on a 101 x 101
grid against exp(-0.4 pi^2 t) sin(pi x); N counts the line search's evaluations too).
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax

NI, NB, N0, G = 1024, 128, 128, 101


def points():
    i = np.arange(1, NI + 1, dtype=np.float64)
    interior = np.stack([np.fmod(0.5 + 0.7548776662466927 * i, 1.0), np.fmod(0.5 + 0.5698402909980532 * i, 1.0)], 1)
    b = np.arange(NB)
    boundary = np.stack([(b % 2).astype(np.float64), (b // 2) / (NB / 2 - 1)], 1)
    initial = np.stack([np.arange(N0) / (N0 - 1), np.zeros(N0)], 1)
    return [jnp.asarray(p, jnp.float32) for p in (interior, boundary, initial)]


def init(key, sizes=(2, 32, 32, 32, 1)):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.nn.initializers.lecun_normal()(sub, (fan_in, fan_out)), jnp.zeros(fan_out)))
    return params


def mlp(params, point):
    h = point
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return (h @ w + b)[0]


def make_loss(interior, boundary, initial):
    def residual(params, p):
        u = lambda q: mlp(params, q)
        ut = jax.grad(u)(p)[1]
        uxx = jax.grad(lambda q: jax.grad(u)(q)[0])(p)[0]
        return ut - 0.4 * uxx

    def loss(params):
        r = jax.vmap(lambda p: residual(params, p))(interior)
        ub = jax.vmap(lambda p: mlp(params, p))(boundary)
        u0 = jax.vmap(lambda p: mlp(params, p))(initial)
        return jnp.mean(r**2) + jnp.mean(ub**2) + jnp.mean((u0 - jnp.sin(jnp.pi * initial[:, 0])) ** 2)

    return loss


def relative_l2(params):
    x, t = np.meshgrid(np.arange(G) / (G - 1), np.arange(G) / (G - 1))
    grid = jnp.asarray(np.stack([x.ravel(), t.ravel()], 1), jnp.float32)
    u = np.asarray(jax.vmap(lambda p: mlp(params, p))(grid), np.float64)
    exact = np.exp(-0.4 * np.pi**2 * t.ravel()) * np.sin(np.pi * x.ravel())
    return float(np.sqrt(np.sum((u - exact) ** 2) / np.sum(exact**2)))


def main():
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--seeds", default="1,2,3,4,5")
    a.add_argument("--adam", type=int, default=1500)
    a.add_argument("--lbfgs", type=int, default=500)
    args = a.parse_args()
    loss = make_loss(*points())
    adam = optax.adam(optax.cosine_decay_schedule(2e-3, 4000, alpha=1e-4 / 2e-3))
    lbfgs = optax.lbfgs(memory_size=10)
    value_and_grad = optax.value_and_grad_from_state(loss)

    @jax.jit
    def adam_steps(params, state):
        def step(carry, _):
            prm, st = carry
            grads = jax.grad(loss)(prm)
            updates, st = adam.update(grads, st, prm)
            return (optax.apply_updates(prm, updates), st), None

        return jax.lax.scan(step, (params, state), None, length=args.adam)[0]

    @jax.jit
    def lbfgs_steps(params):
        def step(carry, _):
            prm, st = carry
            value, grads = value_and_grad(prm, state=st)
            updates, st = lbfgs.update(grads, st, prm, value=value, grad=grads, value_fn=loss)
            used = optax.tree_utils.tree_get(st, "num_linesearch_steps")
            return (optax.apply_updates(prm, updates), st), used

        return jax.lax.scan(step, (params, lbfgs.init(params)), None, length=args.lbfgs)

    for seed in [int(s) for s in args.seeds.split(",")]:
        params = init(jax.random.PRNGKey(seed))
        params, _ = adam_steps(params, adam.init(params))
        after_adam, adam_loss = relative_l2(params), float(loss(params))
        (params, _), used = lbfgs_steps(params)
        print(
            f"seed={seed} adam_l2={after_adam:.3e} adam_loss={adam_loss:.3e} lbfgs_l2={relative_l2(params):.3e} "
            f"lbfgs_loss={float(loss(params)):.3e} lbfgs_evaluations={int(np.sum(np.asarray(used)))}",
            flush=True,
        )


if __name__ == "__main__":
    main()
