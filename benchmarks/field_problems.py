"""Problems as the field poses them: the worked examples (``cgmpinn_jax.problems.worked``) trained
against their reference data, and the choice of the curriculum weighting on a system.

Cells (``--list``):

* ``cavity_norm`` / ``cavity_per_equation``: the lid-driven cavity (three fields, three equations),
  CGMPINN, float32, Adam then L-BFGS, with ``cgm.system_weighting="norm"`` (one mixture on each
  point's residual norm) and ``"per_equation"`` (one per equation); the same seeds, so the pair
  decided the default ("per_equation" since ``CONFIG_DEFAULTS`` 2). ``cavity_pinn``: the same budget
  for PINN, the baseline of that pair.
* ``cavity_accurate``: the accurate preset (float64, Gauss-Newton) at a size that fits the 2-core
  CPU (``n_pde`` 1000, width 40), 400 Gauss-Newton iterations (``_gn800``: 800);
  ``cavity_refined_gn800`` / ``_gn1500``: with 250 more points under the lid and in its top corners
  (``n_refine``), where the pressure is steep; each cavity run also records its errors beyond 0.01
  of the top corners.
* ``burgers_accurate``: Burgers from its initial data, nu = 0.01/pi, accurate preset (``_gn300``:
  300 Gauss-Newton iterations; ``burgers_n6000_gn600``...: more points, ``_front2000``: around the
  front; ``_pcg``: ``GaussNewton(form="pcg")``, on the Gramian side with more rows than parameters,
  on the kernel side at 7800 rows).
* ``holes``: the square with four holes, faithful float32 budget, PINN and CGMPINN.

Every run is cached (``benchmarks/runcache.py``: the record ``field_problems.json``; the full file
and the model in the ignored cache); a run checkpoints every 2 minutes and a killed one resumes (an
``init`` run is saved).

    python -m benchmarks.field_problems --cells cavity_norm cavity_per_equation --seeds 0 1
    python -m benchmarks.field_problems --report-only
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks import runcache, tracking

STUDY = "field_problems"
CAVITY_SMALL = {"n_pde": 1000, "n_wall": 300, "n_lid": 150}
_budget = lambda adam, second: {"steps": (adam, second)}  # noqa: E731  (each stage's budget; None: the preset's)
BURGERS_POINTS = (
    (6000, 0, 600),
    (12000, 0, 300),
    (4000, 2000, 300),
    (6000, 2000, 300),
    (10000, 3000, 300),
)  # (uniform, around the front, GN its)
BURGERS_PCG = (
    (6000, 2000, 1000),
    (5600, 1800, 1000),
    (5600, 1800, 1500),
)  # (uniform, around the front, GN its); rows = points + 400
CELLS: dict[str, dict] = {
    "cavity_norm": dict(
        problem="cavity",
        method="cgmpinn",
        **_budget(3000, 3000),
        config=dict(cgm={"system_weighting": "norm"}),
    ),
    "cavity_per_equation": dict(
        problem="cavity",
        method="cgmpinn",
        **_budget(3000, 3000),
        config=dict(cgm={"system_weighting": "per_equation"}),
    ),
    "cavity_pinn": dict(problem="cavity", method="pinn", **_budget(3000, 3000)),
    "cavity_accurate": dict(
        problem="cavity",
        method="pinn",
        preset="accurate",
        params=CAVITY_SMALL,
        config=dict(width=40),
        **_budget(5000, 400),
    ),
    "cavity_accurate_gn800": dict(
        problem="cavity",
        method="pinn",
        preset="accurate",
        params=CAVITY_SMALL,
        config=dict(width=40),
        **_budget(5000, 800),
    ),
    **{
        f"cavity_refined_gn{n}": dict(
            problem="cavity",
            method="pinn",
            preset="accurate",
            params=dict(CAVITY_SMALL, n_refine=250),
            config=dict(width=40),
            **_budget(5000, n),
        )
        for n in (800, 1500)
    },
    "burgers_accurate": dict(problem="burgers_data", method="pinn", preset="accurate"),
    "burgers_accurate_gn300": dict(
        problem="burgers_data", method="pinn", preset="accurate", **_budget(None, 300)
    ),
    "burgers_accurate_cgmpinn": dict(problem="burgers_data", method="cgmpinn", preset="accurate"),
    **{
        f"burgers_n{n}{f'_front{r}' if r else ''}_gn{g}": dict(
            problem="burgers_data",
            method="pinn",
            preset="accurate",
            **_budget(None, g),
            params=dict(n_pde=n, **({"n_refine": r} if r else {})),
        )
        for n, r, g in BURGERS_POINTS
    },
    **{
        f"burgers_n{n}_front{r}_pcg_gn{g}": dict(
            problem="burgers_data",
            method="pinn",
            preset="accurate",
            **_budget(None, g),
            second=dict(form="pcg"),
            params=dict(n_pde=n, n_refine=r),
        )
        for n, r, g in BURGERS_PCG
    },
    # the Adam stage alone on the uniform points ("init"), then Gauss-Newton alone on them plus the
    # refined ones
    "burgers_n6000_then_front2000_pcg_gn1000": dict(
        problem="burgers_data",
        method="pinn",
        preset="accurate",
        params=dict(n_pde=6000, n_refine=2000),
        init=dict(n_pde=6000),
        **_budget(0, 1000),
        second=dict(form="pcg"),
    ),
    **{
        f"holes_{m}": dict(problem="holes", method=m, **_budget(5000, 5000))
        for m in ("pinn", "cgmpinn")
    },
}
THRESHOLDS = (1e-2, 1e-4, 1e-5)


def _median_k(hits):
    return (
        "-"
        if not any(hits)
        else f"{np.median([h['k'] for h in hits if h]):.0f}"
        + ("" if all(hits) else f" ({sum(map(bool, hits))}/{len(hits)})")
    )


def config_of(cell: dict):
    """The cell's preset with its ``config``, each stage's budget from ``steps`` (None: the
    preset's) and the options of the stage after Adam from ``second``."""
    from cgmpinn_jax import TrainConfig

    cfg = TrainConfig.preset(cell.get("preset", "faithful"), **cell.get("config", {}))
    cfg = cfg.with_steps(*cell.get("steps", (None,) * len(cfg.stages)))
    return (
        cfg.replace(stages=(cfg.stages[0], cfg.stages[1].replace(**cell["second"])))
        if "second" in cell
        else cfg
    )


def setting_text(cell: dict) -> str:
    """The cell's setting in the report: preset, options, each stage it changes
    (``GaussNewton(steps=300)``)."""
    cfg, opts = config_of(cell), cell.get("config", {})
    changed = sorted(
        {i for i, n in enumerate(cell.get("steps", ())) if n is not None}
        | ({1} if "second" in cell else set())
    )

    def text(st):
        args = ", ".join(
            f"{k}={v!r}"
            for k, v in st.to_dict().items()
            if k != "name" and getattr(type(st)(), k) != v
        )
        return f"{type(st).__name__}({args})"

    return (
        cell.get("preset", "faithful")
        + "".join(f", {k}={v}" for k, v in opts.items() if k in ("width", "depth"))
        + "".join(f", {text(cfg.stages[i])}" for i in changed)
        + "".join(f", {k}={v}" for k, v in opts.items() if k not in ("width", "depth"))
    )


def train_cell(name: str, seed: int, track_every: int) -> dict:
    import cgmpinn_jax as cj

    cell, saved = CELLS[name], runcache.CACHE / STUDY / f"{name}__seed{seed}"
    problem, config, init = (
        cj.get_problem(cell["problem"], **cell.get("params", {})),
        config_of(cell),
        None,
    )
    # its Adam stage (the preset's, on the points cell["init"] names), saved; its seconds are added
    if "init" in cell:
        if not saved.with_suffix(".init").exists():
            cj.save_result(
                cj.train(
                    cj.get_problem(cell["problem"], **cell["init"]),
                    cell["method"],
                    config_of(
                        {
                            "preset": cell.get("preset", "faithful"),
                            "config": {**cell.get("config", {}), **cell.get("init_config", {})},
                            "steps": (None, 0),
                        }
                    ),
                    key=seed,
                    quiet=True,
                ),
                saved.with_suffix(".init"),
            )
        init = cj.load_model(saved.with_suffix(".init"))
    res, resume = runcache.train_resumable(
        STUDY,
        f"{name}__seed{seed}",
        problem,
        cell["method"],
        config,
        key=seed,
        quiet=False,
        track_error_every=track_every,
        init=None if init is None else init.model,
    )
    cj.save_result(res, saved.with_suffix(".model"))  # ignored; for error maps
    h, s, extra = (
        res.history,
        res.summary(),
        {"beyond_corners": beyond_corners(res.model, problem.reference())}
        if problem.name == "cavity"
        else {},
    )
    hits = {
        f"{t:g}": tracking.first_reach(h.error_k, h.error_seconds, h.error_rel_e2, t)
        for t in THRESHOLDS
    }
    reach = {t: None if k is None else {"k": k, "seconds": sec} for t, (k, sec) in hits.items()}
    return {
        "cell": name,
        "problem": problem.name,
        "params": cell.get("params", {}),
        "method": cell["method"],
        "preset": cell.get("preset", "faithful"),
        "seed": seed,
        "config": config.to_dict(),
        "metrics": res.metrics.as_dict(),
        "stages": res.stage_lines(),
        "first_reach": reach,
        "compile_seconds": s["compile_seconds"],
        "run_seconds": s["run_seconds"],
        "resumed": resume,
        **extra,
        **(
            {}
            if init is None
            else {
                "init_seconds": init.info["summary"]["compile_seconds"]
                + init.info["summary"]["run_seconds"],
                "init_rel_e2": init.info["summary"]["rel_e2"],
            }
        ),
        "history": {"k": h.error_k, "seconds": h.error_seconds, "rel_e2": h.error_rel_e2},
    }


def beyond_corners(model, ref, radius: float = 0.01) -> dict:
    """The cavity's relative L2 (per field, pooled) at the reference points farther than ``radius``
    from both top corners, where the pressure is log-singular (along the lid ~ -0.08 ln d)."""
    import jax

    x, v = (
        np.asarray(ref.points),
        np.asarray(ref.values),
    )  # ref: the cavity's reference (its Reference)
    keep = np.minimum(np.hypot(x[:, 0], 1 - x[:, 1]), np.hypot(1 - x[:, 0], 1 - x[:, 1])) > radius
    with jax.enable_x64(True):
        e, v = np.asarray(jax.jit(jax.vmap(model))(x[keep])) - v[keep], v[keep]
    return {
        "radius": radius,
        "left_out": int((~keep).sum()),
        "pooled": float(np.linalg.norm(e) / np.linalg.norm(v)),
        **dict(zip(ref.fields, (np.linalg.norm(e, axis=0) / np.linalg.norm(v, axis=0)).tolist())),
    }


def report(runs: dict) -> str:
    by_cell = {
        c: [r for r in runs.values() if r["cell"] == c] for c in {r["cell"] for r in runs.values()}
    }
    lines = [
        "# Problems as the field poses them: the worked examples against their references",
        "",
        "Generated by `python -m benchmarks.field_problems --report-only` from "
        "`field_problems.json`. Relative L2 over every field and point together (PINNacle's "
        "L2RE), median [min - max] over the seeds; `against` is the reference each error is "
        "measured against.",
        "",
        "| cell | problem | method | setting | seeds | rel. L2 (pooled) | per field (median) | "
        "seconds (median) | first <= 1e-2 / 1e-4 / 1e-5 (iteration k, median; n/N: seeds that "
        "got there) | stop | commit |",
        "|" + "---|" * 11,
    ]
    for name, rs in sorted(
        by_cell.items(), key=lambda kv: list(CELLS).index(kv[0]) if kv[0] in CELLS else 99
    ):
        rs = sorted(rs, key=lambda r: r["seed"])
        rel = np.array([r["metrics"]["rel_e2"] for r in rs], float)
        fields = rs[0]["metrics"].get("fields", {})
        per = (
            ", ".join(
                f"{f} {np.median([r['metrics']['fields'][f]['rel_e2'] for r in rs]):.2e}"
                for f in fields
            )
            or "-"
        )
        if all(
            "beyond_corners" in r for r in rs
        ):  # the cavity: without the points next to the top corners
            per += "; beyond 0.01 of the top corners: " + ", ".join(
                f"{k} {np.median([r['beyond_corners'][k] for r in rs]):.2e}"
                for k in ("pooled", *fields)
            )
        secs = np.median(
            [r["compile_seconds"] + r["run_seconds"] + r.get("init_seconds", 0) for r in rs]
        )
        reach = " / ".join(
            _median_k([r["first_reach"].get(f"{t:g}") for r in rs]) for t in THRESHOLDS
        )
        setting = setting_text(CELLS[name]) if name in CELLS else rs[0]["preset"]
        setting += "".join(f", {k}={v}" for k, v in rs[0].get("params", {}).items())
        stop = rs[0]["stages"][-1].split(",")[-1].strip() if rs[0]["stages"] else "-"
        lines.append(
            f"| {name} | {rs[0]['problem']} | {rs[0]['method']} | {setting} | "
            f"{','.join(str(r['seed']) for r in rs)} | "
            f"{np.median(rel):.2e} [{rel.min():.2e} - {rel.max():.2e}] | {per} | {secs:.0f} | "
            f"{reach} | {stop} | {', '.join(sorted({r['commit'] for r in rs}))} |"
        )
    against = sorted({r["metrics"].get("against", "exact") for r in runs.values()})
    machines = sorted(
        {
            f"{r['machine'].get('processor') or r['machine'].get('platform')}, {r['threads']}"
            for r in runs.values()
            if "machine" in r
        }
    )
    lines += [
        "",
        "References: " + "; ".join(against) + ".",
        "",
        "Machine: " + "; ".join(machines) + ". "
        "The runs of 2026-11-29 shared the 2-core machine with one to three other jobs, so their "
        "seconds are an upper bound, not a speed measurement.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--track-every", type=int, default=100)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    args, study = ap.parse_args(argv), runcache.Study(STUDY)
    if args.list:
        done = study.load()
        for name, cell in CELLS.items():
            seeds = sorted(r["seed"] for r in done.values() if r["cell"] == name)
            print(f"{name:26s} {cell['problem']:13s} {cell['method']:8s} done seeds {seeds}")
        return 0
    if not args.report_only:
        for name in args.cells:
            for seed in args.seeds:
                r = study.run(
                    f"{name}__seed{seed}",
                    lambda name=name, seed=seed: train_cell(name, seed, args.track_every),
                )
                print(
                    f"{name} seed {seed}: rel L2 {r['metrics']['rel_e2']:.3e} "
                    f"({r['compile_seconds'] + r['run_seconds']:.0f} s)",
                    flush=True,
                )
    return (
        0
        if study.write_report(report) is None
        else print(f"wrote {study.record_path.with_suffix('.md')}") or 0
    )


if __name__ == "__main__":
    raise SystemExit(main())
