"""How long would a paper-budget run take on this machine? A short probe, extrapolated.

For each (problem, variant) two short training calls with the paper tables' configuration
(``paper_tables.variant_config``): ``A`` Adam steps alone, then ``A`` Adam steps followed by
``L`` L-BFGS iterations. Their run seconds (compilation excluded) give the seconds per Adam step
and per L-BFGS iteration, which are scaled to the paper's budget. An L-BFGS iteration's cost
grows with its loss+gradient evaluations (one to ten line-search trials, plus one forward pass
for the per-term losses), and a short probe sits early in the L-BFGS stage where fewer trials
are needed, so the estimate is given twice: at the probe's evaluations per iteration, and at
``--assume-evals`` (default: the median over the recorded paper-budget runs of that variant in
``benchmarks/results/paper_runs.json``), with the iteration cost taken proportional to evaluations + 1.

Where cached paper-budget runs of the same (problem, variant) exist, their median wall seconds
stand beside the estimate as a check of the extrapolation (they may have run on other hardware
or beside another job: the machine of each is in its record entry).

Reproduce (one problem at a time, on an otherwise idle core):

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        taskset -c 0 python -m benchmarks.cost_probe --problems fisher_kpp,heat --variants cgmpinn,pinn

Writes benchmarks/results/cost_probe.{md,json} (rows of earlier probes are kept unless the
same problem, variant and probe budget is probed again).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from benchmarks import paper_tables as pt
from benchmarks import runcache
from benchmarks import tables_lib as tl

OUT_JSON = pt.RESULTS / "cost_probe.json"
OUT_MD = pt.RESULTS / "cost_probe.md"


def full_budget_runs() -> list[dict]:
    """The recorded paper-budget (unscaled) runs (``benchmarks/results/paper_runs.json`` and the
    local cache), read once per probe session."""
    return [r for r in pt.all_runs() if float(r["spec"]["budget_scale"]) == 1.0]


def median_evals(runs: list[dict], variant: str) -> float | None:
    """Median evaluations per L-BFGS iteration over ``runs`` of ``variant``."""
    vals = [float(r["evals_per_lbfgs_iteration"]) for r in runs
            if r["spec"]["variant"] == variant and r.get("evals_per_lbfgs_iteration") is not None]
    return statistics.median(vals) if vals else None


def extrapolate(adam_steps: int, lbfgs_steps: int, t_adam: float, t_it: float, e_probe: float,
                e_assumed: float | None = None) -> float:
    """Seconds of a run of ``adam_steps`` + ``lbfgs_steps`` from per-step costs; with ``e_assumed``,
    the L-BFGS iteration cost is rescaled from ``e_probe`` evaluations per iteration to ``e_assumed``
    (cost proportional to evaluations + 1, the +1 being the per-iteration forward pass)."""
    scale = 1.0 if e_assumed is None else (e_assumed + 1.0) / (e_probe + 1.0)
    return adam_steps * t_adam + lbfgs_steps * t_it * scale


def probe(problem_name: str, variant: str, adam: int, lbfgs: int, seed: int, assume_evals: float | None,
          full_runs: list[dict]) -> dict:
    """Probe one (problem, variant); ``full_runs``: the cached paper-budget runs (``full_budget_runs``)."""
    cj = pt._cj()
    problem = cj.get_problem(problem_name)
    full = pt.variant_config(problem, variant)
    if full.adam.steps == 0 or full.second.steps == 0:
        raise ValueError(f"variant {variant!r} has a single optimizer stage; probe an Adam->L-BFGS variant")
    method = tl.VARIANTS[variant][1]
    r1 = cj.train(problem, method, full.replace(adam={"steps": adam}, second={"steps": 0}), key=seed, quiet=True)
    r2 = cj.train(problem, method, full.replace(adam={"steps": adam}, second={"steps": lbfgs}), key=seed, quiet=True)
    t_adam = r1.run_seconds / adam
    t_it = max(r2.run_seconds - r1.run_seconds, 0.0) / lbfgs
    e_probe = float(r2.evals_per_lbfgs_iteration)
    e_assumed = assume_evals if assume_evals is not None else median_evals(full_runs, variant)
    est_probe = extrapolate(full.adam.steps, full.second.steps, t_adam, t_it, e_probe)
    est_assumed = (None if e_assumed is None
                   else extrapolate(full.adam.steps, full.second.steps, t_adam, t_it, e_probe, e_assumed))
    cached = [r for r in full_runs if r["spec"]["problem"] == problem.name and r["spec"]["variant"] == variant]
    rec = {
        "problem": problem.name, "variant": variant, "seed": seed,
        "probe_adam_steps": adam, "probe_lbfgs_steps": lbfgs,
        "full_adam_steps": full.adam.steps, "full_lbfgs_steps": full.second.steps,
        "compile_seconds": r2.compile_seconds,
        "adam_seconds_per_step": t_adam, "lbfgs_seconds_per_iteration": t_it,
        "probe_evals_per_iteration": e_probe, "assumed_evals_per_iteration": e_assumed,
        "estimate_seconds_at_probe_evals": est_probe, "estimate_seconds_at_assumed_evals": est_assumed,
        "cached_full_runs": len(cached),
        "cached_median_wall_seconds": statistics.median(float(r["wall_seconds"]) for r in cached) if cached else None,
        "machine": runcache.machine_info(), "command": "python -m benchmarks.cost_probe " + " ".join(sys.argv[1:]),
        "finished_at": pt._now(), "version": cj.__version__,
    }
    print(f"{problem.name}/{variant}: {t_adam * 1e3:.1f} ms/Adam step, {t_it * 1e3:.1f} ms/L-BFGS it "
          f"({e_probe:.2f} evals/it) -> paper budget ~{est_probe / 60:.0f} min"
          + (f" (~{est_assumed / 60:.0f} min at {e_assumed:.2f} evals/it)" if est_assumed else ""), flush=True)
    return rec


def _m(x) -> str:
    return "—" if x is None else f"{x / 60:.1f}"


def render(recs: list[dict]) -> str:
    lines = [
        "# Cost probe: paper-budget run time extrapolated from a short run",
        "",
        ("Made by `benchmarks/cost_probe.py` (see its docstring for the method). Seconds per Adam step and per "
        "L-BFGS iteration come from two short calls (compilation excluded); the estimates scale them to the "
        "paper's budget, once at the probe's evaluations per L-BFGS iteration and once at the assumed number "
        "(median of the cached paper-budget runs of that variant), taking an iteration's cost proportional to "
        "evaluations + 1. The last column is the median wall time (compile + run) of cached paper-budget runs "
        "of the same problem and variant, when there are any: a check of the extrapolation."),
        "",
        ("| problem | variant | probe (Adam + L-BFGS) | ms / Adam step | ms / L-BFGS it. | evals / it. (probe) | "
        "paper budget | est. min at probe evals | assumed evals / it. | est. min at assumed evals | "
        "cached runs: median min (n) | machine | date |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        cached = ("—" if not r["cached_full_runs"]
                  else f"{r['cached_median_wall_seconds'] / 60:.1f} ({r['cached_full_runs']})")
        ae = r["assumed_evals_per_iteration"]
        lines.append(
            f"| {r['problem']} | {r['variant']} | {r['probe_adam_steps']} + {r['probe_lbfgs_steps']} | "
            f"{r['adam_seconds_per_step'] * 1e3:.1f} | {r['lbfgs_seconds_per_iteration'] * 1e3:.1f} | "
            f"{r['probe_evals_per_iteration']:.2f} | {r['full_adam_steps']} + {r['full_lbfgs_steps']} | "
            f"{_m(r['estimate_seconds_at_probe_evals'])} | {'—' if ae is None else f'{ae:.2f}'} | "
            f"{_m(r['estimate_seconds_at_assumed_evals'])} | {cached} | {tl.hardware_label(r['machine'])} | "
            f"{r['finished_at'][:10]} |")
    lines += ["", "Commands: " + "; ".join(sorted({f"`{r['command']}`" for r in recs})), ""]
    return "\n".join(lines)


def _ident(rec: dict) -> tuple:
    """What a new probe replaces: an earlier one of the same problem, variant and probe budget."""
    return rec["problem"], rec["variant"], rec["probe_adam_steps"], rec["probe_lbfgs_steps"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="fisher_kpp")
    ap.add_argument("--variants", default="cgmpinn,pinn")
    ap.add_argument("--adam", type=int, default=400, help="probe Adam steps")
    ap.add_argument("--lbfgs", type=int, default=200, help="probe L-BFGS iterations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--assume-evals", type=float, default=None,
                    help="evaluations per L-BFGS iteration of a full run (default: median of cached runs)")
    args = ap.parse_args(argv)
    if args.adam < 1 or args.lbfgs < 1:
        ap.error("--adam and --lbfgs must be at least 1")
    old = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else []
    full_runs = full_budget_runs()
    new = [probe(p, v, args.adam, args.lbfgs, args.seed, args.assume_evals, full_runs)
           for p in args.problems.split(",") for v in args.variants.split(",")]
    ident = {_ident(r) for r in new}
    recs = [r for r in old if _ident(r) not in ident] + new
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(recs, indent=1))
    OUT_MD.write_text(render(recs))
    print(f"wrote {OUT_MD} and {OUT_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
