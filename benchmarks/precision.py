"""Accuracy beyond float32: precision x second-stage member, PINN and CGMPINN, the paper's budgets.

Variants (columns):

* ``f32-lbfgs``   -- float32, optax L-BFGS: the faithful default. Not retrained: taken from
  the paper-table runs (``benchmarks/results/paper_runs.json``, same budgets and seeds).
* ``f64-lbfgs``   -- ``precision="float64"``, optax L-BFGS.
* ``f64-ssbfgs``  -- ``precision="float64"``, dense self-scaled BFGS.
* ``mixed-ssbfgs`` -- Adam in float32, self-scaled BFGS in float64 (1D Poisson and heat).
* ``f64-lbfgs-refresh`` -- CGMPINN only: ``f64-lbfgs`` with ReLoBRaLo's L-BFGS lambdas moved
  once per refresh chunk (``balancing.second_stage_apply="refresh"``).

Retired (never run, and not to be run): ``f64-ssbfgs`` and ``mixed-ssbfgs`` at the paper
budgets; the Gauss-Newton member replaced them (``benchmarks/accuracy.py``).

The table adds a column ``accurate`` = what ``TrainConfig.preset("accurate_lbfgs")`` trains (the
accurate preset until the Gauss-Newton member replaced it): CGMPINN's
``f64-lbfgs-refresh`` runs beside PINN's ``f64-lbfgs`` runs (PINN has no ReLoBRaLo in the
second stage, so its preset run is its ``f64-lbfgs`` run), with the paired count.

Every run is cached (``benchmarks/runcache.py``: compact record in
``benchmarks/results/precision.json``, full file in the ignored cache), so the study resumes;
``--build-only`` rebuilds ``precision.md`` from the record. Each cell: relative e2 median
[min-max] over seeds, median wall and compile seconds, evaluations per second-stage
iteration, stop statuses; each column: how many seeds CGMPINN beats PINN (paired by seed).

    python -m benchmarks.precision --probe                      # ms per step, to plan
    python -m benchmarks.precision --problems poisson1d --variants f64-lbfgs f64-ssbfgs
    python -m benchmarks.precision --list                       # what is done / missing
    python -m benchmarks.precision --problems heat --methods cgmpinn --variants f64-lbfgs-refresh \
        --seeds 0 --lbfgs-steps 30000                           # a longer second stage (own table)
    python -m benchmarks.precision --build-only

Timings are those of the machine and thread setting the record names (pin one XLA thread
with ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"`` and
``taskset -c N`` to run two studies side by side on two cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

STUDY = "precision"
RESULTS = Path(__file__).parent / "results"
PROBLEMS = ("poisson1d", "heat", "advection_diffusion", "damped_wave", "poisson2d", "fisher_kpp")
METHODS = ("pinn", "cgmpinn")
VARIANTS = {
    "f32-lbfgs": dict(precision="float32", second_stage="optax"),
    "f64-lbfgs": dict(precision="float64", second_stage="optax"),
    "f64-ssbfgs": dict(precision="float64", second_stage="ssbfgs"),
    "mixed-ssbfgs": dict(precision="mixed", second_stage="ssbfgs"),
    # CGMPINN only: ReLoBRaLo's lambdas move once per chunk of k_upd iterations instead of
    # every iteration, so no iteration pays a start-point evaluation of its own
    "f64-lbfgs-refresh": dict(precision="float64", second_stage="optax", balancing={"second_stage_apply": "refresh"}),
}
MIXED_PROBLEMS = ("poisson1d", "heat")
# issue 19's goals: median relative e2 of the accurate setting, and at least 10x below the paper's CGMPINN
GOALS = {"poisson1d": 1e-5, "heat": 1e-5, "advection_diffusion": 1e-5, "damped_wave": 1e-5, "poisson2d": 1e-4,
         "fisher_kpp": 1e-4}


def paper_cgmpinn(problem: str) -> float:
    """The paper's CGMPINN relative e2 on ``problem`` (cgmpinn_jax's copy of its tables)."""
    doc = json.loads((Path(__file__).resolve().parents[1] / "cgmpinn_jax" / "data" / "paper_tables.json").read_text())
    return float(doc["methods"][problem]["CGMPINN"]["rel_e2"])


def seeds_for(problem: str) -> list[int]:
    return [0, 1, 2, 3, 4] if problem == "poisson1d" else [0, 1, 2]


def planned(problems, methods, variants) -> list[tuple[str, str, str, int]]:
    out = []
    for p in problems:
        for v in variants:
            if v.startswith("mixed") and p not in MIXED_PROBLEMS:
                continue
            if p == "fisher_kpp" and v not in ("f32-lbfgs", "f64-lbfgs", "f64-ssbfgs"):
                continue
            for m in methods:
                if v == "f64-lbfgs-refresh" and m != "cgmpinn":
                    continue  # PINN has no ReLoBRaLo in the second stage: the same run as f64-lbfgs
                seeds = seeds_for(p)[:2] if (p == "fisher_kpp" and v != "f32-lbfgs") else seeds_for(p)
                out += [(p, m, v, s) for s in seeds]
    return out


def run_key(problem, method, variant, seed, lbfgs_steps=None) -> str:
    """``lbfgs_steps``: a second-stage budget other than the paper's (a separate study row)."""
    return f"{problem}__{method}__{variant}__seed{seed}" + ("" if lbfgs_steps is None else f"__lbfgs{lbfgs_steps}")


