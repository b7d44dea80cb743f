"""Roofline of one training step: FLOPs, milliseconds and fraction of the core's matmul rate.

For each of the six problems x {PINN, CGMPINN}, through the library's public path (the
network of :func:`cgmpinn_jax.nn._nets.mlp` with the method's init and input map, the objective
built from ``problem.pde_residuals`` / ``problem.constraint_residuals`` as the engine builds
it, optax Adam, the CGM weighting of :mod:`cgmpinn_jax.weighting`, ReLoBRaLo of
:mod:`cgmpinn_jax.weighting._balancing`):

* FLOPs of one loss+gradient evaluation (XLA ``cost_analysis()`` of the compiled function);
* ms per Adam step (K steps in a jitted ``lax.fori_loop``; CGMPINN: loss terms -> ReLoBRaLo
  lambdas every step, with fixed sample weights as between two refreshes), per L-BFGS
  evaluation (one jitted loss+gradient call) and per GMM refresh (CGMPINN: residual pass +
  EM fit + CGM weights), each at one and at two threads;
* the same Adam step through the general derivative path (``taylor.fast_path(False)``:
  nested jvp per ``partial``), one thread: the before/after of the derivative fast path;
  and (PINN) with the lanes stacked into one product per layer (``fast_path(stack=True)``),
  the evidence for the CPU default of one product per lane;
* (PINN of ``--engine`` problems) the Adam step through the whole engine, ``cj.train``;
* the floor: a hand-written plain-JAX PINN Adam step (tanh MLP, value and every derivative
  lane in Taylor mode, lanes stacked into one matrix product per layer, optax.adam in a jitted
  fori_loop), one thread;
* in the same worker process, the core's float32 matmul rate (1024^3 and the PINN-shaped
  (lanes N, width) x (width, width) product), so every figure is also a fraction of peak;
* compile seconds per problem.

Every thread count runs in its own worker process (XLA's thread settings are read at start):
one thread = ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"``
and ``taskset -c 0``; two threads = ``--xla_cpu_multi_thread_eigen=true
intra_op_parallelism_threads=2`` and ``taskset -c 0,1``. Timings are medians (and minima) over
``--repeats`` calls after one warm-up call; the load average of the machine is recorded.

The PyTorch figures (the authors' reference implementation, measured on this machine type, one
thread; issue 22) stand beside ours.

Reproduce (from the repository root; < ~10 min on an idle 2-core machine)::

    python -m benchmarks.roofline
    python -m benchmarks.roofline --problems advection_diffusion --threads 1 --repeats 3 --no-write

Writes ``benchmarks/results/roofline.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import runcache

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PROBLEMS = ("poisson1d", "poisson2d", "heat", "advection_diffusion", "damped_wave", "fisher_kpp")
VARIANTS = ("pinn", "cgmpinn")
THREAD_FLAGS = {
    1: runcache.ONE_THREAD_XLA_FLAGS,
    2: "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=2",
}

# PyTorch reference implementation, measured on this machine type, one thread (issue 22).
TORCH = {
    "adam_ms": {("poisson1d", "cgmpinn"): 23.4, ("poisson1d", "pinn"): 20.3,
                ("advection_diffusion", "cgmpinn"): 59.4, ("advection_diffusion", "pinn"): 58.7,
                ("fisher_kpp", "cgmpinn"): 277.0, ("fisher_kpp", "pinn"): 278.0},
    "eval_ms": {"poisson1d": 19.5, "advection_diffusion": 67.8, "fisher_kpp": 251.0},
    "refresh_ms": {"poisson1d": 41.5, "advection_diffusion": 28.2, "fisher_kpp": 137.0},
}
# the hand-written stacked kernel as measured in issue 22 (one thread, this machine type)
ISSUE_HAND_MS = {"poisson1d": 6.7, "advection_diffusion": 17.2, "fisher_kpp": 88.0}
ISSUE_HAND_GFLOP = {"advection_diffusion": 0.579, "fisher_kpp": 3.852}  # per loss+gradient, issue 22
GOAL_MS = {"advection_diffusion": 21.0, "fisher_kpp": 106.0}  # PINN per Adam step, one thread


# ==========================================================================================
# worker: everything below `worker_main` runs inside one process with fixed XLA threads


def _worker_imports():
    global jax, jnp, lax, np, eqx, optax, cj, nets, taylor, weighting, balancing
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax import lax

    import cgmpinn_jax as cj
    from cgmpinn_jax import weighting
    from cgmpinn_jax.weighting import _balancing as balancing
    from cgmpinn_jax.nn import _nets as nets
    from cgmpinn_jax.nn import _taylor as taylor


def _timeit(fn, args, repeats):
    """Median wall, minimum wall and median CPU (process) seconds of ``fn(*args)`` over
    ``repeats`` calls after one warm-up call. CPU time leaves out the time the process
    waited for a core (the machine is shared), not the slowdown of shared caches."""
    jax.block_until_ready(fn(*args))
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn(*args))
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), min(wall), statistics.median(cpu)


def _put(rec, name, timing, per=1):
    med, mn, cpu = timing
    rec[f"{name}_ms"], rec[f"{name}_ms_min"], rec[f"{name}_cpu_ms"] = (1e3 * x / per for x in (med, mn, cpu))


def _compile(jitted, args):
    """(compiled, compile seconds, FLOPs from XLA's cost analysis or None)."""
    t0 = time.perf_counter()
    compiled = jitted.lower(*args).compile()
    seconds = time.perf_counter() - t0
    flops = None
    try:
        ca = compiled.cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        flops = float(ca["flops"]) if ca and "flops" in ca else None
    except Exception:
        pass
    return compiled, seconds, flops


def matmul_rate(repeats: int) -> dict:
    """float32 matmul rate of this process (FLOP/s, from the fastest call): 1024^3 square,
    and the PINN-shaped (8000, 80) x (80, 80) and (32000, 80) x (80, 80) products."""
    out = {}
    hi = lax.Precision.HIGHEST
    shapes = {"square_1024": (1024, 1024, 1024), "pinn_8000x80x80": (8000, 80, 80), "pinn_32000x80x80": (32000, 80, 80)}
    for label, (m, k, n) in shapes.items():
        a = jax.random.normal(jax.random.key(0), (m, k), jnp.float32)
        b = jax.random.normal(jax.random.key(1), (k, n), jnp.float32)
        f = jax.jit(lambda a, b: jnp.dot(a, b, precision=hi))
        _, mn, _ = _timeit(f, (a, b), max(repeats, 5) * 3)
        out[label] = 2.0 * m * k * n / mn
    out["peak"] = max(out.values())
    return out


def _net_settings(problem, variant):
    """(init, input_map) of the method's network on ``problem``."""
    s = cj.get_method(variant).settings(problem)
    return s.init, s.input_map


def _setup(problem, variant):
    d = problem.defaults
    init, input_map = _net_settings(problem, variant)
    model = nets.mlp(jax.random.key(0), problem.dim, d.width, d.depth, init=init, input_map=input_map)
    batch = problem.sample(jax.random.key(1))
    return variant, model, batch


def make_objective(problem, static):
    """``loss(params, batch, w, lam) -> (lam . terms, terms)``: the engine's objective
    (PDE term mean(w r^2), each constraint term the sum of its pieces' mean squares)."""

    def loss(params, batch, w, lam):
        u = eqx.combine(params, static)
        pts, src = batch["pde"]
        r = problem.pde_residuals(u, pts, src)
        cres = problem.constraint_residuals(u, batch)
        cons = [sum(jnp.mean(c**2) for c in cres[t]) for t in problem.terms]
        terms = jnp.stack([jnp.mean(w * r**2)] + cons)
        return jnp.dot(lam, terms), terms

    return loss


def step_parts(problem, net_variant: str, weighted: bool):
    """``(params, static, batch, w, lam, vg)`` of the timed steps: the network of the method
    ``net_variant`` and its training points (:func:`_setup`), per-point weights (unit, or
    non-uniform as after a refresh: any non-uniform w has the same cost), unit term weights,
    and the value and gradient of :func:`make_objective`."""
    _, model, batch = _setup(problem, net_variant)
    params, static = eqx.partition(model, eqx.is_array)
    n_pde = batch["pde"][0].shape[0]
    w = jnp.ones((n_pde,), jnp.float32)
    if weighted:
        w = w + 0.5 * jax.random.uniform(jax.random.key(2), (n_pde,))
    lam = jnp.ones((len(problem.loss_terms),), jnp.float32)
    vg = jax.value_and_grad(make_objective(problem, static), has_aux=True)
    return params, static, batch, w, lam, vg


def adam_loop(vg, params, batch, w, lam, steps: int, relobralo: bool):
    """``(loop, args)``: ``steps`` Adam steps in a ``lax.fori_loop`` (not jitted); with
    ``relobralo`` the term weights are ReLoBRaLo's, updated from every step's terms."""
    opt = optax.adam(1e-3)
    bal = balancing.relobralo(lam.shape[0], history_size=1000) if relobralo else None

    def loop(p, s, lam, bstate):
        def body(i, c):
            p, s, lam, bstate = c
            (_, terms), g = vg(p, batch, w, lam)
            upd, s = opt.update(g, s, p)
            p = optax.apply_updates(p, upd)
            if relobralo:  # ReLoBRaLo lambdas from this step's terms
                lam, bstate = bal.update(terms, bstate)
            return p, s, lam, bstate

        return lax.fori_loop(0, steps, body, (p, s, lam, bstate))

    return loop, (params, opt.init(params), lam, bal.init(jax.random.key(3)) if relobralo else jnp.zeros(()))


def gmm_refresh(problem, static, batch):
    """``(refresh, wstate)``: one GMM refresh (residuals at the snapshot + EM fit + CGM
    weights) as a function of ``(params, wstate)`` (not jitted), and the weighting's state."""
    wt = weighting.cgm_weighting()
    wstate = wt.init(batch["pde"][0].shape[0], jnp.float32)

    def refresh(p, wstate):
        pts, src = batch["pde"]
        return wt.update(problem.pde_residuals(eqx.combine(p, static), pts, src), jnp.float32(0.5), wstate)

    return refresh, wstate


def measure_ours(problem, variant, steps, repeats, path: str = "fast", with_eval: bool = True):
    """Adam step through ``path`` ("fast": the default fast path; "general": nested jvp,
    ``taylor.fast_path(False)``; "stacked": fast path with one stacked product per layer);
    for "fast" with ``with_eval`` also one loss+gradient evaluation (FLOPs, time) and, for
    CGMPINN, one GMM refresh."""
    cgm = variant == "cgmpinn"
    params, static, batch, w, lam, vg = step_parts(problem, variant, weighted=cgm)
    rec = {}
    loop, args = adam_loop(vg, params, batch, w, lam, steps, relobralo=cgm)
    with taylor.fast_path(path != "general", stack=True if path == "stacked" else None):  # read while tracing
        fn, rec["adam_compile_s"], _ = _compile(jax.jit(loop), args)
    _put(rec, "adam", _timeit(fn, args, repeats), steps)
    if path != "fast" or not with_eval:
        return rec

    # one loss+gradient evaluation (what an L-BFGS line-search trial costs): FLOPs and the
    # time of one jitted call ("eval_call": it also pays for allocating its buffers, tens of
    # ms of page faults for Fisher-KPP), and per evaluation in a jitted loop of `steps`
    # evaluations ("eval", as inside the engine's L-BFGS chunks)
    eargs = (params, batch, w, lam)
    vgc, rec["eval_compile_s"], rec["flops"] = _compile(jax.jit(vg), eargs)
    _put(rec, "eval_call", _timeit(vgc, eargs, repeats * 3))

    def eval_loop(p):
        def body(i, c):
            p, acc = c
            (value, _), g = vg(p, batch, w, lam)
            return jax.tree_util.tree_map(lambda x, y: x - 1e-12 * y, p, g), acc + value  # a data dependency

        return lax.fori_loop(0, steps, body, (p, jnp.zeros((), jnp.float32)))

    el, t, _ = _compile(jax.jit(eval_loop), (params,))
    rec["eval_compile_s"] += t
    _put(rec, "eval", _timeit(el, (params,), repeats), steps)

    if cgm:  # one GMM refresh: residuals at the snapshot + EM fit + CGM weights
        refresh, wstate = gmm_refresh(problem, static, batch)
        rf, rec["refresh_compile_s"], _ = _compile(jax.jit(refresh), (params, wstate))
        _put(rec, "refresh", _timeit(rf, (params, wstate), repeats * 3))
        rec["refresh_gmm_status"] = int(rf(params, wstate)[1].last_status)
    return rec


def measure_engine(problem, variant, steps):
    """ms per Adam step through the whole engine (``cj.train``, Adam stage only): the
    difference of the run seconds of ``2 steps`` and ``steps`` steps, per step (fixed costs
    such as the final metrics cancel); includes the engine's refreshes and bookkeeping."""
    runs = {}
    for a in (steps, 2 * steps):
        r = cj.train(problem, variant, cj.TrainConfig(adam={"steps": a}, second={"steps": 0}), key=0, quiet=True)
        runs[a] = (r.run_seconds, r.compile_seconds)
    return {"engine_adam_ms": 1e3 * max(runs[2 * steps][0] - runs[steps][0], 0.0) / steps,
            "engine_compile_s": runs[steps][1], "engine_steps": steps}


# ---- the hand-written stacked kernel (floor reference) --------------------------------

# per problem: first-order axes carried, pure second-order axes, and the residual from lanes
def _hand_spec(problem):
    name = problem.name
    if name == "poisson1d":
        return (0,), (0,), lambda L: L["xx"]
    if name == "poisson2d":
        return (0, 1), (0, 1), lambda L: L["xx"] + L["yy"]
    if name == "heat":
        return (0, 1), (0,), lambda L: L["t"] - L["xx"]
    if name == "advection_diffusion":
        a, nu = problem.a, problem.nu
        return (0, 1), (0,), lambda L: L["t"] + a * L["x"] - nu * L["xx"]
    if name == "damped_wave":
        g, c2 = problem.gamma, problem.c2
        return (0, 1), (0, 1), lambda L: L["tt"] + 2.0 * g * L["t"] - c2 * L["xx"]
    if name == "fisher_kpp":
        D, r = problem.D, problem.r
        return (0, 1), (0,), lambda L: L["t"] - D * L["xx"] - r * L["v"] * (1.0 - L["v"])
    raise ValueError(name)


def hand_stacked(params, X, first, second):
    """Value, first lanes ``first`` and pure second lanes ``second`` of a tanh MLP at X
    (N, d): a list of (N,) lanes. Layer 1 from the constant input tangents; every further
    layer one stacked (lanes N, H) x (H, H) product (concatenate, product, split)."""
    hi = lax.Precision.HIGHEST
    k = len(first)
    sec = [first.index(a) for a in second]
    W, b = params[0]
    t = jnp.tanh(jnp.dot(X, W.T, precision=hi) + b)
    s = 1.0 - t * t
    lanes = [t] + [s * W[:, a] for a in first] + [-2.0 * s * t * W[:, a] ** 2 for a in second]
    for W, b in params[1:-1]:
        Z = jnp.split(jnp.dot(jnp.concatenate(lanes), W.T, precision=hi), len(lanes))
        t = jnp.tanh(Z[0] + b)
        s = 1.0 - t * t
        z1 = Z[1:1 + k]
        lanes = [t] + [s * z for z in z1] + [s * (Z[1 + k + j] - 2.0 * t * z1[i] ** 2) for j, i in enumerate(sec)]
    W, b = params[-1]
    out = jnp.split(jnp.dot(jnp.concatenate(lanes), W.T, precision=hi)[:, 0], len(lanes))
    out[0] = out[0] + b[0]
    return out


def measure_hand(problem, steps, repeats):
    """The hand-written plain-JAX PINN Adam step (same network size, init, points)."""
    from cgmpinn_jax.problems.base import DerivativeMatch, Dirichlet

    _, model, batch = _setup(problem, "pinn")
    if model.input_map is not None:
        raise ValueError("the hand kernel is the PINN's (no input map)")
    params = [(l.weight, l.bias) for l in model.layers]
    first, second, resid = _hand_spec(problem)
    names = {0: "x", 1: "t" if problem.coords[-1] == "t" else "y"}
    pts, src = batch["pde"]

    # constraint points of all pieces in one array; lanes per piece type
    pieces = problem.pieces()
    cpts, slices, n0 = [], [], 0
    for term in problem.terms:
        for piece, (p, tgt) in zip(pieces[term], batch[term]):
            flat = p.reshape(-1, problem.dim)
            cpts.append(flat)
            slices.append((term, piece, n0, flat.shape[0], tgt))
            n0 += flat.shape[0]
    cpts = jnp.concatenate(cpts)
    c_first = tuple(sorted({a for _, pc, *_ in slices for a in
                            ((pc.axis,) if isinstance(pc, DerivativeMatch) else
                             getattr(pc, "axes", ()))}))

    def loss(params):
        lanes = hand_stacked(params, pts, first, second)
        k = len(first)
        L = {"v": lanes[0]}
        for i, a in enumerate(first):
            L[names[a]] = lanes[1 + i]
        for i, a in enumerate(second):
            L[names[a] * 2] = lanes[1 + k + i]
        r = resid(L) - src
        cl = hand_stacked(params, cpts, c_first, ()) if c_first else hand_stacked(params, cpts, (), ())
        total = jnp.mean(r**2)
        for term, piece, start, n, tgt in slices:
            if isinstance(piece, Dirichlet):
                v = cl[0][start:start + n]
            elif isinstance(piece, DerivativeMatch):
                v = cl[1 + c_first.index(piece.axis)][start:start + n]
            else:  # Periodic: pairs (left, right) flattened
                row = 0 if not piece.axes else 1 + c_first.index(piece.axes[0])
                v2 = cl[row][start:start + n].reshape(-1, 2)
                v = v2[:, 0] - v2[:, 1]
            total = total + jnp.mean((v - tgt) ** 2)
        return total

    opt = optax.adam(1e-3)
    vg = jax.value_and_grad(loss)

    def adam_loop(p, s):
        def body(i, c):
            p, s = c
            _, g = vg(p)
            upd, s = opt.update(g, s, p)
            return optax.apply_updates(p, upd), s

        return lax.fori_loop(0, steps, body, (p, s))

    args = (params, opt.init(params))
    fn, compile_s, _ = _compile(jax.jit(adam_loop), args)
    rec = {"hand_compile_s": compile_s}
    _put(rec, "hand_adam", _timeit(fn, args, repeats), steps)
    # cross-check: the same loss as the library's PINN objective at the same parameters
    p0, static = eqx.partition(model, eqx.is_array)
    ours = make_objective(problem, static)(p0, batch, jnp.ones(pts.shape[0]), jnp.ones(len(problem.loss_terms)))[0]
    rec["hand_loss_rel_diff"] = float(abs(jax.jit(loss)(params) - ours) / abs(ours))
    hv, _, rec["hand_flops"] = _compile(jax.jit(vg), (params,))
    _put(rec, "hand_eval", _timeit(hv, (params,), repeats * 3))
    return rec


def worker_main(args) -> None:
    _worker_imports()
    out = {"threads": args.threads, "xla_flags": os.environ.get("XLA_FLAGS", ""),
           "affinity": sorted(os.sched_getaffinity(0)), "jax": jax.__version__,
           "backend": jax.default_backend(), "rows": []}
    out["matmul"] = matmul_rate(args.repeats)
    print(json.dumps({"matmul": out["matmul"]}), file=sys.stderr, flush=True)
    for name in args.problems.split(","):
        problem = cj.get_problem(name)
        steps = max(1, int(round(args.steps * (0.25 if name == "fisher_kpp" else 1.0))))
        reps = max(1, args.repeats // 2) if name == "fisher_kpp" else args.repeats
        t_problem = time.perf_counter()
        for variant in VARIANTS:
            rec = {"problem": name, "variant": variant, "threads": args.threads, "adam_steps_timed": steps}
            rec.update(measure_ours(problem, variant, steps, reps))
            if args.threads == 1 and not args.no_general:
                g = measure_ours(problem, variant, steps, reps, "general")
                rec.update({"general_" + k: v for k, v in g.items()})
            if args.threads == 1 and variant == "pinn" and not args.no_stacked:
                g = measure_ours(problem, variant, steps, reps, "stacked")
                rec.update({"stacked_" + k: v for k, v in g.items()})
            if args.threads == 1 and variant == "pinn" and not args.no_hand:
                rec.update(measure_hand(problem, steps, reps))
            if args.threads == 1 and variant == "pinn" and name in args.engine.split(","):
                rec.update(measure_engine(problem, variant, args.engine_steps if name != "fisher_kpp"
                                          else max(1, args.engine_steps // 4)))
            out["rows"].append(rec)
            print(json.dumps(rec), file=sys.stderr, flush=True)
        out.setdefault("problem_seconds", {})[name] = time.perf_counter() - t_problem
    print("@@RESULT@@" + json.dumps(out), flush=True)


# ==========================================================================================
# driver


def run_worker(threads: int, argv: list[str]) -> dict:
    env = dict(os.environ)
    env["XLA_FLAGS"] = THREAD_FLAGS[threads]
    cpus = "0" if threads == 1 else "0,1"
    cmd = ["taskset", "-c", cpus, sys.executable, "-m", "benchmarks.roofline", "--worker",
           "--threads", str(threads)] + argv
    print("$", f"XLA_FLAGS='{env['XLA_FLAGS']}'", " ".join(shlex.quote(c) for c in cmd), flush=True)
    res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if res.returncode != 0:
        raise SystemExit(f"worker with {threads} thread(s) failed (rc {res.returncode})")
    line = [l for l in res.stdout.splitlines() if l.startswith("@@RESULT@@")][-1]
    return json.loads(line[len("@@RESULT@@"):])


def _f(x, fmt="{:.1f}"):
    return "—" if x is None else fmt.format(x)


def _frac(flops, ms, peak):
    if flops is None or ms is None or not peak:
        return None
    return flops / (ms * 1e-3) / peak


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _ms(r, name):
    """'wall (cpu)' cell for the timing ``name``."""
    if r.get(f"{name}_ms") is None:
        return "—"
    return f"{r[f'{name}_ms']:.2f} ({r[f'{name}_cpu_ms']:.2f})"


def render(doc: dict) -> str:
    lines = [
        "# Roofline: FLOPs, ms per step and fraction of the matmul rate",
        "",
        f"Made by `benchmarks/roofline.py` on {doc['machine']} ({doc['date']}, {doc['total_seconds'] / 60:.1f} min). "
        f"Command: `{doc['command']}`.",
        "",
        f"**Load**: load average (1, 5, 15 min) {doc['loadavg_start']} at the start, {doc['loadavg_end']} at the end, on "
        + runcache.machine_text("{cpu_count} cores shared with other work. ")
        + "Wall-clock medians are therefore inflated and noisy; every "
        "cell shows `wall median (CPU-time median)` in ms, CPU time being the process's own CPU seconds (it leaves out "
        "waiting for a core, not the slowdown from shared caches and memory bandwidth). Ratios (speed-up, ours / hand) "
        "and % peak use the CPU-time medians. Minima are in the JSON.",
        "",
        "Matmul rate (float32, fastest call, measured in each worker): "
        + "; ".join(f"{w['threads']} thread(s): peak {w['matmul']['peak'] / 1e9:.1f} GFLOP/s (1024^3: "
                    f"{w['matmul']['square_1024'] / 1e9:.1f}, 8000x80x80: {w['matmul']['pinn_8000x80x80'] / 1e9:.1f}, "
                    f"32000x80x80: {w['matmul']['pinn_32000x80x80'] / 1e9:.1f})" for w in doc["workers"]),
        "",
        "GFLOP = one loss+gradient evaluation (XLA `cost_analysis()`). Adam step = loss+gradient + Adam update "
        "(+ ReLoBRaLo for CGMPINN, fixed CGM weights as between refreshes), K steps in a jitted `fori_loop`. "
        "L-BFGS evaluation = one loss+gradient evaluation inside a jitted loop of K (as in the engine's L-BFGS "
        "chunks; one separate jitted call costs more, `eval_call_*` in the JSON, because every call allocates its "
        "buffers afresh: tens of ms of page faults for Fisher-KPP). GMM refresh = residual pass + EM fit + CGM weights "
        "(CGMPINN). General path = the same Adam step with `taylor.fast_path(False)` (nested jvp per `partial`, "
        "the implementation before the fast path). Hand = the hand-written plain-JAX PINN kernel (value and "
        "derivative lanes in Taylor mode, stacked into one product per layer), the floor of issue 22.",
        "",
    ]
    for w in doc["workers"]:
        peak = w["matmul"]["peak"]
        lines += [f"## {w['threads']} thread(s)", "",
                  "| problem | variant | GFLOP / eval | ms / Adam step | % peak | ms / L-BFGS eval | % peak | "
                  "ms / GMM refresh | general path ms / Adam step | fast-path speed-up | hand kernel ms / Adam step | "
                  "ours / hand |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in w["rows"]:
            fl = r.get("flops")
            lines.append(
                f"| {r['problem']} | {r['variant']} | {_f(fl and fl / 1e9, '{:.3f}')} | {_ms(r, 'adam')} | "
                f"{_f(_frac(fl, r['adam_cpu_ms'], peak), '{:.0%}')} | {_ms(r, 'eval')} | "
                f"{_f(_frac(fl, r['eval_cpu_ms'], peak), '{:.0%}')} | {_ms(r, 'refresh')} | {_ms(r, 'general_adam')} | "
                f"{_f(_ratio(r.get('general_adam_cpu_ms'), r['adam_cpu_ms']), '{:.2f}x')} | {_ms(r, 'hand_adam')} | "
                f"{_f(_ratio(r['adam_cpu_ms'], r.get('hand_adam_cpu_ms')), '{:.2f}')} |")
        lines.append("")
    one = next((w for w in doc["workers"] if w["threads"] == 1), None)
    if one:
        by = {(r["problem"], r["variant"]): r for r in one["rows"]}
        lines += ["## Goal and engine (one thread)", "",
                  "Goal of issue 22: PINN per Adam step at one thread within 1.2x of the hand-written stacked kernel "
                  "(issue's figures on this machine type, idle: 6.7, 17.2, 88.0 ms), i.e. advection-diffusion "
                  "<= 21 ms and Fisher-KPP <= 106 ms. Engine = the same Adam step through `cj.train` (Adam stage "
                  "only; difference of two run lengths, wall clock), which adds the engine's bookkeeping. "
                  "Stacked = the fast path with one stacked `(lanes N, width)` product per layer "
                  "(`taylor.fast_path(stack=True)`) instead of the CPU default of one product per lane.", "",
                  "| problem | ours ms / Adam step | ours GFLOP/s (CPU time) | stacked products | hand kernel (this run) | "
                  "ours / hand | engine ms / Adam step | hand kernel (issue, idle): ms, GFLOP/s | goal |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for p in dict.fromkeys(r["problem"] for r in one["rows"]):
            r = by.get((p, "pinn"))
            if r is None:
                continue
            goal = GOAL_MS.get(p)
            lines.append(
                f"| {p} | {_ms(r, 'adam')} | {_f(_ratio(r['flops'] / 1e6 if r.get('flops') else None, r['adam_cpu_ms']), '{:.1f}')} | "
                f"{_ms(r, 'stacked_adam')} | {_ms(r, 'hand_adam')} | "
                f"{_f(_ratio(r['adam_cpu_ms'], r.get('hand_adam_cpu_ms')), '{:.2f}')} | "
                f"{_f(r.get('engine_adam_ms'), '{:.2f}')} | {_f(ISSUE_HAND_MS.get(p))}, "
                f"{_f(_ratio(1e3 * ISSUE_HAND_GFLOP[p], ISSUE_HAND_MS[p]) if p in ISSUE_HAND_GFLOP else None)} | "
                + (f"<= {goal:.0f} ms: wall {'met' if r['adam_ms'] <= goal else 'not met'}, "
                   f"CPU {'met' if r['adam_cpu_ms'] <= goal else 'not met'}" if goal else "—") + " |")
        lines += ["", "## Beside PyTorch (one thread)", "",
                  "PyTorch = the authors' reference implementation, **measured on this machine type** at one thread "
                  "(figures from issue 22, not re-measured in this run).", "",
                  "| problem | Adam step CGMPINN: ours / PyTorch | Adam step PINN: ours / PyTorch | "
                  "loss+grad eval (CGMPINN): ours / PyTorch | GMM refresh: ours / PyTorch |",
                  "|---|---|---|---|---|"]
        for p in dict.fromkeys(r["problem"] for r in one["rows"]):
            rc, rp = by.get((p, "cgmpinn"), {}), by.get((p, "pinn"), {})
            lines.append(
                f"| {p} | {_ms(rc, 'adam')} / {_f(TORCH['adam_ms'].get((p, 'cgmpinn')))} | "
                f"{_ms(rp, 'adam')} / {_f(TORCH['adam_ms'].get((p, 'pinn')))} | "
                f"{_ms(rc, 'eval')} / {_f(TORCH['eval_ms'].get(p))} | {_ms(rc, 'refresh')} / {_f(TORCH['refresh_ms'].get(p))} |")
        lines.append("")
    lines += ["## Compile seconds", "",
              "Per problem and worker: Adam loop + loss+gradient + GMM refresh of PINN and CGMPINN (fast path; "
              "with the stacked-product PINN Adam loop at one thread), the "
              "general-path Adam loops, the hand kernel.", "",
              "| problem | threads | fast path | general path | hand kernel |", "|---|---|---|---|---|"]
    for w in doc["workers"]:
        for p in dict.fromkeys(r["problem"] for r in w["rows"]):
            rows = [r for r in w["rows"] if r["problem"] == p]
            fast = sum(r.get(k, 0.0) for r in rows for k in ("adam_compile_s", "eval_compile_s", "refresh_compile_s"))
            gen = sum(r.get("general_adam_compile_s", 0.0) for r in rows)
            fast += sum(r.get("stacked_adam_compile_s", 0.0) for r in rows)
            hand = sum(r.get("hand_compile_s", 0.0) for r in rows)
            lines.append(f"| {p} | {w['threads']} | {fast:.1f} | {_f(gen or None)} | {_f(hand or None)} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--threads", default="1,2", help="thread counts, one worker process each")
    ap.add_argument("--steps", type=int, default=20, help="Adam steps per timed call (Fisher-KPP: a quarter)")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls (Fisher-KPP: half)")
    ap.add_argument("--no-general", action="store_true", help="skip the general-path Adam step")
    ap.add_argument("--no-hand", action="store_true", help="skip the hand-written kernel")
    ap.add_argument("--no-stacked", action="store_true", help="skip the stacked-product variant of the fast path")
    ap.add_argument("--engine", default="advection_diffusion,fisher_kpp",
                    help="problems whose PINN Adam step is also timed through cj.train (one thread; '' = none)")
    ap.add_argument("--engine-steps", type=int, default=60, help="engine Adam steps (x1 and x2; Fisher-KPP: a quarter)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write results/")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.threads = int(args.threads)
        worker_main(args)
        return 0
    passthrough = ["--problems", args.problems, "--steps", str(args.steps), "--repeats", str(args.repeats),
                   "--engine", args.engine, "--engine-steps", str(args.engine_steps)]
    passthrough += ["--no-general"] * args.no_general + ["--no-hand"] * args.no_hand + ["--no-stacked"] * args.no_stacked
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    workers = [run_worker(int(t), passthrough) for t in args.threads.split(",")]
    doc = {
        "command": "python -m benchmarks.roofline " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": runcache.machine_text("{processor}, {cpu_count} cores, {system}"),
        "loadavg_start": [round(x, 2) for x in load0],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "total_seconds": time.perf_counter() - t0,
        "torch_reference_one_thread": {"adam_ms": {f"{p}/{v}": x for (p, v), x in TORCH["adam_ms"].items()},
                                       "eval_ms": TORCH["eval_ms"], "refresh_ms": TORCH["refresh_ms"],
                                       "note": "PyTorch reference implementation, measured on this machine type (issue 22)"},
        "issue_hand_kernel_ms": ISSUE_HAND_MS,
        "goal_pinn_adam_ms_one_thread": GOAL_MS,
        "workers": workers,
    }
    md = render(doc)
    print(md)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "roofline.json").write_text(json.dumps(doc, indent=1))
        (RESULTS / "roofline.md").write_text(md)
        print(f"wrote {RESULTS / 'roofline.md'} and {RESULTS / 'roofline.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
