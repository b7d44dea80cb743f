"""The figures of the docs pages, drawn by a script, never by hand.

Two kinds, written into ``docs/img/`` (committed: the site shows them):

- **Fields** of each worked example and of the own-PDE example: one run each of the accurate
  preset (float64, Adam then Gauss-Newton) at the reduced budget of `FIELDS`, seed 0, on one
  XLA thread; ``cj.plots.plot_result`` draws the solution beside its reference and the error
  field. The caption's numbers come from ``docs/img/fields.json``, which this script writes.
- **Curves** from the accuracy study's committed record (``benchmarks/results/accuracy.json``):
  per problem, the seconds each run took to reach each relative-e2 level, PINN and CGMPINN.

    python -m benchmarks.docs_figures            # both (the fields train: minutes on one core)
    python -m benchmarks.docs_figures --curves   # the curves only (no training)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path


from benchmarks import runcache

IMG = runcache.BENCH.parent / "docs" / "img"
ACCURACY = runcache.BENCH / "results" / "accuracy.json"
# name: (problem factory path, problem parameters, Adam steps, second-stage iterations, method,
# preset)
FIELDS = {
    "burgers_from_data": (
        "cgmpinn_jax.problems:BurgersFromData",
        {},
        2000,
        100,
        "pinn",
        "accurate",
    ),
    "lid_driven_cavity": ("cgmpinn_jax.problems:LidDrivenCavity", {}, 2000, 30, "pinn", "accurate"),
    "square_with_holes": ("cgmpinn_jax.problems:SquareWithHoles", {}, 2000, 50, "pinn", "accurate"),
    "own_pde_viscous_burgers": (
        "cgmpinn_jax.examples:ViscousBurgers",
        {},
        2000,
        100,
        "pinn",
        "accurate",
    ),
    # the inverse page's example as it is written there (the default settings, L-BFGS): also
    # unknowns.png
    "inverse_fisher_kpp": (
        "cgmpinn_jax.inverse:inverse_problem",
        {"problem": "fisher_kpp", "n_obs": 200, "noise": 0.01, "key": 0},
        3000,
        3000,
        "cgmpinn",
        "faithful",
    ),
}


def _problem(path: str, params: dict):
    import importlib

    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)(**params)


def draw_fields(names=tuple(FIELDS), out: Path = IMG) -> dict:
    """Train each example of `FIELDS` and write ``<name>_solution.png`` and ``<name>_error.png``;
    returns ``{name: facts}`` (error, budget, seconds), also written to ``fields.json``."""
    import cgmpinn_jax as cj
    from cgmpinn_jax.plots import plot_result

    facts = {}
    for name in names:
        path, params, adam, second, method, preset = FIELDS[name]
        prob = _problem(path, params)
        cfg = cj.TrainConfig.preset(preset).with_steps(adam, second)
        t0 = time.perf_counter()
        res = cj.train(prob, method, cfg, key=0, quiet=True)
        wall = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            for png in plot_result(res, tmp):
                if png.stem in ("solution", "error", "unknowns"):
                    shutil.copy(png, out / f"{name}_{png.stem}.png")
        m = res.metrics.as_dict()
        facts[name] = {
            "problem": type(prob).__name__,
            "method": method,
            "preset": preset,
            "seed": 0,
            "adam_steps": adam,
            "second_steps": second,
            "rel_e2": m["rel_e2"],
            "against": m.get("against", "exact"),
            "wall_seconds": round(wall, 1),
            "commit": runcache.code_commit(),
            **({"unknowns": res.unknowns.as_dict()} if res.unknowns is not None else {}),
        }
        print(f"{name}: relative e2 {m['rel_e2']:.2e} ({wall:.0f} s)", flush=True)
        record = out / "fields.json"  # after each example: a stopped run keeps what it drew
        old = json.loads(record.read_text()) if record.exists() else {}
        record.write_text(json.dumps({**old, name: facts[name]}, indent=1, sort_keys=True) + "\n")
    return facts


def draw_curves(record: Path = ACCURACY, out: Path = IMG) -> Path:
    """``accuracy_reach.png``: per problem of the accuracy study, the seconds to reach each level
    (one line per run, PINN and CGMPINN), from the record's ``reach`` entries."""
    from cgmpinn_jax.plots import require_matplotlib

    plt = require_matplotlib()
    runs = json.loads(record.read_text())["runs"]
    problems = sorted({r["problem"] for r in runs.values()})
    from matplotlib.ticker import NullFormatter

    cols = 3
    rows = -(-len(problems) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.4 * cols, 3.0 * rows), sharey=True, squeeze=False
    )
    axes = axes.ravel()
    for ax in axes[len(problems) :]:
        ax.set_visible(False)
    colors = {"pinn": "tab:blue", "cgmpinn": "tab:orange"}
    for ax, prob in zip(axes, problems):
        for r in sorted(
            (r for r in runs.values() if r["problem"] == prob), key=lambda q: q["method"]
        ):
            pts = sorted(
                (v["seconds"], float(lvl))
                for lvl, v in r.get("reach", {}).items()
                if v and v["seconds"]
            )
            if pts:
                s, e = zip(*pts)
                ax.plot(
                    s,
                    e,
                    "o-",
                    color=colors.get(r["method"], "gray"),
                    alpha=0.6,
                    ms=3,
                    label=r["method"].upper()
                    if r["seed"] == min(q["seed"] for q in runs.values() if q["problem"] == prob)
                    else None,
                )
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("log")
        ax.set_title(prob.replace("_", " "), fontsize=9)
        ax.set_xlabel("seconds")
        ax.grid(alpha=0.3)
    for ax in axes[::cols]:
        ax.set_ylabel("relative e2 reached")
    axes[0].legend(fontsize=8)
    fig.suptitle(
        "The accurate preset: seconds to each error level (one line per seed)", fontsize=10
    )
    fig.tight_layout()
    path = out / "accuracy_reach.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--curves", action="store_true", help="the curves only (no training)")
    ap.add_argument(
        "--fields",
        nargs="*",
        default=None,
        choices=list(FIELDS),
        help="the fields only (default: all)",
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("XLA_FLAGS", runcache.ONE_THREAD_XLA_FLAGS)
    IMG.mkdir(parents=True, exist_ok=True)
    if args.fields is None or args.curves:
        draw_curves()
    if not args.curves:
        draw_fields(tuple(args.fields) if args.fields else tuple(FIELDS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
