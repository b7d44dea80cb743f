"""Bit for bit: thirteen tiny runs' histories, for checking that a refactor changes no result.

A move of code (a new module layout, a new stage loop) must leave every number the same. This script
trains thirteen tiny runs that between them pass through every precision (float32, float64, mixed),
every second-stage member, PINN and CGMPINN, Fisher-KPP, an inverse problem and the accurate preset
(once per Gauss-Newton form), and writes every history entry (losses, terms, lambdas, evaluations,
refresh records, coefficients) and the final metrics as exact hexadecimal floats. Two such files,
written by two commits on the same machine, must be equal::

    git worktree add /tmp/base HEAD~1
    PYTHONPATH=/tmp/base python -m benchmarks.bitwise --out /tmp/base.json   # the previous commit
    python -m benchmarks.bitwise --out /tmp/new.json                          # this one
    python -m benchmarks.bitwise --compare /tmp/base.json /tmp/new.json

(``PYTHONPATH`` puts the worktree's ``cgmpinn_jax`` before the installed one; the file records
which package it imported.) Nothing is written under ``benchmarks/results/``: this is a check,
not a study. One XLA thread keeps the arithmetic the same from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import numpy as np  # noqa: E402

TINY = dict(cgm={"k_upd": 50})
# (name, problem, method, stages, config overrides[, preset]); the stage after Adam and the
# precision vary; the last runs are the accurate preset as the accuracy study trains it (float64
# Gauss-Newton, ReLoBRaLo's lambdas per refresh), the first the faithful headline's setting


def _runs():
    from cgmpinn_jax.stages import BFGS, LBFGS, SSBFGS, Adam, GaussNewton, SSBroyden

    a = Adam(steps=200)
    return (
        (
            ("f32-optax-cgmpinn-poisson1d", "poisson1d", "cgmpinn", (a, LBFGS(steps=40)), {}),
            ("f32-jaxopt-pinn-heat", "heat", "pinn", (a, LBFGS(steps=40, backend="jaxopt")), {}),
            (
                "f64-bfgs-cgmpinn-heat",
                "heat",
                "cgmpinn",
                (a, BFGS(steps=40)),
                dict(precision="float64"),
            ),
            (
                "mixed-ssbroyden-cgmpinn-poisson1d",
                "poisson1d",
                "cgmpinn",
                (a, SSBroyden(steps=40)),
                dict(precision="mixed"),
            ),
            (
                "f64-gauss_newton-cgmpinn-heat",
                "heat",
                "cgmpinn",
                (a, GaussNewton(steps=10)),
                dict(precision="float64"),
            ),
            (
                "f32-optax-cgmpinn-fisher_kpp",
                "fisher_kpp",
                "cgmpinn",
                (Adam(steps=60), LBFGS(steps=10)),
                dict(cgm={"k_upd": 20}),
            ),
            (
                "f32-ssbfgs-cgmpinn-inverse-heat",
                "inverse-heat",
                "cgmpinn",
                (a, SSBFGS(steps=40)),
                {},
            ),
            (
                "accurate-cgmpinn-poisson1d",
                "poisson1d",
                "cgmpinn",
                (a, GaussNewton(steps=10)),
                {},
                "accurate",
            ),
        )
        # the accurate preset once per Gauss-Newton form (a small network: the forms' cost is not
        # the point)
        + tuple(
            (
                f"accurate-pinn-poisson1d-{form}",
                "poisson1d",
                "pinn",
                (a, GaussNewton(steps=10, form=form)),
                dict(width=16, depth=2),
                "accurate",
            )
            for form in ("kernel", "gramian", "pcg", "matfree", "svd")
        )
    )


def _hex(a) -> list:
    return [float(x).hex() for x in np.asarray(a, dtype=np.float64).ravel()]


def fingerprint(result) -> dict:
    """Every history array and the metrics of one run, as exact hexadecimal floats."""
    h = result.history
    out = {
        name: _hex(getattr(h, name))
        for name in h._fields
        if name not in ("snapshots", "error_seconds") and getattr(h, name) is not None
    }
    out["snapshots"] = {str(k): _hex(v) for k, v in sorted(h.snapshots.items())}
    out["metrics"] = {k: float(v).hex() for k, v in result.metrics.as_dict().items()}
    out["statuses"] = [status.name for status in result.statuses.values()]
    return out


def run_all(names=None) -> dict:
    import cgmpinn_jax as cj
    from cgmpinn_jax import inverse

    out = {"package": os.path.dirname(cj.__file__), "runs": {}}
    for name, problem, method, stages, over, *preset in _runs():
        if names and name not in names:
            continue
        cfg = cj.TrainConfig.preset(
            preset[0] if preset else "faithful", stages=stages, **{**TINY, **over}
        )
        if problem == "inverse-heat":
            problem = inverse.inverse_problem("heat", n_obs=100, noise=0.01, key=0)
        res = cj.train(problem, method, cfg, key=0, quiet=True)
        out["runs"][name] = fingerprint(res)
        print(
            f"{name}: rel_e2 {res.metrics.rel_e2:.6e} "
            f"({', '.join(s.name for s in res.statuses.values())})",
            flush=True,
        )
    return out


def compare(a: dict, b: dict) -> list[str]:
    """The differences between two fingerprint files (empty: bit for bit the same)."""
    diffs = []
    for name in sorted(set(a["runs"]) | set(b["runs"])):
        ra, rb = a["runs"].get(name), b["runs"].get(name)
        if ra is None or rb is None:
            diffs.append(f"{name}: only in {'the second' if ra is None else 'the first'} file")
            continue
        for key in sorted(set(ra) | set(rb)):
            if ra.get(key) != rb.get(key):
                diffs.append(f"{name}: {key} differs")
    return diffs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the fingerprints of the runs to this JSON file")
    ap.add_argument("--only", nargs="+", help="run only these (names as in _runs())")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two fingerprint files")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(open(p).read()) for p in args.compare)
        diffs = compare(a, b)
        print(
            "\n".join(diffs)
            if diffs
            else f"bit for bit the same: {len(a['runs'])} runs "
            f"({a['package']} against {b['package']})"
        )
        return 1 if diffs else 0
    if not args.out:
        ap.error("--out or --compare is required")
    data = run_all(args.only)
    with open(args.out, "w") as fh:
        json.dump(data, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
