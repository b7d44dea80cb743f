"""Time u_xx of the reference 4x50 tanh MLP on 1500 points with several autodiff forms.

Reproduce:  python -m benchmarks.derivatives
Writes benchmarks/results/derivatives.{md,json}.

Each variant is jitted; we time (a) u_xx alone and (b) the gradient w.r.t. the network
parameters of mean(u_xx^2) - what one training step needs. Median of repeats, compile
excluded (reported separately).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp

from cgmpinn_jax.nn import _nets as nets
from cgmpinn_jax.derivatives import partial, partial_jvp, partial_reverse

from benchmarks import runcache

N = 1500
REPEATS = 50


def variants():
    def nested_jvp(model, x):
        return jax.vmap(partial_jvp(model, 0, 0))(x)

    def taylor_jet2(model, x):
        # what cgmpinn_jax.derivatives.partial(model, 0, 0) uses for the package's networks
        return jax.vmap(partial(model, 0, 0))(x)

    def rev_over_rev(model, x):
        return jax.vmap(partial_reverse(model, 0, 0))(x)

    def hessian(model, x):
        return jax.vmap(lambda z: jax.hessian(model)(z)[0, 0])(x)

    def fwd_over_rev(model, x):
        return jax.vmap(lambda z: jax.jvp(lambda y: jax.grad(model)(y)[0], (z,), (jnp.ones_like(z),))[1])(x)

    def batched_jvp(model, x):
        # forward mode on the whole batch at once (no per-point vmap of the jvp)
        f = lambda xs: jax.vmap(model)(xs)
        fx = lambda xs: jax.jvp(f, (xs,), (jnp.ones_like(xs),))[1]
        return jax.jvp(fx, (x,), (jnp.ones_like(x),))[1]

    def jet_taylor(model, x):
        from jax.experimental import jet

        def one(z):
            _, (d1, d2) = jet.jet(model, (z,), ((jnp.ones_like(z), jnp.zeros_like(z)),))
            return d2

        return jax.vmap(one)(x)

    return {
        "Taylor mode by hand (MLP.jet2: value, d1, d2), vmapped [used]": taylor_jet2,
        "nested forward (jvp of jvp), vmapped": nested_jvp,
        "forward over reverse, vmapped": fwd_over_rev,
        "reverse over reverse (grad of grad), vmapped": rev_over_rev,
        "jax.hessian, vmapped": hessian,
        "batched forward (jvp of jvp on the batch)": batched_jvp,
        "Taylor mode (jax.experimental.jet), vmapped": jet_taylor,
    }


def time_fn(fn, *args):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, statistics.median(times)


def main():
    model = nets.mlp(jax.random.key(0), 1)
    x = jax.random.uniform(jax.random.key(1), (N, 1))
    ref = jax.vmap(partial_reverse(model, 0, 0))(x)
    rows = []
    for name, v in variants().items():
        fwd = jax.jit(v)
        loss = eqx.filter_jit(eqx.filter_grad(lambda m, xs: jnp.mean(v(m, xs) ** 2)))
        try:
            err = float(jnp.max(jnp.abs(fwd(model, x) - ref)))
            c1, t1 = time_fn(fwd, model, x)
            c2, t2 = time_fn(loss, model, x)
        except Exception as e:  # a variant that does not apply is reported, not hidden
            rows.append({"variant": name, "error": f"{type(e).__name__}: {e}"[:200]})
            continue
        rows.append({"variant": name, "uxx_ms": 1e3 * t1, "grad_ms": 1e3 * t2, "compile_s": c1 + c2, "max_abs_diff": err})
        print(rows[-1], flush=True)

    machine = runcache.machine_text("{processor}, {cpu_count} cores, {system}, jax {jax}, backend {backend}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "derivatives.json").write_text(json.dumps({"machine": machine, "n_points": N, "repeats": REPEATS, "rows": rows}, indent=1))
    lines = [
        "# u_xx of the 4x50 tanh MLP on 1500 points",
        "",
        f"Machine: {machine}. Median of {REPEATS} repeats, float32, compile excluded.",
        "Command: `python -m benchmarks.derivatives`",
        "",
        "| variant | u_xx (ms) | grad_params mean(u_xx^2) (ms) | compile both (s) | max abs diff vs grad-of-grad |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['variant']} | failed: {r['error']} | | | |")
        else:
            lines.append(f"| {r['variant']} | {r['uxx_ms']:.3f} | {r['grad_ms']:.3f} | {r['compile_s']:.2f} | {r['max_abs_diff']:.1e} |")
    (out / "derivatives.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
