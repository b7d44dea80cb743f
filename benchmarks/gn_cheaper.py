"""Cheaper Gauss-Newton iterations: do sampled rows, a reused factorization or CG pay? (issue 30, item 2)

The Gauss-Newton member forms ``J J^T`` from every row at every iteration; on Fisher-KPP
(9200 x 19761) that product is about 3.3 teraflop, beyond this CPU for a 1500-iteration run.
Three of the anchors' cheaper forms, each against the member's full step from the same start:

* ``rows:f`` -- **sampled rows**: each iteration draws a fraction ``f`` of every group's rows
  (PDE points and each constraint piece, without replacement; the scales ``sqrt(lam / n)``
  follow the sampled counts, so ``J_S^T J_S`` estimates ``J^T J`` without bias) and takes the
  kernel-form step ``d = -J_S^T (J_S J_S^T + mu I)^{-1} r_S`` from them: ``f^2`` of the
  product's flops, ``f^3`` of the factorization's. The trial is judged on the **full**
  objective (accepted only when it falls); ``mu`` adapts by the gain ratio of the full
  decrease to the sampled model's predicted decrease, by the member's rule.
* ``reuse:k`` -- **a reused factorization** (a chord step): after the member's full
  iteration, up to ``k - 1`` more steps ``d = -J_0^T (J_0 J_0^T + mu I)^{-1} r(x)`` with the
  iteration's Jacobian ``J_0`` and Cholesky factor and the current residuals: one forward
  pass and two products with ``J_0`` each, no new Jacobian, product or factorization. A
  chord step is kept only when the objective falls; the first that does not ends the
  iteration's chord steps.
* ``cg:k`` -- **matrix-free conjugate gradients**: the kernel-form system
  ``(J J^T + mu I) a = r`` solved by at most ``k`` Jacobi-preconditioned CG iterations
  (``jax.scipy.sparse.linalg.cg``), each two products with the stored ``J`` (``4 M P`` flops
  against the product's ``2 M^2 P``), no product and no factorization; each trial value of
  ``mu`` runs its own CG. The gain ratio uses the model's decrease ``f - |r + J d|^2`` computed
  with ``J`` (the solve is inexact, so ``mu a`` is not the model residual).

``full`` is the member's step exactly (same rule, same code path as ``rows:1``). All variants
start from the same float64 Adam stage (PINN, the accurate preset's Adam, one ``cj.train``
call) and run in one process, one after the other, so their seconds compare on the same
machine state. An iteration is one Jacobian. The error on the problem's test grid is read every
``--track-every`` iterations (outside the timed steps).

    python -m benchmarks.gn_cheaper --name rows --variants full rows:0.5 rows:0.25
    python -m benchmarks.gn_cheaper --name reuse --variants full reuse:2 reuse:4
    python -m benchmarks.gn_cheaper --name cg --variants full cg:30 cg:150 --budget-s 600

Writes ``benchmarks/results/gn_cheaper.{json,md}`` (one study per ``--name``, the others kept);
``--report-only`` rewrites the report from the record.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

RESULTS = Path(__file__).parent / "results"
THRESHOLDS = (1e-4, 1e-5, 1e-6)


def parse_variant(text: str) -> tuple[str, float]:
    """``"full"`` -> ("rows", 1.0); ``"rows:0.5"``; ``"reuse:4"``; ``"cg:100"``."""
    if text == "full":
        return "rows", 1.0
    kind, _, val = text.partition(":")
    try:
        v = float(val)
    except ValueError:
        v = float("nan")
    if kind == "rows" and 0 < v <= 1:
        return kind, v
    if kind in ("reuse", "cg") and v >= 1 and v == int(v):
        return kind, float(int(v))
    raise argparse.ArgumentTypeError(f"a variant is 'full', 'rows:F' with 0 < F <= 1, or 'reuse:K' or 'cg:K' "
                                     f"with an integer K >= 1; got {text!r}")


def _subsample(problem, batch, w, frac, key):
    """The batch with ``round(frac * n)`` rows of every group drawn without replacement."""
    import jax
    import jax.numpy as jnp

    def take(arrs, k):
        n = arrs[0].shape[0]
        m = max(1, int(round(frac * n)))
        idx = jax.random.permutation(k, n)[:m]
        return tuple(a[idx] for a in arrs), idx

    keys = iter(jax.random.split(key, 1 + sum(len(batch[t]) for t in problem.terms)))
    (pts, src), idx = take(batch["pde"], next(keys))
    sub = {"pde": (pts, src)}
    for term in problem.terms:
        sub[term] = [take(piece, next(keys))[0] for piece in batch[term]]
    return sub, jnp.asarray(w)[idx]


def _cholesky_step(J, A, r, v_s, mu):
    """The member's kernel-form step: ``(d, the model's predicted decrease, the Cholesky factor)``."""
    import jax
    import jax.numpy as jnp

    HIGHEST = jax.lax.Precision.HIGHEST
    L = jnp.linalg.cholesky(A + mu * jnp.eye(A.shape[0], dtype=A.dtype))
    a = jax.scipy.linalg.cho_solve((L, True), r)
    d = -jnp.dot(a, J, precision=HIGHEST)
    return d, v_s - mu * mu * jnp.dot(a, a, precision=HIGHEST), L


def _cg_step(J, diag, r, v_s, mu, iters):
    """The kernel system by at most ``iters`` Jacobi-preconditioned CG iterations: ``(d, the
    model's predicted decrease)``; the solve is inexact, so the model residual ``r + J d`` is
    computed with ``J``."""
    import jax
    import jax.numpy as jnp

    HIGHEST = jax.lax.Precision.HIGHEST

    def matvec(u):
        return jnp.dot(J, jnp.dot(u, J, precision=HIGHEST), precision=HIGHEST) + mu * u

    a = jax.scipy.sparse.linalg.cg(matvec, r, tol=1e-14, maxiter=iters, M=lambda u: u / (diag + mu))[0]
    d = -jnp.dot(a, J, precision=HIGHEST)
    m = r + jnp.dot(J, d, precision=HIGHEST)
    return d, v_s - jnp.dot(m, m, precision=HIGHEST)


def _chord_steps(residuals, unravel, J, L, x, v, value, chords):
    """Up to ``chords`` steps with this iteration's ``J`` and accepted factor ``L`` (none if no
    trial was accepted), each kept only if the objective falls: ``(kept, x, v)``."""
    import jax
    import jax.numpy as jnp

    HIGHEST = jax.lax.Precision.HIGHEST

    def chord(c):
        k, go, xc, vc, rc = c
        d = -jnp.dot(jax.scipy.linalg.cho_solve((L, True), rc), J, precision=HIGHEST)
        rn = residuals(unravel(xc + d))
        vn = jnp.dot(rn, rn, precision=HIGHEST)
        ok = jnp.isfinite(vn) & (vn < vc)
        return (k + ok.astype(jnp.int32), ok, jnp.where(ok, xc + d, xc), jnp.where(ok, vn, vc),
                jnp.where(ok, rn, rc))

    go0 = jnp.all(jnp.isfinite(L)) & (v < value)
    c0 = (jnp.int32(0), go0, x, v, residuals(unravel(x)))
    kept, _, x, v, _ = jax.lax.while_loop(lambda c: (c[0] < chords) & c[1], chord, c0)
    return kept, x, v


def make_iteration(eng, problem, batch, w, lam, kind, val, *, mu_init, mu_min, mu_max, max_trials):
    """jitted ``(params, value, mu, nu, key) -> (params, value, mu, nu, trials, chord steps kept)``."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    from cgmpinn_jax.solvers._gauss_newton import _gram

    lsq = eng.lsq
    frac = val if kind == "rows" else 1.0
    chords = int(val) - 1 if kind == "reuse" else 0
    cg_iters = int(val) if kind == "cg" else 0

    def iteration(params, value, mu, nu, key):
        x, unravel = ravel_pytree(params)
        sb, ws = (batch, w) if frac >= 1 else _subsample(problem, batch, w, frac, key)
        r, J = lsq.jacobian(params, sb, ws, lam)
        A = None if cg_iters else _gram(J, "kernel")
        diag = jnp.sum(J * J, axis=1)  # the diagonal of J J^T
        scale = jnp.sum(diag) / J.shape[1]
        lo, hi = mu_min * scale, mu_max * scale
        mu = jnp.clip(jnp.where(jnp.isnan(mu), mu_init * scale, mu), lo, hi)
        v_s = jnp.dot(r, r, precision=jax.lax.Precision.HIGHEST)  # the sampled objective (= value when frac = 1)

        def body(c):
            t, done, mu, nu, xb, vb, Lb = c
            if cg_iters:
                (d, pred), L = _cg_step(J, diag, r, v_s, mu, cg_iters), Lb
            else:
                d, pred, L = _cholesky_step(J, A, r, v_s, mu)
            new = eng.objective(unravel(x + d), w, lam, batch)[0]
            rho = (value - new) / pred
            ok = jnp.all(jnp.isfinite(d)) & jnp.isfinite(new) & (pred > 0) & (new < value)
            mu_ok = mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            at_max = ~ok & (mu >= hi)
            mu_n = jnp.clip(jnp.where(ok, mu_ok, mu * nu), lo, hi)
            nu_n = jnp.where(ok, 2.0, 2.0 * nu)
            return (t + 1, ok | at_max, mu_n, nu_n, jnp.where(ok, x + d, xb), jnp.where(ok, new, vb),
                    jnp.where(ok, L, Lb))

        c = (jnp.int32(0), jnp.asarray(False), mu, nu, x, value,
             jnp.zeros((), x.dtype) if cg_iters else jnp.full_like(A, jnp.nan))  # no factor in CG
        t, _, mu, nu, xb, vb, L = jax.lax.while_loop(lambda c: (c[0] < max_trials) & ~c[1], body, c)
        kept = jnp.int32(0)
        if chords:
            kept, xb, vb = _chord_steps(lambda p: lsq.residuals(p, batch, w, lam), unravel, J, L, xb, vb, value,
                                        chords)
        return unravel(xb), vb, mu, nu, t, kept

    return jax.jit(iteration)


