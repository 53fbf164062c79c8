"""The fused-path PINN examples (examples/heat_pinn.cpp, examples/burgers_pinn.cpp) in JAX, for the accuracy
comparison: the same problems, networks (lecun_normal kernels and zero biases, as Flax's Dense and ktr's init),
terms and weights, point counts drawn again at every Adam step (uniform in the box; on the walls, even points at
the low wall and odd at the high one), Adam (Optax's) on the same cosine schedule, then optax.lbfgs (its zoom line
search, the same memory) from Adam's weights on points drawn once. Each seed draws its own weights and points.

  heat:    u_t = 0.4 u_xx on [0, 1]^2, u = 0 at x = 0, 1, u(x, 0) = sin(pi x); 3 tanh layers of 32; 1,024 interior,
           256 wall and 256 initial points, the last two weighted 10; Adam 1e-2 -> 5e-4; L-BFGS memory 10;
           error on a 101 x 101 grid against exp(-0.4 pi^2 t) sin(pi x).
  burgers: u_t + u u_x = (0.01 / pi) u_xx on [-1, 1] x [0, 1], u(x, 0) = -sin(pi x), u = 0 at x = -1, 1; 8 tanh
           layers of 20; 2,048 interior, 256 initial and 256 wall points; Adam 5e-3 -> 2.5e-4; L-BFGS memory 20 on
           8,192 interior points; error on a 201 x 101 grid against the Cole-Hopf solution.

  python jax_pinn_fused_peer.py heat --seeds 1,2,3 --adam 4000 --lbfgs 1000
Prints one line per seed: seed=S adam_l2=E1 adam_loss=L1 lbfgs_l2=E2 lbfgs_loss=L2 lbfgs_evaluations=N (N counts
the line searches' evaluations too; ktr's L-BFGS steps are evaluations).
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax_pinn_heat_peer import init, mlp  # the network and its initialiser (lecun_normal kernels, zero biases)

PROBLEMS = {
    "heat": dict(lo=(0.0, 0.0), hi=(1.0, 1.0), sizes=(2, 32, 32, 32, 1), interior=1024, lbfgs_interior=1024,
                 walls=256, initial=256, weights=(1.0, 10.0, 10.0), lr=1e-2, memory=10, grid=(101, 101)),
    "burgers": dict(lo=(-1.0, 0.0), hi=(1.0, 1.0), sizes=(2,) + (20,) * 8 + (1,), interior=2048, lbfgs_interior=8192,
                    walls=256, initial=256, weights=(1.0, 1.0, 1.0), lr=5e-3, memory=20, grid=(201, 101)),
}
NU = 0.01 / np.pi


def draw(key, cfg, interior):
    """The three point sets: interior (uniform in the box), walls (x at lo for even points, hi for odd; t uniform),
    initial (t = 0, x uniform)."""
    lo, hi = jnp.asarray(cfg["lo"]), jnp.asarray(cfg["hi"])
    ki, kw, k0 = jax.random.split(key, 3)
    inner = lo + (hi - lo) * jax.random.uniform(ki, (interior, 2))
    n = cfg["walls"]
    t = lo[1] + (hi[1] - lo[1]) * jax.random.uniform(kw, (n,))
    x = jnp.where(jnp.arange(n) % 2 == 0, lo[0], hi[0])
    walls = jnp.stack([x, t], 1)
    x0 = lo[0] + (hi[0] - lo[0]) * jax.random.uniform(k0, (cfg["initial"],))
    initial = jnp.stack([x0, jnp.zeros_like(x0)], 1)
    return inner, walls, initial


def make_loss(problem, cfg):
    wi, ww, w0 = cfg["weights"]

    def residual(params, p):
        u = lambda q: mlp(params, q)
        du = jax.grad(u)(p)
        uxx = jax.grad(lambda q: jax.grad(u)(q)[0])(p)[0]
        if problem == "heat":
            return du[1] - 0.4 * uxx
        return du[1] + u(p) * du[0] - NU * uxx

    def loss(params, points):
        inner, walls, initial = points
        r = jax.vmap(lambda p: residual(params, p))(inner)
        uw = jax.vmap(lambda p: mlp(params, p))(walls)
        u0 = jax.vmap(lambda p: mlp(params, p))(initial)
        target0 = jnp.sin(jnp.pi * initial[:, 0]) * (1.0 if problem == "heat" else -1.0)
        return wi * jnp.mean(r**2) + ww * jnp.mean(uw**2) + w0 * jnp.mean((u0 - target0) ** 2)

    return loss


def cole_hopf(x, t):
    """The Cole-Hopf solution at the arrays x, t (as burgers_pinn.cpp computes it: the trapezoidal rule over +-9
    widths of the heat kernel, the largest exponent taken out)."""
    out = -np.sin(np.pi * x)
    m = t > 0
    xs, ts = x[m][:, None], t[m][:, None]
    w = np.sqrt(4 * NU * ts)
    y = w * (-9 + 18 * np.arange(1201) / 1200)[None, :]
    e = -np.cos(np.pi * (xs - y)) / (2 * np.pi * NU) - (y / w) ** 2
    e = np.exp(e - e.max(1, keepdims=True))
    out[m] = -np.sum(np.sin(np.pi * (xs - y)) * e, 1) / np.sum(e, 1)
    return out


def grid_and_exact(problem, cfg):
    gx, gt = cfg["grid"]
    x, t = np.meshgrid(cfg["lo"][0] + (cfg["hi"][0] - cfg["lo"][0]) * np.arange(gx) / (gx - 1), np.arange(gt) / (gt - 1))
    x, t = x.ravel(), t.ravel()
    exact = np.exp(-0.4 * np.pi**2 * t) * np.sin(np.pi * x) if problem == "heat" else cole_hopf(x, t)
    return jnp.asarray(np.stack([x, t], 1), jnp.float32), exact


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("problem", choices=sorted(PROBLEMS))
    a.add_argument("--seeds", default="1,2,3,4,5")
    a.add_argument("--adam", type=int, default=None, help="Adam steps (heat 4000, burgers 5000)")
    a.add_argument("--lbfgs", type=int, default=None, help="L-BFGS iterations (heat 1000, burgers 4000)")
    args = a.parse_args()
    cfg = PROBLEMS[args.problem]
    steps = args.adam if args.adam is not None else (4000 if args.problem == "heat" else 5000)
    iterations = args.lbfgs if args.lbfgs is not None else (1000 if args.problem == "heat" else 4000)
    loss = make_loss(args.problem, cfg)
    grid, exact = grid_and_exact(args.problem, cfg)
    adam = optax.adam(optax.cosine_decay_schedule(cfg["lr"], max(steps, 1), alpha=0.05))
    lbfgs = optax.lbfgs(memory_size=cfg["memory"])

    def relative_l2(params):
        u = np.asarray(jax.vmap(lambda p: mlp(params, p))(grid), np.float64)
        return float(np.sqrt(np.sum((u - exact) ** 2) / np.sum(exact**2)))

    @jax.jit
    def adam_steps(params, key):
        def step(carry, s):
            prm, st = carry
            grads = jax.grad(loss)(prm, draw(jax.random.fold_in(key, s), cfg, cfg["interior"]))
            updates, st = adam.update(grads, st, prm)
            return (optax.apply_updates(prm, updates), st), None

        return jax.lax.scan(step, (params, adam.init(params)), jnp.arange(steps))[0][0]

    @jax.jit
    def lbfgs_steps(params, points):
        fixed = lambda prm: loss(prm, points)
        value_and_grad = optax.value_and_grad_from_state(fixed)

        def step(carry, _):
            prm, st = carry
            value, grads = value_and_grad(prm, state=st)
            updates, st = lbfgs.update(grads, st, prm, value=value, grad=grads, value_fn=fixed)
            used = optax.tree_utils.tree_get(st, "num_linesearch_steps")
            return (optax.apply_updates(prm, updates), st), used

        return jax.lax.scan(step, (params, lbfgs.init(params)), None, length=iterations)

    for seed in [int(s) for s in args.seeds.split(",")]:
        kinit, kadam, klbfgs = jax.random.split(jax.random.PRNGKey(seed), 3)
        params = adam_steps(init(kinit, cfg["sizes"]), kadam)
        probe = draw(klbfgs, cfg, cfg["lbfgs_interior"])
        after_adam, adam_loss = relative_l2(params), float(loss(params, probe))
        used = np.zeros(0)
        if iterations > 0:
            (params, _), used = lbfgs_steps(params, probe)
        print(
            f"seed={seed} adam_l2={after_adam:.3e} adam_loss={adam_loss:.3e} lbfgs_l2={relative_l2(params):.3e} "
            f"lbfgs_loss={float(loss(params, probe)):.3e} lbfgs_evaluations={int(np.sum(np.asarray(used)))}",
            flush=True,
        )


if __name__ == "__main__":
    main()
