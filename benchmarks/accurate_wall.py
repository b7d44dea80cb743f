"""``--preset accurate`` against today's float32 full-budget run: wall time side by side.

Issue 19's wall-time goal: ``cgmpinn-jax run --preset accurate`` (1D Poisson CGMPINN, paper
budget, seed 1224) must reach relative e2 <= 1e-5 in no more wall time than the faithful
float32 CGMPINN run trained for the full budget (stop rule off). Both runs start at the same
moment, each in its own process with one XLA thread, pinned to its own core (``taskset``), so
they see the same machine and the same load: the ratio is the figure; the seconds are this
machine's.

    python -m benchmarks.accurate_wall            # both runs (~15-20 min on this CPU)
    python -m benchmarks.accurate_wall --build-only

Writes ``benchmarks/results/accurate_wall.{json,md}``; the full per-run files go to the
ignored ``benchmarks/cache/accurate_wall/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import runcache

STUDY = "accurate_wall"
RESULTS = Path(__file__).parent / "results"
SEED = 1224
VARIANTS = {
    # the preset exactly as the CLI builds it
    "accurate": "cj.TrainConfig.preset('accurate_lbfgs')",
    # the faithful float32 default with the stop rule off: the full 10000 iterations
    "float32-full": "cj.TrainConfig(second=cj.SecondStageOptions(gtol=0.0, patience=10001))",
}

WORKER = """
import json, sys, time
import numpy as np
import cgmpinn_jax as cj
t0 = time.perf_counter()
res = cj.train("poisson1d", "cgmpinn", {config}, key={seed}, quiet=True)
wall = time.perf_counter() - t0
s = res.summary()
second = np.asarray(res.history.k) > res.adam_steps
ev = np.asarray(res.history.evals)
out = dict(variant={variant!r}, seed={seed}, rel_e2=float(res.metrics.rel_e2), e_loss=float(res.e_loss),
           wall_seconds=wall, compile_seconds=s["compile_seconds"], run_seconds=s["run_seconds"],
           lbfgs_status=res.statuses["lbfgs"].name, adam_status=res.statuses["adam"].name,
           total_evals=int(ev.sum()), lbfgs_iterations=int(second.sum()),
           lbfgs_evals=int(ev[second].sum()), evals_per_iteration=res.evals_per_lbfgs_iteration,
           config=res.config.to_dict())
json.dump(out, open(sys.argv[1], "w"))
"""


def launch(variant: str, core: int, out: Path) -> subprocess.Popen:
    code = WORKER.format(config=VARIANTS[variant], seed=SEED, variant=variant)
    env = dict(os.environ, XLA_FLAGS=runcache.ONE_THREAD_XLA_FLAGS)
    return subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", code, str(out)], env=env)


def run_pair() -> None:
    study = runcache.Study(STUDY)
    tmp = Path(runcache.CACHE) / STUDY
    tmp.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    started = runcache._now()
    procs = {v: (launch(v, i, tmp / f"{v}.out.json")) for i, v in enumerate(VARIANTS)}
    for v, p in procs.items():
        if p.wait() != 0:
            raise SystemExit(f"{v} run failed (exit {p.returncode})")
    load1 = os.getloadavg()
    for v in VARIANTS:
        full = json.loads((tmp / f"{v}.out.json").read_text())
        full.update(started_at=started, load_start=load0, load_end=load1, xla_flags=runcache.ONE_THREAD_XLA_FLAGS,
                    pinned="one core per run (taskset), both runs at the same time")
        study.save(f"{v}-seed{SEED}", full)


def build() -> None:
    recs = runcache.Study(STUDY).load()
    acc, f32 = recs.get(f"accurate-seed{SEED}"), recs.get(f"float32-full-seed{SEED}")
    old = recs.get(f"accurate-iteration-seed{SEED}")  # the preset before it moved the lambdas per refresh
    lines = [
        "# `--preset accurate` vs the float32 full-budget run, side by side",
        "",
        "Command: `python -m benchmarks.accurate_wall`; record `benchmarks/results/accurate_wall.json`.",
        f"1D Poisson, CGMPINN, paper budget (5000 Adam + 10000 second-stage iterations), seed {SEED}. Both runs",
        "started at the same moment, each in its own process with one XLA thread pinned to its own core",
        "(`taskset`): same machine, same load, compile time apart. Wall = the whole `cj.train` call.",
        "",
        "| run | rel e2 | wall s | compile s | run s | second-stage its | evals/it | total evals | stop |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    config = (acc or {}).get("config", {})  # today's form (balancing.second_stage_apply), or the flat one before it
    apply = (config.get("balancing") or {}).get("second_stage_apply") or config.get("relobralo_lbfgs_apply", "?")
    for name, r in ((f"`--preset accurate` (float64, optax L-BFGS, ReLoBRaLo lambdas per {apply}, float64 stop rule)", acc),
                    ("float32 faithful, stop rule off (full budget)", f32)):
        if r is None:
            lines.append(f"| {name} | not run | | | | | | | |")
            continue
        epi = r["evals_per_iteration"]
        lines.append(f"| {name} | {r['rel_e2']:.3e} | {r['wall_seconds']:.0f} | {r['compile_seconds']:.1f} | "
                     f"{r['run_seconds']:.0f} | {r['lbfgs_iterations']} | {epi:.2f} | {r['total_evals']} | "
                     f"{r['lbfgs_status']} |")
    if acc and f32:
        lines += [
            "",
            f"Wall-time ratio accurate / float32-full: **{acc['wall_seconds'] / f32['wall_seconds']:.2f}** "
            f"(goal: <= 1 with rel e2 <= 1e-5; accurate reached {acc['rel_e2']:.2e}).",
            f"Load average at start {acc['load_start']}, at end {acc['load_end']}; machine: "
            f"{acc['machine'].get('processor')}, {acc['machine'].get('cpu_count')} CPUs, jax {acc['machine'].get('jax')}.",
        ]
    if old:
        lines += [
            "",
            "The preset before it moved ReLoBRaLo's lambdas once per refresh (float64, optax L-BFGS, lambdas every "
            "iteration), measured the same way in an earlier pair (its float32 partner: "
            f"{old['partner_wall_seconds']:.0f} s, rel e2 {old['partner_rel_e2']:.3e}): rel e2 {old['rel_e2']:.3e}, {old['wall_seconds']:.0f} s "
            f"({old['compile_seconds']:.1f} s compile), {old['evals_per_iteration']:.2f} evals/it, {old['lbfgs_status']}.",
        ]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{STUDY}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-only", action="store_true")
    a = ap.parse_args()
    if not a.build_only:
        run_pair()
    build()