def _paper_run(problem, method, seed):
    """The float32 L-BFGS run of the paper tables (same budget and seed), compact."""
    rec = runcache.Study("paper_runs").load()
    for r in rec.values():
        spec = r.get("spec", {})
        if (spec.get("problem") == problem and spec.get("variant") == method and r.get("seed") == seed
                and spec.get("budget_scale", 1.0) == 1.0 and not spec.get("x64")):
            return r
    return None


def loss_fall(loss_curve) -> float | None:
    """How much the training loss fell over the last 1000 steps: loss 1000 steps before the
    end / loss at the end (1 = flat; > 1 = still falling when the run stopped)."""
    lc = np.asarray(loss_curve, float)
    return float(lc[-1001] / lc[-1]) if lc.size > 1000 and np.isfinite(lc[-1]) and lc[-1] > 0 else None


def train_one(problem: str, method: str, variant: str, seed: int, lbfgs_steps: int | None = None) -> dict:
    import cgmpinn_jax as cj

    cfg = cj.TrainConfig(**VARIANTS[variant], **({} if lbfgs_steps is None else {"second": {"steps": lbfgs_steps}}))
    t0 = time.perf_counter()
    res = cj.train(problem, method, cfg, key=seed, quiet=True)
    wall = time.perf_counter() - t0
    n_second = int(np.sum(res.history.k > res.adam_steps))
    return {
        "problem": problem, "method": method, "variant": variant, "seed": seed, "source": "trained",
        "lbfgs_steps": res.lbfgs_steps, "adam_steps": res.adam_steps,
        "config": cfg.to_dict(), "metrics": res.metrics.as_dict(), "e_loss": res.e_loss,
        "statuses": {"adam": res.statuses["adam"].name, "second": res.statuses["lbfgs"].name},
        "second_iterations": n_second, "evals_per_iteration": res.evals_per_lbfgs_iteration,
        "evals_total": int(np.sum(res.history.evals)), "wall_seconds": wall,
        "compile_seconds": res.compile_seconds, "run_seconds": res.run_seconds,
        "loss_fall_last_1000": loss_fall(res.history.loss),
        "loss_curve": res.history.loss.tolist(),  # full file only (runcache drops it from the record)
    }


