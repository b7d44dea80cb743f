"""Studies whose decision is final: their results and docs stay, their code left the tree.

Each retired study keeps its record (``benchmarks/results/<record>``) and its report, whose
first line names the commit that last wrote the record and the commit whose tree still holds
the script. This module lists them and runs one at that commit, in a throw-away git worktree,
so that every number the docs quote from a retired study can still be regenerated::

    python -m benchmarks.retired                         # the list: decision, commits, record
    python -m benchmarks.retired roofline -- --no-write  # run the study at its commit
    python -m benchmarks.retired precision -- --build-only

The run writes into the worktree's own ``benchmarks/results/`` (its path is printed); copy a
record back by hand if it should replace the committed one. Run the command from a clone (it
needs git and the repository's history).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_AT = "1f80e5f"  # the last commit whose tree holds every retired script (issue 45, item 3)


@dataclass(frozen=True)
class Retired:
    records: tuple[str, ...]  # under benchmarks/results/
    last_run: str  # the last commit that wrote its record
    decision: str  # what it decided, in one line


RETIRED: dict[str, Retired] = {
    "accurate_wall": Retired(
        ("accurate_wall.json",),
        "09c6bdf",
        "--preset accurate beside the float32 run: wall-time goal of issue 19 (met)",
    ),
    "cgm_overhead": Retired(
        ("cgm_overhead.json",), "85beb22", "CGMPINN's Adam step against PINN's, paired rounds"
    ),
    "compile_time": Retired(
        ("compile_time.json",), "4a216a2", "the headline's compile time, with the on-disk cache"
    ),
    "cost_probe": Retired(
        ("cost_probe.json",), "2df501a", "paper-budget run times, extrapolated from short probes"
    ),
    "derivatives": Retired(
        ("derivatives.json",), "cd51603", "u_xx forms timed: Taylor mode became the default"
    ),
    "gmm_speed": Retired(
        ("gmm_speed.json",), "dba500b", "the jitted 1-D EM against sklearn's GaussianMixture"
    ),
    "gn_cheaper": Retired(
        ("gn_cheaper.json",),
        "00db877",
        "sampled rows, chord steps, Jacobi CG: rejected (replaced by gn_scaling's pcg form)",
    ),
    "gn_cost": Retired(
        ("gn_cost.json",), "dc60a4d", "where a Gauss-Newton iteration's time goes (J J^T dominates)"
    ),
    "gn_wall": Retired(
        ("gn_wall.json",),
        "beeffa1",
        "heat: Gauss-Newton preset beside float64 L-BFGS; the README's figure gn_wall_heat.png",
    ),
    "headline": Retired(
        ("headline.json", "headline-gpu-h200.json"),
        "9eea2b6",
        "the engine's acceptance runs (1D Poisson headline over five seeds)",
    ),
    "inverse_oracle": Retired(
        ("inverse_oracle.json",),
        "4fa33bb",
        "least-squares oracle and Cramer-Rao bound for the inverse observations",
    ),
    "lbfgs_variants": Retired(
        ("lbfgs_variants.json",), "9eea2b6", "L-BFGS line-search settings for the headline"
    ),
    "own_pde": Retired(
        ("own_pde.json",),
        "9075756",
        "the faithful and the accurate preset on two PDEs that are not the paper's "
        "(where to start)",
    ),
    "peer_jinns": Retired(
        ("peer_jinns.json",),
        "4136f21",
        "our Gauss-Newton against jinns 1.10.2's natural gradient (ours ahead at equal time)",
    ),
    "precision": Retired(
        ("precision.json",), "e67e1f4", "float32 / float64 / self-scaled BFGS at the paper budgets"
    ),
    "resume": Retired(
        ("resume.json",), "835c628", "checkpoints survive SIGKILL: resumed runs bit for bit"
    ),
    "roofline": Retired(
        ("roofline.json",), "924565c", "FLOPs and fraction of the matmul rate per training step"
    ),
    "stop_rules": Retired(
        ("stop_rules.json",), "58efc52", "the second stage's stop rules, replayed on full runs"
    ),
    "sweep_scaling": Retired(
        ("sweep_scaling.json", "sweep_scaling-gpu-h200.json"),
        "a2c5f87",
        "vmapped sweeps over 1-32 seeds against one seed",
    ),
}


def banner(name: str) -> str:
    """The line a retired study's report starts with."""
    r = RETIRED[name]
    return (
        f"> Retired study: the record was last written at commit {r.last_run}; its script, "
        f"`benchmarks/{name}.py`, is in the tree of commit {CODE_AT} (`python -m "
        f"benchmarks.retired {name}` runs it there). The numbers below are that record's."
    )


def run(name: str, args: list[str]) -> int:
    """Run the retired study ``name`` with ``args`` in a fresh worktree of :data:`CODE_AT`."""
    if name not in RETIRED:
        raise SystemExit(
            f"benchmarks.retired: no retired study {name!r}; retired: {', '.join(sorted(RETIRED))}"
        )
    tree = Path(tempfile.mkdtemp(prefix=f"retired-{name}-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), CODE_AT], cwd=ROOT, check=True)
    print(
        f"[retired] {name} at {CODE_AT} in {tree}; its outputs go to "
        f"{tree / 'benchmarks' / 'results'} (`git worktree remove {tree}` when done)",
        flush=True,
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *args], cwd=tree, env=env
    ).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", nargs="?", help="a retired study to run at its commit")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments, after --")
    ns = ap.parse_args(argv)
    if ns.study is None:
        print("| study | decision | record last written | records |\n|---|---|---|---|")
        for name, r in sorted(RETIRED.items()):
            print(f"| {name} | {r.decision} | {r.last_run} | {', '.join(r.records)} |")
        print(f"\nEvery script is in the tree of commit {CODE_AT}.")
        return 0
    return run(ns.study, [a for a in ns.args if a != "--"])


if __name__ == "__main__":
    raise SystemExit(main())