def run_variant(eng, problem, static, params0, batch, w, lam, variant, *, cfg, seed, max_iters, budget_s,
                track_every, stop_at) -> dict:
    import jax
    import jax.numpy as jnp

    from benchmarks.peer_jinns import _rel_fn, first_reach

    kind, val = parse_variant(variant)
    rel = _rel_fn(problem, static.model)
    it = make_iteration(eng, problem, batch, w, lam, kind, val, mu_init=cfg.gauss_newton.mu_init,
                        mu_min=cfg.gauss_newton.mu_min, mu_max=cfg.gauss_newton.mu_max,
                        max_trials=cfg.gauss_newton.max_trials)
    value = eng.objective(params0, w, lam, batch)[0]
    dt = value.dtype
    mu, nu = jnp.asarray(jnp.nan, dt), jnp.asarray(2.0, dt)
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    compiled = it.lower(params0, value, mu, nu, key).compile()
    compile_s = time.perf_counter() - t0
    params, its, secs, errs, trials, kept, step_s = params0, [0], [0.0], [float(rel(params0.model))], [], [], []
    mus = []
    clock = 0.0
    for k in range(1, max_iters + 1):
        t = time.perf_counter()
        params, value, mu, nu, tr, kp = jax.block_until_ready(
            compiled(params, value, mu, nu, jax.random.fold_in(key, k)))
        dt_k = time.perf_counter() - t
        clock += dt_k
        step_s.append(dt_k), trials.append(int(tr)), kept.append(int(kp))
        if k % track_every == 0 or clock >= budget_s or k == max_iters:
            e = float(rel(params.model))
            its.append(k), secs.append(clock), errs.append(e), mus.append(float(mu))
            if not np.isfinite(e) or e <= stop_at or clock >= budget_s:
                break
    frac = val if kind == "rows" else 1.0
    sub_rows = int(eng.lsq.n_rows(batch if frac >= 1 else _subsample(problem, batch, w, frac, key)[0]))
    return {
        "variant": variant, "kind": kind, "value": val, "rows": sub_rows, "rows_full": int(eng.lsq.n_rows(batch)),
        "compile_seconds": compile_s, "iterations": its[-1], "seconds": clock,
        "seconds_per_iteration_median": float(np.median(step_s)), "trials_mean": float(np.mean(trials)),
        "chord_steps_mean": float(np.mean(kept)), "mu_end": mus[-1] if mus else None,
        "rel_e2_start": errs[0], "rel_e2_end": errs[-1], "rel_e2_best": float(np.min(errs)),
        "reach": {f"{thr:.0e}": first_reach(its, secs, errs, thr) for thr in THRESHOLDS},
        "trace": {"iterations": its, "seconds": secs, "rel_e2": errs, "mu": mus},
    }