def from_paper(problem, method, seed) -> dict | None:
    r = _paper_run(problem, method, seed)
    if r is None:
        return None
    return {
        "problem": problem, "method": method, "variant": "f32-lbfgs", "seed": seed, "source": f"paper_runs:{r['run_key']}",
        "metrics": r["metrics"], "e_loss": r.get("e_loss"),
        "statuses": {"adam": r["statuses"]["adam"], "second": r["statuses"]["lbfgs"]},
        "evals_per_iteration": r.get("evals_per_lbfgs_iteration"), "wall_seconds": r.get("wall_seconds"),
        "compile_seconds": r.get("compile_seconds"), "run_seconds": r.get("run_seconds"), "machine": r.get("machine"),
    }


def get(problem, method, variant, seed, *, train: bool, lbfgs_steps: int | None = None) -> dict | None:
    study = runcache.Study(STUDY)
    key = run_key(problem, method, variant, seed, lbfgs_steps)
    if variant == "f32-lbfgs" and lbfgs_steps is None:
        rec = from_paper(problem, method, seed)
        return rec
    if study.is_done(key):
        return study.load()[key]
    if not train:
        return None
    print(f"[precision] training {key}", flush=True)
    out = study.run(key, lambda: train_one(problem, method, variant, seed, lbfgs_steps))
    print(f"[precision] {key}: rel_e2={out['metrics']['rel_e2']:.3e} {out['statuses']['second']} "
          f"evals/it={out['evals_per_iteration']:.2f} wall={out['wall_seconds']:.0f}s", flush=True)
    return out


def _fmt_cell(runs: list[dict]) -> str:
    if not runs:
        return "-"
    e = np.array([r["metrics"]["rel_e2"] for r in runs])
    wall = np.median([r["wall_seconds"] or np.nan for r in runs])
    comp = np.median([r.get("compile_seconds") or 0.0 for r in runs])
    ev = np.median([r["evals_per_iteration"] for r in runs])
    st = {}
    for r in runs:
        st[r["statuses"]["second"]] = st.get(r["statuses"]["second"], 0) + 1
    sts = ", ".join(f"{k} {v}" for k, v in sorted(st.items()))
    return (f"{np.median(e):.2e} [{e.min():.1e}-{e.max():.1e}] n={len(runs)}; {wall:.0f} s (+{comp:.0f} s compile); "
            f"{ev:.2f} ev/it; {sts}")


def build(rows: list[dict], command: str) -> tuple[str, dict]:
    by = {}
    for r in rows:
        by.setdefault((r["problem"], r["variant"], r["method"]), []).append(r)
    for (p, v, m), runs in list(by.items()):  # the accurate preset's column (see the module docstring)
        if (m, v) in (("pinn", "f64-lbfgs"), ("cgmpinn", "f64-lbfgs-refresh")):
            by[(p, "accurate", m)] = runs
    variants = [v for v in (*VARIANTS, "accurate") if any(k[1] == v for k in by)]
    lines = ["# Accuracy beyond float32: precision x second stage (paper budgets)", "",
             f"Command: `{command}`; study record `benchmarks/results/precision.json` (machine per run there).",
             "Cell: relative e2 median [min-max] over seeds, n runs; median wall seconds of a run (+ compile);",
             "loss+gradient evaluations per second-stage iteration; second-stage stop statuses.",
             "`f32-lbfgs` is the paper-table runs (float32, optax L-BFGS, same budgets and seeds); their seconds",
             "are as recorded there (some runs vmapped, one or two threads): compare errors and evaluations, not",
             "seconds, across columns. Seconds of the other columns are one XLA thread, on a machine shared with",
             "other jobs (see each run's `machine` and `finished_at` in the record).",
             "`accurate` = `TrainConfig.preset(\"accurate_lbfgs\")` (the accurate preset before the Gauss-Newton "
             "member, `benchmarks/accuracy.md`): CGMPINN's `f64-lbfgs-refresh` runs beside PINN's",
             "`f64-lbfgs` runs (PINN has no ReLoBRaLo in the second stage: its preset run is that run).", ""]
    lines += ["| problem | method | " + " | ".join(variants) + " |", "|---|---|" + "---|" * len(variants)]
    summary = {}
    for p in PROBLEMS:
        for m in METHODS:
            cells = [_fmt_cell(by.get((p, v, m), [])) for v in variants]
            if any(c != "-" for c in cells):
                lines.append(f"| {p} | {m} | " + " | ".join(cells) + " |")
        paired = []
        for v in variants:
            a = {r["seed"]: r["metrics"]["rel_e2"] for r in by.get((p, v, "cgmpinn"), [])}
            b = {r["seed"]: r["metrics"]["rel_e2"] for r in by.get((p, v, "pinn"), [])}
            common = sorted(set(a) & set(b))
            paired.append(f"{sum(a[s] < b[s] for s in common)} of {len(common)}" if common else "-")
            summary.setdefault(p, {})[v] = {
                m: ({"median_rel_e2": float(np.median([r["metrics"]["rel_e2"] for r in by[(p, v, m)]])),
                     "n": len(by[(p, v, m)])} if (p, v, m) in by else None) for m in METHODS}
        if any(x != "-" for x in paired):
            lines.append(f"| {p} | CGMPINN < PINN (paired) | " + " | ".join(paired) + " |")
    return "\n".join(lines) + "\n", summary


