"""The Gauss-Newton member's linear-solve forms side by side, from one Adam start
(issue 44, item 1).

Forms (``GaussNewton(form=...)``, `cgmpinn_jax.stages._gauss_newton`):

* ``kernel`` -- the exact step: ``J J^T`` formed every iteration (``2 M^2 P`` flops, the lower tiles
  only) and one Cholesky factorization per trial damping; ``gramian``: the same on ``J^T J``
  (``P x P``), auto's with M > P.
* ``pcg`` -- the same system solved by CG preconditioned with the Cholesky factor of an earlier
  iteration's; a new factor only when the last CG needed more than ``R`` iterations (``pcg:R``);
  ``svd``: one thin SVD of ``J``.

Every form starts from the same float64 Adam stage (PINN, the accurate preset's Adam, or
``--adam-steps``; cached on disk; ``--problem name:key=int,...`` sets the problem's fields) and runs
the member's own ``step`` (jitted) in one process, one form after the other, so seconds compare on
the same machine state. Peak memory is XLA's compiled estimate for one iteration (arguments +
temporaries + outputs). The error on the problem's test grid is read every ``--track-every``
iterations, outside the timed steps.

    python -m benchmarks.gn_scaling --problem heat --forms kernel pcg --budget-s 600
    python -m benchmarks.gn_scaling --problem fisher_kpp --adam-steps 2000 --forms kernel pcg \
        --cap kernel=3

Writes ``benchmarks/results/gn_scaling.{json,md}`` (one entry per problem and seed, replaced when
rerun); ``--report-only`` rewrites the report from the record.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

import numpy as np

from benchmarks import runcache, tracking

RESULTS = runcache.RESULTS  # benchmarks/results, or $CGMPINN_BENCH_OUT/results
THRESHOLDS = (1e-4, 1e-5, 1e-6, 1e-7)


def parse_form(text: str) -> tuple[str, int | None]:
    kind, _, val = text.partition(":")
    if kind in ("kernel", "gramian", "svd") and not val:
        return kind, None
    if kind == "pcg" and (not val or (val.isdigit() and int(val) >= 1)):
        return kind, int(val) if val else None
    raise argparse.ArgumentTypeError(
        f"a form is 'kernel', 'gramian', 'svd', 'pcg' or 'pcg:R' (R >= 1); got {text!r}"
    )


def run_form(
    eng, setup, static, params0, batch, w, lam, form, *, max_iters, budget_s, track_every, stop_at
) -> dict:
    import jax

    import cgmpinn_jax as cj
    from cgmpinn_jax.stages._gauss_newton import GaussNewtonSolver

    kind, refactor = parse_form(form)
    gn = cj.TrainConfig.preset("accurate").stage("gauss_newton")
    extra = {} if refactor is None else {"cg_refactor": refactor}
    member = GaussNewtonSolver(
        eng.objective,
        eng.lsq,
        form=kind,
        mu_init=gn.mu_init,
        mu_min=gn.mu_min,
        mu_max=gn.mu_max,
        max_trials=gn.max_trials,
        **extra,
    )
    rel = tracking.rel_fn(setup.problem, static.model)
    state = member.init(params0, w, lam, batch)

    def step(p, s):
        out = member.step(p, s, w, lam, batch, s.value, s.grad)
        return out.params, out.state, out.evals, out.status

    t0 = time.perf_counter()
    compiled = jax.jit(step).lower(params0, state).compile()
    compile_s = time.perf_counter() - t0
    mem = compiled.memory_analysis()
    peak = (
        None
        if mem is None
        else int(mem.argument_size_in_bytes + mem.temp_size_in_bytes + mem.output_size_in_bytes)
    )
    params, its, secs, errs, mus = params0, [0], [0.0], [float(rel(params0.model))], []
    step_s, trials, cg, clock = [], [], [], 0.0
    for k in range(1, max_iters + 1):
        t = time.perf_counter()
        params, state, tr, status = jax.block_until_ready(compiled(params, state))
        dt = time.perf_counter() - t
        clock += dt
        step_s.append(dt), trials.append(int(tr))
        if kind == "pcg":
            cg.append(int(state.cg_iters))
        stop = int(status) != 0
        if k % track_every == 0 or clock >= budget_s or k == max_iters or stop:
            e = float(rel(params.model))
            its.append(k), secs.append(clock), errs.append(e), mus.append(float(state.mu))
            if not np.isfinite(e) or e <= stop_at or clock >= budget_s or stop:
                break
    return {
        "form": form,
        "kind": kind,
        "cg_refactor": member.cg_refactor if kind == "pcg" else None,
        "rows": int(eng.lsq.n_rows(batch)),
        "params": int(jax.flatten_util.ravel_pytree(params0)[0].shape[0]),
        "compile_seconds": compile_s,
        "peak_bytes": peak,
        "iterations": its[-1],
        "seconds": clock,
        "seconds_per_iteration_median": float(np.median(step_s)),
        "trials_mean": float(np.mean(trials)),
        "cg_iterations_mean": float(np.mean(cg)) if cg else None,
        "factorizations": int(state.factorizations) if kind == "pcg" else its[-1],
        "mu_end": mus[-1] if mus else None,
        "rel_e2_start": errs[0],
        "rel_e2_end": errs[-1],
        "rel_e2_best": float(np.min(errs)),
        "reach": {
            f"{thr:.0e}": dict(
                zip(("iterations", "seconds"), tracking.first_reach(its, secs, errs, thr))
            )
            for thr in THRESHOLDS
        },
        "trace": {"iterations": its, "seconds": secs, "rel_e2": errs, "mu": mus},
    }


def study(
    problem: str, seed: int, forms, *, adam_steps, caps, max_iters, budget_s, track_every, stop_at
) -> dict:
    import jax

    with jax.enable_x64(True), jax.default_matmul_precision("highest"):
        eng, setup, static, params0, batch, w, lam, meta = tracking.second_stage_start(
            problem, seed, adam_steps
        )
        rows = []
        for f in forms:
            r = run_form(
                eng,
                setup,
                static,
                params0,
                batch,
                w,
                lam,
                f,
                max_iters=caps.get(f, max_iters),
                budget_s=budget_s,
                track_every=track_every,
                stop_at=stop_at,
            )
            print(json.dumps({k: x for k, x in r.items() if k != "trace"}), flush=True)
            rows.append(r)
    return {
        "problem": problem,
        "seed": seed,
        "method": "pinn",
        **meta,
        "budget_s": budget_s,
        "max_iters": max_iters,
        "caps": caps,
        "track_every": track_every,
        "stop_at": stop_at,
        "forms": rows,
    }


def memory_probe(n_pde: int, n_edge: int, width: int, cg_max: int) -> dict:
    """One matrix-free Gauss-Newton iteration (one trial, at most ``cg_max`` CG iterations) on
    2D Poisson with ``n_pde + 4 n_edge`` rows and a ``width`` x 4 network (PINN, float64, from
    the initialisation): XLA's compiled peak for the iteration and the process's peak resident
    memory (``ru_maxrss``), against what the kernel form would need (`memory_bytes`)."""
    import resource

    import jax

    import cgmpinn_jax as cj
    from cgmpinn_jax.stages._gauss_newton import GaussNewtonSolver, memory_bytes
    from cgmpinn_jax.training import CompileCache
    from cgmpinn_jax.training._driver import init_state
    from cgmpinn_jax.training._schedule import resolve

    cfg = cj.TrainConfig.preset("accurate", width=width, depth=4)
    with jax.enable_x64(True), jax.default_matmul_precision("highest"):
        setup = resolve(
            cj.get_problem("poisson2d", n_pde=n_pde, n_edge=n_edge), cj.get_method("pinn"), cfg
        )
        static, eng = CompileCache().engine(setup)
        state, batch = init_state(setup, eng, jax.random.key(0))
        params = jax.tree_util.tree_map(lambda a: a.astype("float64"), state.params)
        batch = jax.tree_util.tree_map(lambda a: a.astype("float64"), batch)
        n = batch["pde"][0].shape[0]
        w, lam = jax.numpy.ones(n), jax.numpy.ones(setup.n_terms)
        gn = GaussNewtonSolver(
            eng.objective,
            eng.lsq,
            form="matfree",
            mu_init=1.0,
            mu_min=1e-15,
            mu_max=1e8,
            max_trials=1,
            matfree_max=cg_max,
        )
        s0 = gn.init(params, w, lam, batch)
        t0 = time.perf_counter()
        compiled = jax.jit(gn.step).lower(params, s0, w, lam, batch, s0.value, s0.grad).compile()
        compile_s = time.perf_counter() - t0
        mem = compiled.memory_analysis()
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(params, s0, w, lam, batch, s0.value, s0.grad))
        step_s = time.perf_counter() - t0
    rows, n_params = (
        int(eng.lsq.n_rows(batch)),
        int(jax.flatten_util.ravel_pytree(params)[0].shape[0]),
    )
    return {
        "rows": rows,
        "params": n_params,
        "width": width,
        "cg_max": cg_max,
        "compile_seconds": compile_s,
        "seconds": step_s,
        "xla_peak_bytes": int(
            mem.argument_size_in_bytes + mem.temp_size_in_bytes + mem.output_size_in_bytes
        ),
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "kernel_form_bytes": memory_bytes(rows, n_params, 8, "kernel"),
        "value_before": float(s0.value),
        "value_after": float(out.value),
    }


def render(doc: dict) -> str:
    lines = [
        "# Gauss-Newton forms side by side: seconds, memory and iterations",
        "",
        "Script: `benchmarks/gn_scaling.py`; record `benchmarks/results/gn_scaling.json`. One "
        "process per problem, the same float64 Adam start (PINN) for every form, run one after "
        "the other; a form stops at the target error, its iteration cap or the seconds of steps "
        "(compile apart), whichever comes first. `pcg:R`: CG preconditioned by an earlier factor, "
        "refactored when the last iteration needed more than R CG iterations. Peak memory: XLA's "
        "compiled estimate for one iteration.",
        "",
    ]

    def reach(v, thr):
        r = v["reach"].get(thr)
        return (
            "never"
            if r is None or r["iterations"] is None
            else f"{r['iterations']} / {r['seconds']:.0f}"
        )

    if doc.get("memory"):
        lines += [
            "## Memory: the matrix-free form at sizes the matrices would not fit",
            "",
            "| rows x parameters | CG its | kernel form would need (GB) | "
            "XLA peak of the iteration (GB) | process peak RSS (GB) | compile s | iteration s | "
            "command | commit |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for m in doc["memory"].values():
            lines.append(
                f"| {m['rows']} x {m['params']} | <= {m['cg_max']} | "
                f"{m['kernel_form_bytes'] / 1e9:.1f} | {m['xla_peak_bytes'] / 1e9:.2f} | "
                f"{m['max_rss_bytes'] / 1e9:.2f} | {m['compile_seconds']:.0f} | "
                f"{m['seconds']:.0f} | `{m['command']}` | {m['commit']} |"
            )
        lines.append("")
    for _name, st in sorted(doc["studies"].items()):
        s = st["study"]
        base = next(
            (v for k in ("kernel", "gramian") for v in s["forms"] if v["kind"] == k), None
        )  # the exact step
        lines += [
            f"## {s['problem']}, PINN, seed {s['seed']}",
            "",
            f"Command: `{st['command']}`. {s['forms'][0]['rows']} rows x {s['forms'][0]['params']} "
            f"parameters. Adam start ({s['adam_steps']} steps): rel. e2 {s['rel_e2_adam']:.3e}. "
            f"{st['machine_text']}",
            "",
            "| form | s / iteration: median (mean) | median vs exact (kernel, else Gramian) | "
            "peak memory (GB) | trials / it | CG its / it | factorizations | to 1e-4: it / s | "
            "to 1e-5: it / s | to 1e-6: it / s | to 1e-7: it / s | iterations | seconds | "
            "final rel. e2 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v in s["forms"]:
            ratio = (
                f"{v['seconds_per_iteration_median'] / base['seconds_per_iteration_median']:.3f}"
                if base
                else "-"
            )
            cgm = "-" if v["cg_iterations_mean"] is None else f"{v['cg_iterations_mean']:.1f}"
            mem = "-" if v["peak_bytes"] is None else f"{v['peak_bytes'] / 1e9:.2f}"
            mean = v["seconds"] / max(v["iterations"], 1)
            label = v["form"] if v.get("cg_refactor") is None else f"pcg (R = {v['cg_refactor']})"
            lines.append(
                f"| {label} | {v['seconds_per_iteration_median']:.3f} ({mean:.3f}) | {ratio} | "
                f"{mem} | {v['trials_mean']:.2f} | {cgm} | {v['factorizations']} | "
                f"{reach(v, '1e-04')} | {reach(v, '1e-05')} | {reach(v, '1e-06')} | "
                f"{reach(v, '1e-07')} | {v['iterations']} | {v['seconds']:.0f} | "
                f"{v['rel_e2_end']:.3e} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--report-only", action="store_true", help="rewrite gn_scaling.md from the record"
    )
    ap.add_argument("--problem", default="heat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--forms",
        type=parse_form,
        nargs="+",
        default=None,
        help="kernel, gramian, svd, pcg or pcg:R",
    )
    ap.add_argument(
        "--cap", nargs="*", default=[], help="FORM=N: at most N iterations of that form"
    )
    ap.add_argument("--adam-steps", type=int, default=None, help="default: the preset's")
    ap.add_argument("--max-iters", type=int, default=1500)
    ap.add_argument("--budget-s", type=float, default=900.0, help="seconds of steps per form")
    ap.add_argument("--track-every", type=int, default=10)
    ap.add_argument("--stop-at", type=float, default=1e-7)
    ap.add_argument("--machine-note", default="", help="how the machine was shared, for the report")
    ap.add_argument(
        "--tag", default="", help="a name for this entry beside the problem's (kept apart from it)"
    )
    ap.add_argument(
        "--memory-probe",
        nargs=4,
        type=int,
        metavar=("N_PDE", "N_EDGE", "WIDTH", "CG_MAX"),
        help="one matrix-free iteration on 2D Poisson at that size: its memory",
    )
    args = ap.parse_args(argv)
    path = RESULTS / "gn_scaling.json"
    if args.memory_probe:
        m = memory_probe(*args.memory_probe)
        m.update(
            command=shlex.join(["python", "-m", "benchmarks.gn_scaling", *(argv or sys.argv[1:])]),
            commit=runcache.code_commit(),
            threads=runcache.threads_label(),
        )
        doc = (
            json.loads(path.read_text())
            if path.exists()
            else {"study": "gn_scaling", "studies": {}}
        )
        doc.setdefault("memory", {})[f"{m['rows']}x{m['params']}"] = m
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        (RESULTS / "gn_scaling.md").write_text(render(doc))
        print(json.dumps(m))
        return
    if args.report_only:
        (RESULTS / "gn_scaling.md").write_text(render(json.loads(path.read_text())))
        return
    raw = list(argv if argv is not None else sys.argv[1:])
    forms = [
        k if v is None else f"{k}:{v}" for k, v in (args.forms or [("kernel", None), ("pcg", None)])
    ]
    caps = {c.split("=")[0]: int(c.split("=")[1]) for c in args.cap}
    s = study(
        args.problem,
        args.seed,
        forms,
        adam_steps=args.adam_steps,
        caps=caps,
        max_iters=args.max_iters,
        budget_s=args.budget_s,
        track_every=args.track_every,
        stop_at=args.stop_at,
    )
    name = f"{args.problem}-seed{args.seed}" + (f"-{args.tag}" if args.tag else "")
    full = runcache.CACHE / "gn_scaling" / f"{name}.json"
    full.write_text(json.dumps(runcache.to_json(s)) + "\n")
    entry = {
        "study": runcache.to_json(
            {**s, "forms": [{k: x for k, x in r.items() if k != "trace"} for r in s["forms"]]}
        ),
        "command": shlex.join(["python", "-m", "benchmarks.gn_scaling", *raw]),
        "machine": runcache.machine_info(),
        "commit": runcache.code_commit(),
        "threads": runcache.threads_label(),
        "machine_text": runcache.machine_text("Machine: {system} {arch}, {cpu_count} CPUs")
        + f", {runcache.threads_label()}. {args.machine_note}".rstrip(),
    }
    doc = json.loads(path.read_text()) if path.exists() else {"study": "gn_scaling", "studies": {}}
    doc["studies"][name] = entry
    path.write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / "gn_scaling.md").write_text(render(doc))
    print(render(doc))


if __name__ == "__main__":
    main()