def study(problem_name: str, seed: int, variants, *, adam_steps=None, max_iters, budget_s, track_every,
          stop_at) -> dict:
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import cgmpinn_jax as cj
    from benchmarks.peer_jinns import adam_start
    from cgmpinn_jax.training import CompileCache
    from cgmpinn_jax.training._driver import init_state
    from cgmpinn_jax.training._schedule import resolve

    res, adam_wall = adam_start(problem_name, seed, adam_steps, {})
    cfg = cj.TrainConfig.preset("accurate")
    with jax.enable_x64(True), jax.default_matmul_precision("highest"):
        setup = resolve(cj.get_problem(problem_name), cj.get_method("pinn"), cfg)
        static, eng = CompileCache().engine(setup)
        state, _ = init_state(setup, eng, jax.random.key(seed))
        batch = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), res.batch)
        model_params = eqx.partition(res.model, eqx.is_array)[0]
        params0 = eqx.tree_at(lambda t: t.model, state.params, model_params)
        n = batch["pde"][0].shape[0]
        w, lam = jnp.ones(n, jnp.float64), jnp.ones(setup.n_terms, jnp.float64)  # PINN: uniform, unbalanced
        rows = []
        for v in variants:
            r = run_variant(eng, setup.problem, static, params0, batch, w, lam, v, cfg=cfg, seed=seed,
                            max_iters=max_iters, budget_s=budget_s, track_every=track_every, stop_at=stop_at)
            print(json.dumps({k: x for k, x in r.items() if k != "trace"}), flush=True)
            rows.append(r)
    return {"problem": problem_name, "seed": seed, "method": "pinn", "adam_steps": res.adam_steps,
            "adam_seconds": adam_wall, "rel_e2_adam": float(res.metrics.rel_e2), "budget_s": budget_s,
            "max_iters": max_iters, "track_every": track_every, "stop_at": stop_at, "variants": rows}