def goal_table(rows: list[dict]) -> str:
    """The accurate preset against float32 and the issue's goals, per problem and method."""
    by = {}
    for r in rows:
        by.setdefault((r["problem"], r["variant"], r["method"]), []).append(r)
    acc_variant = {"pinn": "f64-lbfgs", "cgmpinn": "f64-lbfgs-refresh"}
    lines = ["| problem | method | float32 (faithful) | float64 L-BFGS (accurate_lbfgs) | evals / L-BFGS it | "
             "loss fall, last 1000 its | goal: median <= | paper CGMPINN / 10 | met |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p in PROBLEMS:
        for m in METHODS:
            acc = by.get((p, acc_variant[m], m), [])
            if not acc:
                continue
            f32 = [r["metrics"]["rel_e2"] for r in by.get((p, "f32-lbfgs", m), [])]
            e = np.array([r["metrics"]["rel_e2"] for r in acc])
            ev = [r["evals_per_iteration"] for r in acc]
            goal = min(GOALS[p], paper_cgmpinn(p) / 10)
            med = float(np.median(e))
            f32c = f"{np.median(f32):.2e} (n={len(f32)})" if f32 else "-"
            seeds = ",".join(str(r["seed"]) for r in sorted(acc, key=lambda r: r["seed"]))
            met = "yes" if med <= goal else f"no ({med / goal:.1f}x above)"
            falls = [r["loss_fall_last_1000"] for r in acc  # a guard's stop ends on the bad step: left out
                     if r.get("loss_fall_last_1000") is not None and r["statuses"]["second"] == "COMPLETED"]
            fall = f"{np.median(falls):.2f}x" if falls else "-"
            lines.append(f"| {p} | {m} | {f32c} | {med:.2e} [{e.min():.2e} - {e.max():.2e}] (seeds {seeds}) | "
                         f"{min(ev):.2f}-{max(ev):.2f} | {fall} | {GOALS[p]:.0e} | {paper_cgmpinn(p) / 10:.2e} | {met} |")
    return "\n".join(lines) + "\n"


def longer_table(record: dict) -> str:
    """Runs with a longer second stage (``--lbfgs-steps``) beside the same seed's paper-budget run."""
    lines = ["| problem | method | variant | seed | budget (Adam + 2nd stage) | rel. e2, paper budget | rel. e2, longer | "
             "evals / it | loss fall, last 1000 its | 2nd-stage stop | wall s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in sorted(record.items()):
        if "__lbfgs" not in key:
            continue
        base = record.get(run_key(r["problem"], r["method"], r["variant"], r["seed"]))
        e0 = f"{base['metrics']['rel_e2']:.2e}" if base else "-"
        fall = r.get("loss_fall_last_1000")
        lines.append(f"| {r['problem']} | {r['method']} | {r['variant']} | {r['seed']} | {r['adam_steps']} + {r['lbfgs_steps']} | "
                     f"{e0} | {r['metrics']['rel_e2']:.2e} | {r['evals_per_iteration']:.2f} | "
                     f"{'-' if fall is None else f'{fall:.2f}x'} | {r['statuses']['second']} | {r['wall_seconds']:.0f} |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def probe(problems, variants, steps=(100, 50)) -> None:
    """ms per Adam step and per second-stage iteration (CGMPINN), from a short run each."""
    import cgmpinn_jax as cj

    for p in problems:
        for v in variants:
            if v == "f32-lbfgs":
                continue
            cfg = cj.TrainConfig(adam={"steps": steps[0]}, second={"steps": steps[1]}, cgm={"k_upd": 50}, **VARIANTS[v])
            res = cj.train(p, "cgmpinn", cfg, key=0, quiet=True)
            d = cj.get_problem(p).defaults
            per = res.run_seconds / (steps[0] + steps[1] * max(res.evals_per_lbfgs_iteration, 1.0))
            est = per * (d.adam_steps + d.lbfgs_steps * max(res.evals_per_lbfgs_iteration, 1.0))
            print(f"{p:20s} {v:13s} run {res.run_seconds:6.1f} s compile {res.compile_seconds:5.1f} s "
                  f"~{1e3 * per:6.1f} ms/eval  evals/it {res.evals_per_lbfgs_iteration:.2f}  full run ~{est / 60:.0f} min",
                  flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description="precision x second-stage study")
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--seeds", nargs="+", type=int, default=None, help="only these seeds of the plan")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--lbfgs-steps", type=int, default=None,
                    help="train the given cells with this second-stage budget instead of the paper's (needs --seeds; "
                         "listed in their own table)")
    args = ap.parse_args(argv)
    if args.probe:
        probe(args.problems, args.variants)
        return
    if args.lbfgs_steps is not None:
        if args.seeds is None or args.lbfgs_steps < 1 or "f32-lbfgs" in args.variants:
            ap.error("--lbfgs-steps needs --seeds, a positive budget and trained variants (not f32-lbfgs)")
        for p, m, v, s in planned(args.problems, args.methods, args.variants):
            if s in args.seeds and not args.build_only:
                get(p, m, v, s, train=True, lbfgs_steps=args.lbfgs_steps)
        args.build_only = True  # then only rebuild the tables (the paper-budget grid is not trained)
    plan = [x for x in planned(args.problems, args.methods, args.variants) if args.seeds is None or x[3] in args.seeds]
    rows, missing = [], []
    for p, m, v, s in plan:
        r = get(p, m, v, s, train=not (args.build_only or args.list))
        (rows if r is not None else missing).append(r if r is not None else (p, m, v, s))
    if args.list:
        print(f"{len(rows)} done, {len(missing)} missing:")
        for x in missing:
            print("  ", run_key(*x))
        return
    every = [r for (p, m, v, s) in planned(PROBLEMS, METHODS, VARIANTS)
             if (r := get(p, m, v, s, train=False)) is not None]
    md, summary = build(every, "python -m benchmarks.precision " + " ".join(argv if argv is not None else sys.argv[1:]))
    md += ("\n## The accurate preset against float32 and the goals\n\nIssue 19's goal per cell: median relative e2 "
           "<= the problem's goal and <= the paper's CGMPINN number / 10 (the stricter of the two is what `met` "
           "checks), over the seeds run so far (the plan: 3 seeds, 5 on 1D Poisson, 2 on Fisher-KPP). Loss fall = "
           "median over the seeds that ran their whole budget (COMPLETED) of (loss 1000 steps before the end) / (loss "
           "at the end): above 1, the loss was still falling when the budget ran out.\n\n"
           + goal_table(every))
    longer = longer_table(runcache.Study(STUDY).load())
    if longer:
        md += ("\n## A longer second stage\n\nThe same setting and seed with a larger second-stage budget "
               "(`--lbfgs-steps`; CGMPINN's curriculum, 80% of all steps, stretches with it): does the error keep "
               "falling where the paper budget ran out?\n\n" + longer)
    (RESULTS / "precision.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
