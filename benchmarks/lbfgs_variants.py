"""L-BFGS settings against the headline's evaluations-per-iteration target (issue: training
engine): 1D Poisson CGMPINN at the paper's budget, ReLoBRaLo off, float32, optax backend.

Variants: the default (10 line-search steps, stop after 1000 iterations without a 0.1%
gain of the unweighted loss), a shorter patience (300), and a 5-step line-search cap. For
each run: relative e2, L-BFGS iterations run, loss+gradient evaluations per iteration, the
total evaluations, and the evaluations per iteration in the first 1000 iterations and after
them (where the loss has plateaued).

Reproduce:  python -m benchmarks.lbfgs_variants [--seeds 1224,3]
Each run is one entry of the committed record benchmarks/results/lbfgs_variants.json (study
"lbfgs_variants" of benchmarks/runcache.py, full files in the git-ignored
benchmarks/cache/lbfgs_variants/); a run in the record of the current package version counts
as done. Writes benchmarks/results/lbfgs_variants.md. Wall seconds are recorded but are a
timing only when the machine was otherwise idle (the file says what else ran).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import cgmpinn_jax as cj

from benchmarks import runcache

RESULTS = runcache.RESULTS
STUDY = "lbfgs_variants"
VARIANTS = {
    "default (10 ls steps, patience 1000)": {},
    "patience 300": {"second": {"patience": 300}},
    "5 line-search steps": {"lbfgs": {"max_linesearch": 5}},
}


def run_one(label: str, overrides: dict, seed: int) -> dict:
    slug = "".join(c if c.isalnum() else "_" for c in label) + f"-seed{seed}"
    rec = runcache.cached_run(STUDY, slug, lambda: _train(label, overrides, seed),
                              accept=lambda r: r.get("version") == cj.__version__)
    # the record stores non-finite floats as "nan" / "inf"
    return {k: float(v) if v in ("nan", "inf", "-inf") else v for k, v in rec.items()}


def _train(label: str, overrides: dict, seed: int) -> dict:
    cfg = cj.TrainConfig(balancing={"stages": "none"}, **overrides)
    t0 = time.perf_counter()
    res = cj.train("poisson1d", "cgmpinn", cfg, key=seed, quiet=True)
    wall = time.perf_counter() - t0
    s = res.summary()
    lb = np.asarray(res.history.k) > res.adam_steps
    ev = np.asarray(res.history.evals)[lb]
    rec = {
        "label": label, "overrides": overrides, "seed": seed, "rel_e2": s["rel_e2"],
        "lbfgs_status": s["lbfgs_status"], "iterations": int(lb.sum()), "evals_total": int(ev.sum()),
        "evals_per_iteration": float(ev.mean()) if len(ev) else float("nan"),
        "evals_per_iteration_first_1000": float(ev[:1000].mean()) if len(ev) else float("nan"),
        "evals_per_iteration_after_1000": float(ev[1000:].mean()) if len(ev) > 1000 else float("nan"),
        "wall_s": wall, "version": cj.__version__,
        "machine": runcache.machine_text("{arch}, {cpu_count} cores, jax {jax}, {backend}"),
        "load_at_start": os.getloadavg()[0],
    }
    print(f"  {label} seed {seed}: rel_e2={rec['rel_e2']:.3e} iters={rec['iterations']} evals/it={rec['evals_per_iteration']:.2f} "
          f"total={rec['evals_total']} wall={wall:.1f}s", flush=True)
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1224,3")
    args = ap.parse_args(argv)
    recs = [run_one(label, ov, int(seed)) for label, ov in VARIANTS.items() for seed in args.seeds.split(",")]
    lines = [
        "# L-BFGS settings vs evaluations per iteration (1D Poisson CGMPINN, ReLoBRaLo off, paper budget)",
        "",
        f"cgmpinn-jax {cj.__version__}; {recs[0]['machine']}; float32, optax L-BFGS. "
        f"Command: `python -m benchmarks.lbfgs_variants --seeds {args.seeds}`.",
        "Wall seconds: these runs shared the 2-core machine with other benchmark jobs (1-min load at "
        "start in the json), so they are not timings; iterations and evaluations are exact counts.",
        "",
        "| variant | seed | relative e2 | L-BFGS iterations | evals / it. | evals / it. (first 1000) | evals / it. (after) | total evals | stop |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        lines.append(f"| {r['label']} | {r['seed']} | {r['rel_e2']:.2e} | {r['iterations']} | {r['evals_per_iteration']:.2f} | "
                     f"{r['evals_per_iteration_first_1000']:.2f} | {r['evals_per_iteration_after_1000']:.2f} | {r['evals_total']} | "
                     f"{r['lbfgs_status']} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lbfgs_variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
