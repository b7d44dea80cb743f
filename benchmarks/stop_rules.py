"""The measurement behind the second stage's stop rules (``cgmpinn_jax.config.stop_rule``).

Trains 1D Poisson (PINN and CGMPINN, the paper's budget) with the stop rule switched off
(``second.patience`` = the whole budget, ``second.gtol`` = 0) in each precision, then replays
candidate LOSS_TOL rules on the recorded per-iteration unweighted loss: for each rule, the
iteration where it would have fired and how far the best loss then was above the best loss
of the full run. A rule "fits" a precision when it fires only where the remaining gain is
small (float32: where the loss stopped falling; float64: not while it still falls).

    python -m benchmarks.stop_rules [--precisions float32 float64] [--methods pinn cgmpinn]
                                    [--seed 1224] [--second-stage optax]

Writes benchmarks/results/stop_rules.{json,md} (per run: metrics at the end of the full budget,
evaluations per iteration, and the replayed rules). Run it alone: it times nothing, but each
run takes minutes (float64 PINN ~6 min on one core of the development machine).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

RESULTS = Path(__file__).parent / "results"
CANDIDATES = [  # (ftol, patience)
    (1e-3, 1000), (1e-4, 1000), (1e-6, 1000), (1e-9, 1000), (1e-9, 2000), (1e-12, 2000), (0.0, 2000),
]


def replay(raw_total: np.ndarray, ftol: float, patience: int) -> int | None:
    """The 0-based iteration where LOSS_TOL(ftol, patience) fires on this loss curve, or None.

    Mirrors the engine: the stall count resets when the loss beats the best so far by a
    relative ftol, and the best is updated whenever the loss is lower."""
    best, stall = np.inf, 0
    for i, v in enumerate(raw_total):
        improved = v < best * (1.0 - ftol)
        if np.isfinite(v) and v < best:
            best = v
        stall = 0 if improved else stall + 1
        if stall >= patience:
            return i
    return None


def run_one(method: str, precision: str, seed: int, second_stage: str) -> dict:
    import cgmpinn_jax as cj

    problem = cj.get_problem("poisson1d")
    d = problem.defaults
    cfg = cj.TrainConfig(precision=precision, second_stage=second_stage,
                         second=cj.SecondStageOptions(gtol=0.0, patience=d.lbfgs_steps + 1))
    t0 = time.perf_counter()
    res = cj.train(problem, method, cfg, key=seed, quiet=True)
    wall = time.perf_counter() - t0
    h = res.history
    second = h.k > res.adam_steps
    raw_total = np.nansum(h.raw[second], axis=1)
    final_best = float(np.nanmin(raw_total))
    rules = []
    for ftol, patience in CANDIDATES:
        at = replay(raw_total, ftol, patience)
        best_then = final_best if at is None else float(np.nanmin(raw_total[: at + 1]))
        rules.append({"ftol": ftol, "patience": patience, "fires_at": at, "best_loss_then_over_final": best_then / final_best})
    return {
        "method": method, "precision": precision, "second_stage": second_stage, "seed": seed,
        "rel_e2_full_budget": res.metrics.rel_e2, "lbfgs_status": res.statuses["lbfgs"].name,
        "evals_per_iteration": res.evals_per_lbfgs_iteration, "best_loss": final_best,
        "loss_at": {str(k): float(np.nanmin(raw_total[:k])) for k in (1000, 2000, 4000, 6000, 8000, len(raw_total))
                    if k <= len(raw_total)},
        "wall_seconds": wall, "compile_seconds": res.compile_seconds, "rules": rules,
    }


def to_markdown(runs: list[dict], command: str) -> str:
    lines = ["# Stop rules: where candidate LOSS_TOL rules fire (1D Poisson, full budget)", "",
             f"Command: `{command}`. Each run trains the paper's budget with the stop rule off; each rule is",
             "replayed on its per-iteration unweighted loss (PDE + BC). `fires` = second-stage iteration",
             "(never = runs the budget); `loss ratio` = best loss at that point / best loss of the full run.", ""]
    head = "| run | rel e2 (full) | evals/it | " + " | ".join(f"ftol {f:g}, {p}" for f, p in CANDIDATES) + " |"
    lines += [head, "|" + "---|" * (3 + len(CANDIDATES))]
    for r in runs:
        cells = []
        for rule in r["rules"]:
            at = "never" if rule["fires_at"] is None else str(rule["fires_at"])
            cells.append(f"{at} ({rule['best_loss_then_over_final']:.3g})")
        lines.append(f"| {r['method']} {r['precision']} {r['second_stage']} seed {r['seed']} | {r['rel_e2_full_budget']:.3e} | "
                     f"{r['evals_per_iteration']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precisions", nargs="+", default=["float64"])
    ap.add_argument("--methods", nargs="+", default=["pinn", "cgmpinn"])
    ap.add_argument("--seed", type=int, default=1224)
    ap.add_argument("--second-stage", default="optax")
    args = ap.parse_args(argv)
    out = RESULTS / "stop_rules.json"
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    done = {(r["method"], r["precision"], r["second_stage"], r["seed"]) for r in runs}
    for precision in args.precisions:
        for method in args.methods:
            if (method, precision, args.second_stage, args.seed) in done:
                continue
            r = run_one(method, precision, args.seed, args.second_stage)
            print(json.dumps({k: v for k, v in r.items() if k != "rules"}), flush=True)
            runs.append(r)
            host = runcache.host("platform", "arch")
            out.write_text(json.dumps({"machine": {"platform": host["platform"], "processor": host["arch"]},
                                       "runs": runs}, indent=1))
    command = "python -m benchmarks.stop_rules " + " ".join(argv or [])
    (RESULTS / "stop_rules.md").write_text(to_markdown(runs, command.strip()))
    print(to_markdown(runs, command.strip()))


if __name__ == "__main__":
    main()