def _label(v: dict) -> str:
    if v.get("kind", "rows") == "reuse":
        return f"reuse:{int(v['value'])} (up to {int(v['value']) - 1} chord steps)"
    if v.get("kind") == "cg":
        return f"cg:{int(v['value'])} (at most {int(v['value'])} CG iterations per trial)"
    f = v.get("value", v.get("fraction"))
    return "full" if f >= 1 else f"rows:{f:g} ({v['rows']} of {v['rows_full']} rows)"


def render(doc: dict) -> str:
    lines = ["# Cheaper Gauss-Newton iterations against the member's full step", "",
             "Script: `benchmarks/gn_cheaper.py`; record `benchmarks/results/gn_cheaper.json`. An iteration is one "
             "Jacobian; `full` is the member's step. Each study: one process, the same float64 Adam start (PINN) "
             "for every variant, run one after the other; a variant stops at the study's target error, iteration "
             "cap or seconds of steps (compile apart), whichever first.", ""]

    def reach(v, thr):
        r = v["reach"][thr]
        return "never" if r["iterations"] is None else f"{r['iterations']} / {r['seconds']:.0f}"

    for name, st in doc["studies"].items():
        s = st["study"]
        lines += [
            f"## {name}: {s['problem']}, PINN, seed {s['seed']}", "",
            f"Command: `{st['command']}`. Adam start: rel. e2 {s['rel_e2_adam']:.3e}; stop at {s['stop_at']:.0e}, "
            f"{s['max_iters']} iterations or {s['budget_s']:.0f} s. {st['machine_text']}", "",
            "| variant | s / iteration (median) | trials / it | chord steps / it | to 1e-4: it / s | to 1e-5: it / s "
            "| to 1e-6: it / s | iterations run | seconds run | final rel. e2 |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v in s["variants"]:
            chord = f"{v['chord_steps_mean']:.2f}" if "chord_steps_mean" in v else "-"
            lines.append(
                f"| {_label(v)} | {v['seconds_per_iteration_median']:.3f} | {v['trials_mean']:.2f} | {chord} | "
                f"{reach(v, '1e-04')} | {reach(v, '1e-05')} | {reach(v, '1e-06')} | {v['iterations']} | "
                f"{v['seconds']:.0f} | {v['rel_e2_end']:.3e} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", help="the study's name in the record (replaces one of that name)")
    ap.add_argument("--report-only", action="store_true", help="rewrite gn_cheaper.md from the record")
    ap.add_argument("--problem", default="heat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", type=parse_variant, nargs="+", default=None,
                    help="full, rows:F (0 < F <= 1), reuse:K or cg:K (K >= 1); default: full rows:0.5 rows:0.25")
    ap.add_argument("--adam-steps", type=int, default=None, help="default: the preset's")
    ap.add_argument("--max-iters", type=int, default=3000)
    ap.add_argument("--budget-s", type=float, default=900.0, help="seconds of steps per variant")
    ap.add_argument("--track-every", type=int, default=25)
    ap.add_argument("--stop-at", type=float, default=1e-6)
    ap.add_argument("--machine-note", default="", help="how the machine was shared, for the report")
    args = ap.parse_args(argv)
    path = RESULTS / "gn_cheaper.json"
    if args.report_only:
        (RESULTS / "gn_cheaper.md").write_text(render(json.loads(path.read_text())))
        return
    if not args.name:
        ap.error("--name is required (unless --report-only)")
    raw = list(argv if argv is not None else sys.argv[1:])
    variants = [_text(kv) for kv in (args.variants or [("rows", 1.0), ("rows", 0.5), ("rows", 0.25)])]
    s = study(args.problem, args.seed, variants, adam_steps=args.adam_steps, max_iters=args.max_iters,
              budget_s=args.budget_s, track_every=args.track_every, stop_at=args.stop_at)
    full = runcache.CACHE / "gn_cheaper" / f"{args.name}-{args.problem}-seed{args.seed}.json"
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(json.dumps(runcache.to_json(s)) + "\n")
    machine = runcache.machine_info()
    entry = {"study": runcache.to_json({**s, "variants": [{k: x for k, x in r.items() if k != "trace"}
                                                         for r in s["variants"]]}),
             "command": shlex.join(["python", "-m", "benchmarks.gn_cheaper", *raw]), "machine": machine,
             "threads": runcache.threads_label(),
             "machine_text": f"Machine: {machine.get('platform', '')}, {machine.get('cpu_count')} CPUs, "
                             f"threads: {runcache.threads_label()}. {args.machine_note}".strip()}
    doc = json.loads(path.read_text()) if path.exists() else {"study": "gn_cheaper", "studies": {}}
    doc["studies"][args.name] = entry
    path.write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / "gn_cheaper.md").write_text(render(doc))
    print(render(doc))


def _text(kv: tuple[str, float]) -> str:
    kind, v = kv
    return "full" if kind == "rows" and v >= 1 else f"{kind}:{v:g}"


if __name__ == "__main__":
    main()
