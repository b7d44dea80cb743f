"""Your own PDE, where to start: the faithful and the accurate preset on two PDEs that are not
the paper's (``cgmpinn_jax.examples``): 1D viscous Burgers (the README's worked example) and
2D Helmholtz with ``a = (1, 4)``.

Each run is CGMPINN at the presets' own budgets (the library defaults a user's problem falls
back to: a 50 x 4 tanh network, 5000 Adam steps, then 10000 float32 L-BFGS iterations for
``faithful``, 1500 float64 Gauss-Newton iterations for ``accurate``), seed 0. The test-grid
error is tracked every ``--track-every`` steps (``train(track_error_every=...)``), so one run
also tells what a smaller budget would have reached: the error after Adam and the wall
seconds at which it first fell to 1e-2 ... 1e-5.

Every run is cached (``benchmarks/runcache.py``: compact record in
``benchmarks/results/own_pde.json``), so the study resumes; ``--report-only`` rebuilds
``own_pde.md`` from the record.

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        python -m benchmarks.own_pde --problems burgers --presets faithful accurate
    python -m benchmarks.own_pde --report-only
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks import runcache, tracking

STUDY = "own_pde"
PROBLEMS = ("burgers", "helmholtz2d")
PRESETS = ("faithful", "accurate")
THRESHOLDS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
MILESTONES = (100, 300, 1000)  # second-stage iterations
METHOD = "cgmpinn"


def make_problem(name: str):
    from cgmpinn_jax.examples import Helmholtz2D, ViscousBurgers

    return {"burgers": ViscousBurgers, "helmholtz2d": Helmholtz2D}[name]()


def run_key(problem: str, preset: str, seed: int) -> str:
    return f"{problem}__{preset}__seed{seed}"


def derived(full: dict) -> dict:
    """From the tracked error: when it first fell below each threshold, and the error and
    seconds after ``MILESTONES`` second-stage iterations (the first tracked point at or past)."""
    tr = full["error_trace"]
    k, s, e = (np.asarray(tr[n]) for n in ("k", "seconds", "rel_e2"))
    reach = {}
    for thr in THRESHOLDS:
        step, sec = tracking.first_reach(k, s, e, thr)
        reach[f"{thr:.0e}"] = {"step": step, "seconds": sec}
    after = {}
    for m in MILESTONES:
        idx = np.nonzero(k >= full["adam_steps"] + m)[0]
        after[str(m)] = None if idx.size == 0 else {"rel_e2": float(e[idx[0]]), "seconds": float(s[idx[0]]),
                                                     "iterations": int(k[idx[0]] - full["adam_steps"])}
    return {"reach": reach, "after_second": after}


def train_one(problem: str, preset: str, seed: int, track_every: int) -> dict:
    import cgmpinn_jax as cj

    cfg = cj.TrainConfig.preset(preset)
    t0 = time.perf_counter()
    res = cj.train(make_problem(problem), METHOD, cfg, key=seed, quiet=False, prefetch_compile=True,
                   track_error_every=track_every,
                   print_fn=lambda s: print(s, flush=True) if " done:" in s or "stopped" in s or "compiled" in s else None)
    wall = time.perf_counter() - t0
    h = res.history
    i_adam = int(np.searchsorted(h.error_k, res.adam_steps))
    adam_end = float(h.error_rel_e2[i_adam]) if i_adam < len(h.error_k) else None
    adam_seconds = float(h.error_seconds[i_adam]) if i_adam < len(h.error_k) else None
    full = {
        "problem": problem, "preset": preset, "method": METHOD, "seed": seed,
        "adam_steps": res.adam_steps, "lbfgs_steps": res.lbfgs_steps, "config": cfg.to_dict(),
        "second_stage": res.second_stage_name, "stages": list(res.stage_lines()),
        "metrics": res.metrics.as_dict(), "rel_e2_after_adam": adam_end, "seconds_after_adam": adam_seconds,
        "wall_seconds": wall, "compile_seconds": res.compile_seconds,
        "run_seconds": res.run_seconds, "threads": runcache.threads_label(),
        # full file only (dropped from the record): the tracked error trace
        "error_trace": {"k": h.error_k.tolist(), "seconds": h.error_seconds.tolist(), "rel_e2": h.error_rel_e2.tolist()},
    }
    return {**full, **derived(full)}


def compact(full: dict) -> dict:
    return {k: v for k, v in full.items() if k != "error_trace"}


def get(problem: str, preset: str, seed: int, *, track_every: int) -> dict:
    study = runcache.Study(STUDY)
    key = run_key(problem, preset, seed)
    if not study.is_done(key):
        print(f"[own_pde] training {key}", flush=True)
    out = study.run(key, lambda: train_one(problem, preset, seed, track_every), compact=compact)
    print(f"[own_pde] {key}: rel_e2={out['metrics']['rel_e2']:.3e} wall={out['wall_seconds']:.0f}s", flush=True)
    return out


def _sec(x) -> str:
    return "not reached" if x is None else f"{x:.0f} s"


def render(recs: dict) -> str:
    lines = [
        "# Your own PDE: where to start (faithful vs accurate preset)",
        "",
        "CGMPINN, seed 0, each preset at its own budget (the defaults a user's problem falls back to:",
        "50 x 4 tanh network, 5000 Adam steps; `faithful` then 10000 float32 L-BFGS iterations,",
        "`accurate` 1500 float64 Gauss-Newton iterations). Problems: `cgmpinn_jax.examples.ViscousBurgers`",
        "(nu = 0.05, 2000 + 200 + 2 x 200 points) and `cgmpinn_jax.examples.Helmholtz2D` (a = (1, 4), k = 1,",
        "2000 + 4 x 100 points). Seconds are wall seconds from the start of training, compilation included;",
        "'after 100 it.' is the test-grid error after 100 second-stage iterations (L-BFGS or Gauss-Newton) and the",
        "seconds until then; 'to 1e-3' is when the error first fell below 1e-3 (tracked every 50 steps).",
        "",
        "| problem | preset | rel e2 | wall | after Adam | after 100 it. | after 300 it. | after 1000 it. | to 1e-3 | to 1e-5 | stages |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {(p, s): i for i, (p, s) in enumerate((p, s) for p in PROBLEMS for s in PRESETS)}
    machines, threads = set(), set()
    for r in sorted(recs.values(), key=lambda r: (order.get((r["problem"], r["preset"]), 99), r["seed"])):
        adam = (f"{r['rel_e2_after_adam']:.2e} ({r['seconds_after_adam']:.0f} s)"
                if r.get("rel_e2_after_adam") is not None else "-")
        after = [("-" if a is None else f"{a['rel_e2']:.2e} ({a['seconds']:.0f} s)")
                 for a in (r["after_second"][str(m)] for m in MILESTONES)]
        reach = [_sec(r["reach"][f"{t:.0e}"]["seconds"]) for t in (1e-3, 1e-5)]
        stages = "; ".join(r["stages"])
        lines.append(f"| {r['problem']} | {r['preset']} | {r['metrics']['rel_e2']:.2e} | {r['wall_seconds']:.0f} s | "
                     f"{adam} | {' | '.join(after)} | {' | '.join(reach)} | {stages} |")
        threads.add(r["threads"])
        m = r.get("machine", {})
        machines.add(f"{m.get('processor', '?')}, {m.get('cpu_count', '?')} cores, jax {m.get('jax', '?')}")
    notes = sorted({r["note"] for r in recs.values() if r.get("note")})
    lines += ["", "Machine: " + "; ".join(sorted(machines)) + "; " + ", ".join(sorted(threads)) + "; each run pinned to a core of its own (the other core ran other work).",
              *([""] + [f"Note: {n}" for n in notes] if notes else []),
              "", f"Reproduce: `XLA_FLAGS=\"{runcache.ONE_THREAD_XLA_FLAGS}\" "
              "python -m benchmarks.own_pde` (one run at a time on a core of its own).", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--track-every", type=int, default=50)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--rederive", action="store_true", help="recompute the derived columns from the cached traces")
    args = ap.parse_args(argv)
    if args.rederive:
        study = runcache.Study(STUDY)
        for key in study.load():
            full = study.load_full(key)
            if full is not None:
                study.save(key, {**full, **derived(full)}, compact=compact)
    elif not args.report_only:
        for p in args.problems:
            for s in args.presets:
                get(p, s, args.seed, track_every=args.track_every)
    runcache.Study(STUDY).write_report(render, echo=True)


if __name__ == "__main__":
    main()
