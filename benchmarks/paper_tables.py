"""Reproduce the paper's method, optimizer and ablation tables over several seeds.

For every (problem, variant, seed) one training run at the paper's budget (Adam 5000 + L-BFGS
10000; Fisher-KPP 8000 + 12000), the seeds of one (problem, variant) vmapped in one compiled
call (``cj.sweep``; ``--no-vmap`` trains them one by one with ``cj.train``). Variants:

* methods table: the eight methods at Adam→L-BFGS with their defaults, and CGMPINN twice:
  ``cgmpinn`` (ReLoBRaLo in both stages, as released) and ``cgmpinn_relobralo_off``;
* optimizer table (CGMPINN): ``cgmpinn_adam`` (Adam for the whole budget), ``cgmpinn_lbfgs``
  (L-BFGS for the whole budget, ReLoBRaLo off, ``lbfgs.lr = problem.defaults.lbfgs_only_lr``)
  and Adam→L-BFGS (= the ``cgmpinn`` runs, reused);
* ablation table: ``gmmpinn``, ``clpinn`` (their method defaults encode reference-code.md §11.3) and
  CGMPINN (= the ``cgmpinn`` runs, reused).

Record and cache (``benchmarks/runcache.py``, study ``paper_runs``): every finished run is one
line of the committed compact record ``benchmarks/results/paper_runs.json`` and one full JSON
file in the git-ignored cache ``benchmarks/cache/paper_runs/``, both under the run key
``<problem>__<variant>__seed<s>[__scale<x>]__<key>``, where ``key`` is 16 hex digits
of sha256 over {problem, problem_params, method, variant, config (the flat form of ``config.flat_dict``),
seed, budget_scale, version (cgmpinn_jax.__version__), x64}. A rerun skips every (problem,
variant, seed, budget scale, dtype) that the record or the cache holds, under any key (a new
package version or TrainConfig field changes the key, not the run; ``--retrain-stale`` retrains
runs recorded under another key), so a long reproduction resumes where it stopped, on any
checkout; the tables prefer, per cell and seed, the run under the current key. Fields
of a full run file (``format`` =
``cgmpinn-jax/paper-run/1``): ``key``, ``spec`` (the hashed dict), ``label``, ``seed``,
``resolved`` (adam_steps, lbfgs_steps, k_upd, relobralo), ``metrics`` (e2, rel_e2, e_inf, l2),
``e_loss``, ``statuses`` ({adam, lbfgs}: StageStatus names), ``compile_seconds``,
``run_seconds``, ``wall_seconds`` (= compile + run), ``timing`` ("single", or
"vmapped-share": the sweep's seconds divided by its number of seeds, totals in ``sweep``),
``evals_per_lbfgs_iteration``, ``loss_curve`` ({every, k, raw_total = unweighted
PDE+IC+BC, objective}: every 10th step and the last; None where a stopped run took no step),
``prediction`` (CGMPINN variants at the figure seed only: {shape, values} on the test grid,
float32 rounded to 7 digits; else null), ``machine``, ``command``, ``finished_at``. Non-finite
floats are stored as the strings "nan"/"inf". The compact record holds the same fields without
``loss_curve`` and ``prediction`` (plus ``run_key``); a full file in the cache whose run is not in
the record yet (e.g. copied back from a GPU session's ``benchmarks/cache/paper_runs/``) is added
to it by the next build.

Outputs (rebuilt from the record and the cache after every group and with ``--build-only``):
``benchmarks/results/{methods,optimizers,ablation}.md`` (committed), and, git-ignored,
``benchmarks/cache/paper_tables.json`` (the tables' statistics) and the figures in
``benchmarks/figures/``: ``<problem>_rel_e2.png`` (relative e2 of every run, by variant; from
the record alone), ``<problem>_loss.png`` (median unweighted loss curves of every variant; only
from runs whose full file is in the local cache) and ``<problem>_cgmpinn.png`` (CGMPINN
prediction, exact solution, absolute error; only where the cache holds the figure seed's full
CGMPINN file).

Usage (from the repository root)::

    python -m benchmarks.paper_tables                              # everything, seeds 0-4
    python -m benchmarks.paper_tables --problems poisson1d --methods pinn,cgmpinn --seeds 0,1,2
    python -m benchmarks.paper_tables --tables optimizers --timeout-hours 6
    python -m benchmarks.paper_tables --budget-scale 0.1           # quick, marked "(scale 0.1)"
    python -m benchmarks.paper_tables --build-only                 # tables + figures from record + cache
    python -m benchmarks.paper_tables --list                       # planned runs, cached or not, CPU minutes left
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache
from benchmarks import tables_lib as tl

ROOT = Path(__file__).resolve().parents[1]

RESULTS = runcache.RESULTS  # benchmarks/results: committed .md tables and the compact record
STUDY = "paper_runs"
RECORD_NAME = f"{STUDY}.json"  # benchmarks/results/paper_runs.json
RUNS = runcache.CACHE / STUDY  # benchmarks/cache/paper_runs: full run files (git-ignored)
TABLES_JSON = runcache.CACHE / "paper_tables.json"  # git-ignored
FIGURES = ROOT / "benchmarks" / "figures"  # git-ignored
CURVE_EVERY = 10
DEFAULT_SEEDS = (0, 1, 2, 3, 4)

# variant order of execution: the verdict pair first, so a partial reproduction is useful early
RUN_ORDER = ("cgmpinn", "pinn", "cgmpinn_relobralo_off", "lbpinn", "gpinn", "lnn_pinn", "star_pinn",
             "gmmpinn", "clpinn", "cgmpinn_adam", "cgmpinn_lbfgs")


def _cj():
    import cgmpinn_jax as cj

    return cj


# ------------------------------------------------------------------------------------------
# run specs


def scaled(n: int, scale: float) -> int:
    """``n`` scaled by ``scale``, at least 1 when ``n`` > 0."""
    return 0 if n == 0 else max(1, int(round(n * scale)))


def variant_config(problem, variant: str, scale: float = 1.0):
    """The TrainConfig of ``variant`` on ``problem`` (a Problem) at budget ``scale``."""
    cj = _cj()
    d = problem.defaults
    adam, lbfgs = scaled(d.adam_steps, scale), scaled(d.lbfgs_steps, scale)
    total = scaled(d.adam_steps + d.lbfgs_steps, scale)
    if variant == "cgmpinn_adam":
        return cj.TrainConfig(adam={"steps": total}, second={"steps": 0})
    if variant == "cgmpinn_lbfgs":
        return cj.TrainConfig(adam={"steps": 0}, second={"steps": total}, balancing={"stages": "none"},
                              lbfgs={"lr": d.lbfgs_only_lr})
    if variant == "cgmpinn_relobralo_off":
        return cj.TrainConfig(adam={"steps": adam}, second={"steps": lbfgs}, balancing={"stages": "none"})
    if variant not in tl.VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    return cj.TrainConfig(adam={"steps": adam}, second={"steps": lbfgs})


# TrainConfig fields added after runs of this version were cached, with the default that
# those runs were trained under: hashed only when they differ from it, so the cache stays valid.
LATER_FIELDS = {"relobralo_lbfgs_apply": "iteration"}


def _config_for_key(cfg) -> dict:
    # the flat form the cached runs were keyed by (before the options moved into groups)
    d = _cj().config.flat_dict(cfg)
    for name, default in LATER_FIELDS.items():
        if d.get(name) == default:
            del d[name]
    return d


def run_spec(problem_name: str, variant: str, seed: int, scale: float = 1.0, *, problem_params: dict | None = None) -> dict:
    """The dict that identifies a run (hashed into its cache key)."""
    cj = _cj()
    import jax

    problem = cj.get_problem(problem_name, **(problem_params or {}))
    cfg = variant_config(problem, variant, scale)
    return {
        "problem": problem.name,
        "problem_params": {f.name: getattr(problem, f.name) for f in dataclasses.fields(problem)},
        "method": tl.VARIANTS[variant][1],
        "variant": variant,
        "config": _config_for_key(cfg),
        "seed": int(seed),
        "budget_scale": float(scale),
        "version": cj.__version__,
        "x64": bool(jax.config.jax_enable_x64),
    }


def run_path(spec: dict, runs_dir: Path = RUNS) -> Path:
    return Path(runs_dir) / tl.run_filename(spec)


def run_key(spec: dict) -> str:
    """The run's key in the record and the cache: its file name without ``.json``."""
    return tl.run_filename(spec)[: -len(".json")]


def study(runs_dir: Path = RUNS, record: Path | None = None) -> runcache.Study:
    """The ``paper_runs`` study: compact record ``record`` (default
    ``benchmarks/results/paper_runs.json``), full files in ``runs_dir``."""
    return runcache.Study(STUDY, record=record if record is not None else RESULTS / RECORD_NAME, folder=runs_dir)


def all_runs(runs_dir: Path = RUNS, record: Path | None = None) -> list[dict]:
    """Every run: the compact record's, with the full file from ``runs_dir`` in place of the
    compact entry where the cache has one (same run key = file name)."""
    by_key = {k: r for k, r in study(runs_dir, record).load().items() if r.get("format") == tl.RUN_FORMAT}
    for r in tl.load_runs(runs_dir):
        by_key[Path(r["_path"]).stem] = r
    return [by_key[k] for k in sorted(by_key)]


def command_line() -> str:
    return "python -m benchmarks.paper_tables " + " ".join(shlex.quote(a) for a in sys.argv[1:])


# ------------------------------------------------------------------------------------------
# training


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="seconds")


def _status_name(code) -> str:
    return _cj().StageStatus(int(code)).name


def _evals_per_lbfgs(history, adam_steps: int) -> float:
    k = np.asarray(history.k)
    m = (k > adam_steps) & np.isfinite(np.asarray(history.loss, dtype=float))
    e = np.asarray(history.evals)[m]
    return float(np.mean(e)) if e.size else float("nan")


def _curve(history) -> dict:
    raw = np.asarray(history.raw, dtype=float)
    raw_total = raw.sum(axis=1) if raw.ndim == 2 else raw
    c = tl.downsample_curve(history.k, raw_total, history.loss, every=CURVE_EVERY)
    return {"every": c["every"], "k": c["k"], "raw_total": c["s0"], "objective": c["s1"]}


def _record(spec, *, resolved, metrics, e_loss, statuses, compile_s, run_s, timing, history, prediction,
            machine, sweep_info=None) -> dict:
    return tl.enc({
        "format": tl.RUN_FORMAT,
        "key": tl.cache_key(spec),
        "spec": spec,
        "label": tl.VARIANTS[spec["variant"]][0],
        "seed": spec["seed"],
        "resolved": resolved,
        "metrics": metrics,
        "e_loss": e_loss,
        "statuses": statuses,
        "compile_seconds": compile_s,
        "run_seconds": run_s,
        "wall_seconds": compile_s + run_s,
        "timing": timing,
        "timing_note": ("single cj.train call" if timing == "single" else
                        "seeds trained together in one vmapped cj.sweep call: its compile and run seconds divided "
                        "by the number of seeds (totals in 'sweep')"),
        "sweep": sweep_info,
        "evals_per_lbfgs_iteration": _evals_per_lbfgs(history, resolved["adam_steps"]),
        "loss_curve": _curve(history),
        "prediction": prediction,
        "machine": machine,
        "command": command_line(),
        "finished_at": _now(),
    })


class _Throttle:
    """Forward the engine's progress lines at most every ``seconds`` (stage stops and
    "done" lines always)."""

    def __init__(self, seconds: float, prefix: str):
        self.seconds, self.prefix, self.last = seconds, prefix, 0.0

    def __call__(self, line: str) -> None:
        now = time.time()
        if self.seconds <= 0 or "stopped" in line or " done" in line or now - self.last >= self.seconds:
            self.last = now
            print(f"{self.prefix}{line}", flush=True)


def train_group(problem_name: str, variant: str, seeds: list[int], scale: float, *, vmap: bool,
                figure_seed: int | None, machine: dict, progress_seconds: float = 60.0, runs_dir: Path = RUNS,
                record: Path | None = None) -> list[dict]:
    """Train ``seeds`` of one (problem, variant); write each run's full JSON to ``runs_dir`` and
    its compact form to the record; return the full records."""
    cj = _cj()
    problem = cj.get_problem(problem_name)
    method = cj.get_method(tl.VARIANTS[variant][1])
    cfg = variant_config(problem, variant, scale)
    from cgmpinn_jax.training._schedule import resolve

    setup = resolve(problem, method, cfg)  # the budgets, k_upd and ReLoBRaLo stages the run uses
    resolved = {"adam_steps": setup.adam_steps, "lbfgs_steps": setup.lbfgs_steps, "k_upd": setup.k_upd,
                "relobralo": setup.relobralo_stages}
    emit = _Throttle(progress_seconds, "    ")
    grid = problem.test_grid()
    records = []

    st = study(runs_dir, record)

    def save(seed, rec):
        st.save(run_key(rec["spec"]), rec)
        records.append(rec)

    def train_one(seed):
        spec = run_spec(problem_name, variant, seed, scale)
        res = cj.train(problem, method, cfg, key=seed, quiet=False, print_fn=emit)
        pred = None
        if method.name == "cgmpinn" and seed == figure_seed:
            vals = np.asarray(res.predict(grid.points), dtype=np.float32).reshape(-1)
            pred = {"shape": list(grid.shape), "values": [float(f"{v:.7g}") for v in vals.tolist()]}
        rec = _record(spec, resolved=resolved, metrics=res.metrics.as_dict(), e_loss=res.e_loss,
                      statuses={"adam": res.statuses["adam"].name, "lbfgs": res.statuses["lbfgs"].name},
                      compile_s=res.compile_seconds, run_s=res.run_seconds, timing="single",
                      history=res.history, prediction=pred, machine=machine)
        save(seed, rec)

    # the figure seed of a CGMPINN variant is trained alone (for its predictions); a lone seed too
    single = list(seeds)
    batch = []
    if vmap and len(seeds) > 1:
        single = [s for s in seeds if s == figure_seed and method.name == "cgmpinn"]
        batch = [s for s in seeds if s not in single]
        if len(batch) == 1:
            single, batch = list(seeds), []
    for seed in single:
        train_one(seed)
    if batch:
        try:
            sw = cj.sweep(problem, method, cfg, seeds=batch, quiet=False, keep_histories=True, print_fn=emit)
        except Exception as e:  # noqa: BLE001 - only out-of-memory falls back, anything else is re-raised
            if not (isinstance(e, MemoryError) or "RESOURCE_EXHAUSTED" in str(e) or "out of memory" in str(e).lower()):
                raise
            print(f"    vmapped call ran out of memory ({type(e).__name__}); training seeds {batch} one by one", flush=True)
            for seed in batch:
                train_one(seed)
            return sorted(records, key=lambda r: r["seed"])
        n = len(batch)
        info = {"seeds": batch, "compile_seconds": sw.compile_seconds, "run_seconds": sw.run_seconds,
                "n_devices": sw.n_devices}
        for i, seed in enumerate(batch):
            spec = run_spec(problem_name, variant, seed, scale)
            metrics = {f: float(np.asarray(sw.metrics[f]).reshape(-1)[i]) for f in ("e2", "rel_e2", "e_inf", "l2")}
            rec = _record(spec, resolved=resolved, metrics=metrics,
                          e_loss=float(np.asarray(sw.metrics["e_loss"]).reshape(-1)[i]),
                          statuses={"adam": _status_name(np.asarray(sw.statuses["adam"]).reshape(-1)[i]),
                                    "lbfgs": _status_name(np.asarray(sw.statuses["lbfgs"]).reshape(-1)[i])},
                          compile_s=sw.compile_seconds / n, run_s=sw.run_seconds / n, timing="vmapped-share",
                          history=sw.histories[i], prediction=None, machine=machine, sweep_info=info)
            save(seed, rec)
    return sorted(records, key=lambda r: r["seed"])


# ------------------------------------------------------------------------------------------
# planning


def planned_variants(tables: list[str], methods: list[str] | None) -> list[str]:
    want = set()
    for t in tables:
        want.update(v for _, v, _ in tl.TABLES[t])
    if methods:
        want = {v for v in want if v in methods or tl.VARIANTS[v][1] in methods}
    return [v for v in RUN_ORDER if v in want]


def run_identity(spec: dict) -> tuple:
    """What a table cell's run is, whatever the package version or TrainConfig fields it was
    trained under: (problem, variant, seed, budget scale, dtype)."""
    dtype = "float64" if spec.get("x64") else (spec.get("config") or {}).get("precision", "float32")
    return (spec["problem"], spec["variant"], int(spec["seed"]), float(spec.get("budget_scale", 1.0)), dtype)


def plan(problems, variants, seeds, scale, runs_dir: Path = RUNS, record: Path | None = None, *,
         exact_keys: bool = False):
    """[(problem, variant, [missing seeds], [cached seeds])] in execution order. A run counts as
    cached when the compact record or ``runs_dir`` holds a run of the same problem, variant,
    seed, budget scale and dtype (:func:`run_identity`), so a package version or a TrainConfig
    refactor (new fields, renamed ones: a new cache key) retrains nothing; with ``exact_keys``
    only a run under the current cache key counts (``--retrain-stale``)."""
    out = []
    done = set(study(runs_dir, record).load())
    ids = set() if exact_keys else {run_identity(r["spec"]) for r in all_runs(runs_dir, record)}
    for v in variants:
        for p in problems:
            missing, cached = [], []
            for s in seeds:
                spec = run_spec(p, v, s, scale)
                hit = run_key(spec) in done or run_path(spec, runs_dir).exists() or run_identity(spec) in ids
                (cached if hit else missing).append(s)
            out.append((p, v, missing, cached))
    return out


def cpu_minutes_per_run(runs: list[dict]) -> dict:
    """Median wall minutes of one cached paper-budget CPU run, for planning a sitting.

    Returns ``{(problem, variant): (minutes, n_runs)}`` and ``{(problem, None): ...}`` (the
    median over every variant of that problem, the fallback for a variant never run there).
    Only unscaled runs whose ``machine.backend`` is ``cpu`` and whose timing is "single"
    count; they were measured on whatever CPU ran them (``machine`` in each file), often with
    another run sharing the machine, so the figures are a guide, not a benchmark.
    """
    groups: dict = {}
    for r in runs:
        spec = r.get("spec", {})
        machine = r.get("machine") or {}
        sec = r.get("wall_seconds")
        if (float(spec.get("budget_scale", 1.0)) != 1.0 or machine.get("backend") != "cpu"
                or r.get("timing") != "single" or not isinstance(sec, (int, float))):
            continue
        for key in ((spec["problem"], spec["variant"]), (spec["problem"], None)):
            groups.setdefault(key, []).append(sec / 60.0)
    return {k: (float(np.median(v)), len(v)) for k, v in groups.items()}


def expected_keys(problems, seeds, scale) -> set[str]:
    keys = set()
    for p in problems:
        for v in tl.VARIANTS:
            for s in seeds:
                keys.add(tl.cache_key(run_spec(p, v, s, scale)))
    return keys


# ------------------------------------------------------------------------------------------
# tables and figures


def load_paper() -> dict:
    return json.loads((ROOT / "cgmpinn_jax" / "data" / "paper_tables.json").read_text())


def reproduce_command(selected: dict) -> str:
    seeds = sorted({int(r["spec"]["seed"]) for rs in selected.values() for r in rs})
    scales = sorted({float(r["spec"]["budget_scale"]) for rs in selected.values() for r in rs})
    cmd = "python -m benchmarks.paper_tables"
    if seeds and tuple(seeds) != DEFAULT_SEEDS:
        cmd += " --seeds " + ",".join(map(str, seeds))
    if len(scales) == 1 and scales != [1.0]:
        cmd += f" --budget-scale {scales[0]:g}"
    elif len(scales) > 1:
        cmd += "  # (runs at budget scales " + ", ".join(f"{s:g}" for s in scales) + ": one call per scale)"
    return cmd


def build_outputs(*, expected: set[str] = frozenset(), figures: bool = True, runs_dir: Path = RUNS,
                  results: Path = RESULTS, record: Path | None = None, figures_dir: Path = FIGURES,
                  tables_json: Path = TABLES_JSON, quiet: bool = False) -> dict:
    """Tables (``results/{methods,optimizers,ablation}.md``, ``tables_json``) and figures
    (``figures_dir``) from the compact record (default ``results/paper_runs.json``) and the full
    files of ``runs_dir``; full files missing from the record are added to it first."""
    cj = _cj()
    record = Path(record) if record is not None else Path(results) / RECORD_NAME
    added = study(runs_dir, record).sync(accept=lambda r: r.get("format") == tl.RUN_FORMAT)
    if added and not quiet:
        print(f"{len(added)} cached run(s) added to {record}", flush=True)
    runs = all_runs(runs_dir, record)
    selected = tl.select_runs(runs, expected, cj.__version__)
    used = [r for rs in selected.values() for r in rs]
    paper = load_paper()
    header = {
        "generated": _now(),
        "build_command": command_line(),
        "reproduce_command": reproduce_command(selected),
        "machines": tl.machines_of(used),
        "build_machine": runcache.machine_info(),
        "versions": sorted({str(r["spec"].get("version")) for r in used}),
        "n_runs_cached": len(runs),
        "n_runs_used": len(used),
    }
    tables = {name: tl.build_table(name, selected, paper) for name in tl.TABLES}
    results.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        (results / f"{name}.md").write_text(tl.render_markdown(name, table, header))
    doc = {"header": header, "tables": tables, "authors_rerun": tl.AUTHORS_RERUN, "authors_rerun_note": tl.AUTHORS_RERUN_NOTE,
           "notes": "rel_e2 etc.: stats over seeds (median with non-finite runs ranked worst); wall_seconds = compile + run "
                    "seconds (vmapped runs: share of the sweep); paper numbers: one PyTorch CPU run each."}
    tables_json = Path(tables_json)
    tables_json.parent.mkdir(parents=True, exist_ok=True)
    tables_json.write_text(json.dumps(tl.enc(doc), indent=1, allow_nan=False))
    fig_paths = []
    if figures and used:
        try:
            fig_paths = make_figures(selected, Path(figures_dir))
        except ImportError as e:  # matplotlib missing
            print(f"(no figures: {e})", file=sys.stderr)
    if not quiet:
        print(f"tables: {len(used)} runs used of {len(runs)} recorded -> "
              + ", ".join(str(results / f'{n}.md') for n in tables)
              + f", {tables_json}; {len(fig_paths)} figures in {figures_dir}", flush=True)
    return {"tables": tables, "header": header, "figures": fig_paths}


def make_figures(selected: dict, folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cj = _cj()
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    problems = [p for p in tl.PROBLEM_ORDER if any(k[0] == p for k in selected)]
    for p in problems:
        title = tl.PROBLEM_TITLES.get(p, p)
        paths.append(_rel_e2_figure(plt, selected, p, title, folder))
        # loss curves (full run files only): method table variants | optimizer variants
        if not any((r.get("loss_curve") or {}).get("k") for (q, _v), rs in selected.items() if q == p for r in rs):
            continue
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        for ax, tname in zip(axes, ("methods", "optimizers")):
            boundary = None
            for label, variant, _ in tl.TABLES[tname]:
                rs = selected.get((p, variant), [])
                if not rs:
                    continue
                k, med = tl.median_curve(rs)
                if k.size == 0:
                    continue
                pos = np.where(med > 0, med, np.nan)
                ax.semilogy(k, pos, lw=1.0, label=f"{label} ({len(rs)})",
                            ls="-" if variant.startswith("cgmpinn") else "--")
                res = rs[0].get("resolved") or {}
                if tname == "methods" and res.get("adam_steps") and res.get("lbfgs_steps"):
                    boundary = res["adam_steps"]
            if boundary:
                ax.axvline(boundary + 0.5, color="k", lw=0.8, ls=":", label="Adam → L-BFGS")
            ax.set_xlabel("step k")
            ax.set_ylabel("unweighted PDE + IC + BC (median over seeds)")
            ax.set_title(f"{title}: {'methods' if tname == 'methods' else 'CGMPINN optimizers'}")
            if ax.lines:
                ax.legend(fontsize=7)
        fig.tight_layout()
        path = folder / f"{p}_loss.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)

        # CGMPINN prediction / exact / error
        runs = [r for r in selected.get((p, "cgmpinn"), []) if r.get("prediction")]
        if not runs:
            continue
        run = runs[0]
        try:
            problem = cj.get_problem(p, **{k: (tuple(v) if isinstance(v, list) else v)
                                           for k, v in run["spec"].get("problem_params", {}).items()})
        except (TypeError, ValueError):
            problem = cj.get_problem(p)
        g = problem.test_grid()
        pred = np.asarray([tl.dec(v) for v in run["prediction"]["values"]])
        if pred.size != g.points.shape[0]:
            continue
        exact = np.asarray(problem.exact_on(g.points), dtype=np.float64)
        err = np.abs(pred - exact)
        scale_txt = "" if run["spec"]["budget_scale"] == 1 else f", scale {run['spec']['budget_scale']:g}"
        sub = f"CGMPINN seed {run['seed']}{scale_txt}, rel e2 = {tl.fmt_sci(run['metrics']['rel_e2'])}"
        if problem.dim == 1:
            x = g.points[:, 0]
            fig, axes = plt.subplots(1, 2, figsize=(11, 4))
            axes[0].plot(x, exact, "k-", lw=1.5, label="exact")
            axes[0].plot(x, pred, "r--", lw=1.2, label="CGMPINN")
            axes[0].set_xlabel(problem.coords[0])
            axes[0].set_ylabel("u")
            axes[0].legend()
            axes[0].set_title(f"{title}: prediction and exact solution")
            axes[1].semilogy(x, np.maximum(err, 1e-16))
            axes[1].set_xlabel(problem.coords[0])
            axes[1].set_ylabel("|û − u|")
            axes[1].set_title("absolute error")
        else:
            fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
            lims = (float(np.min(exact)), float(np.max(exact)))
            for ax, values, t, cmap, (lo, hi) in zip(
                    axes, (pred, exact, err), ("CGMPINN prediction", "exact solution", "absolute error"),
                    ("viridis", "viridis", "magma"), (lims, lims, (None, None))):
                im = ax.pcolormesh(g.axes[0], g.axes[1], values.reshape(g.shape).T, shading="auto", cmap=cmap,
                                   vmin=lo, vmax=hi)
                ax.set_xlabel(problem.coords[0])
                ax.set_ylabel(problem.coords[1])
                ax.set_title(t)
                fig.colorbar(im, ax=ax)
        fig.suptitle(f"{title}: {sub}", fontsize=10)
        fig.tight_layout()
        path = folder / f"{p}_cgmpinn.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def _rel_e2_figure(plt, selected: dict, p: str, title: str, folder: Path) -> Path:
    """Relative e2 of every run of problem ``p`` (one dot per seed, the median as a bar), the
    methods table's variants then the optimizer variants: needs only the compact record."""
    variants = [v for _, v, _ in tl.TABLES["methods"]]
    variants += [v for _, v, _ in tl.TABLES["optimizers"] if v not in variants]
    rows = [(tl.VARIANTS[v][0], v) for v in variants]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    labels = []
    for i, (label, v) in enumerate(rows):
        labels.append(label)
        vals = [tl.dec(r["metrics"]["rel_e2"]) for r in selected.get((p, v), [])]
        if not vals:
            continue
        shown = [x if np.isfinite(x) else np.nan for x in vals]
        ax.scatter([i] * len(shown), shown, s=14, color="C0" if v.startswith("cgmpinn") else "C1", zorder=3)
        med = tl.stats(vals)["median"]
        if np.isfinite(med):
            ax.hlines(med, i - 0.3, i + 0.3, color="k", lw=1.2, zorder=4)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("relative e2 (dots: seeds, bar: median)")
    ax.set_title(f"{title}: relative e2 per run (non-finite runs not shown)")
    ax.grid(axis="y", which="major", lw=0.3)
    fig.tight_layout()
    path = folder / f"{p}_rel_e2.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------
# CLI


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problems", default=",".join(tl.PROBLEM_ORDER), help="comma list (default: all six)")
    p.add_argument("--methods", default=None,
                   help="comma list of method names (cgmpinn covers its four variants) or variant ids "
                        f"({', '.join(tl.VARIANTS)}); default: all")
    p.add_argument("--variants", default=None,
                   help="comma list of exact variant ids (e.g. cgmpinn without cgmpinn_relobralo_off); overrides --methods")
    p.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)), help="comma list of integer seeds (default 0-4)")
    p.add_argument("--tables", default="methods,optimizers,ablation", help="which tables' runs to train")
    p.add_argument("--budget-scale", type=float, default=1.0, help="scale Adam and L-BFGS steps (tables mark scaled runs)")
    p.add_argument("--build-only", action="store_true", help="no training: rebuild tables and figures from the cache")
    p.add_argument("--list", action="store_true", help="print the planned runs, whether they are cached, and the estimated CPU time of the missing ones (median wall time of cached CPU runs), then exit")
    p.add_argument("--no-vmap", action="store_true", help="train seeds one by one with cj.train instead of cj.sweep")
    p.add_argument("--max-vmap", type=int, default=0, help="at most this many seeds per vmapped call (0 = all)")
    p.add_argument("--figure-seed", type=int, default=None,
                   help="seed whose CGMPINN runs are trained alone and keep predictions (default: first of --seeds)")
    p.add_argument("--timeout-hours", type=float, default=None, help="start no new group after this many hours")
    p.add_argument("--no-figures", action="store_true")
    p.add_argument("--x64", action="store_true", help="train in float64 (a different cache key)")
    p.add_argument("--retrain-stale", action="store_true",
                   help="a recorded run counts as done only under the current cache key (package version and "
                        "TrainConfig); default: any recorded run of the same problem, variant, seed, scale and dtype")
    p.add_argument("--progress-seconds", type=float, default=60.0,
                   help="print the engine's progress lines at most this often (0 = every chunk)")
    p.add_argument("--runs-dir", default=str(RUNS), help=argparse.SUPPRESS)
    p.add_argument("--results-dir", default=str(RESULTS), help=argparse.SUPPRESS)  # .md tables and the record
    p.add_argument("--figures-dir", default=str(FIGURES), help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    cj = _cj()
    problems = _csv(args.problems)
    for p in problems:
        if p not in cj.PROBLEMS:
            raise SystemExit(f"unknown problem {p!r}; valid: {', '.join(cj.PROBLEMS)}")
    tables = _csv(args.tables)
    for t in tables:
        if t not in tl.TABLES:
            raise SystemExit(f"unknown table {t!r}; valid: {', '.join(tl.TABLES)}")
    methods = _csv(args.methods) if args.methods else None
    for m in methods or []:
        if m not in cj.METHODS and m not in tl.VARIANTS:
            raise SystemExit(f"unknown method/variant {m!r}; valid: {', '.join(list(cj.METHODS) + list(tl.VARIANTS))}")
    seeds = [int(s) for s in _csv(args.seeds)]
    if not seeds:
        raise SystemExit("--seeds is empty")
    if not args.budget_scale > 0:
        raise SystemExit("--budget-scale must be > 0")
    scale = float(args.budget_scale)
    runs_dir, results = Path(args.runs_dir), Path(args.results_dir)
    record = results / RECORD_NAME
    out_kw = dict(runs_dir=runs_dir, results=results, record=record, figures_dir=Path(args.figures_dir))
    figure_seed = seeds[0] if args.figure_seed is None else args.figure_seed
    variants = planned_variants(tables, methods)
    if args.variants:
        want = _csv(args.variants)
        for v in want:
            if v not in tl.VARIANTS:
                raise SystemExit(f"unknown variant {v!r}; valid: {', '.join(tl.VARIANTS)}")
        variants = [v for v in RUN_ORDER if v in want]
    expected = expected_keys(problems, seeds, scale)

    if args.build_only:
        build_outputs(expected=expected, figures=not args.no_figures, **out_kw)
        return 0

    todo = plan(problems, variants, seeds, scale, runs_dir, record, exact_keys=args.retrain_stale)
    n_missing = sum(len(m) for _, _, m, _ in todo)
    n_cached = sum(len(c) for _, _, _, c in todo)
    print(f"paper_tables: {len(problems)} problem(s) x {len(variants)} variant(s) x {len(seeds)} seed(s), "
          f"budget scale {scale:g}: {n_cached} run(s) cached, {n_missing} to train "
          f"({'cj.train per seed' if args.no_vmap else 'seeds vmapped with cj.sweep'}); record {record}, cache {runs_dir}",
          flush=True)
    if args.list:
        est = cpu_minutes_per_run(all_runs(runs_dir, record)) if scale == 1.0 else {}
        total, unknown = 0.0, 0
        for p, v, missing, cached in todo:
            note = ""
            if missing and est:
                m, n = est.get((p, v)) or est.get((p, None)) or (None, 0)
                if m is None:
                    unknown += len(missing)
                    note = "  (no CPU estimate)"
                else:
                    total += m * len(missing)
                    src = "this cell" if (p, v) in est else "any variant on this problem"
                    note = f"  ~{m:.0f} CPU min/run (median of {n} cached, {src})"
            print(f"  {p:<20} {v:<24} cached {cached or '-'}  missing {missing or '-'}{note}")
        if est:
            print(f"missing runs: ~{total / 60:.1f} CPU core-hours at the cached runs' median wall times"
                  + (f"; {unknown} run(s) without an estimate (no CPU run of that problem cached)" if unknown else ""))
        return 0

    machine = runcache.machine_info()
    t0 = time.time()
    groups = [(p, v, m) for p, v, m, _ in todo if m]
    done_runs = 0
    try:
        for gi, (p, v, missing) in enumerate(groups, 1):
            if args.timeout_hours is not None and time.time() - t0 > args.timeout_hours * 3600:
                print(f"timeout ({args.timeout_hours} h) reached: {len(groups) - gi + 1} group(s) left; rerun to resume", flush=True)
                break
            chunks = [missing]
            if args.max_vmap and not args.no_vmap:
                chunks = [missing[i:i + args.max_vmap] for i in range(0, len(missing), args.max_vmap)]
            for chunk in chunks:
                cfg = variant_config(cj.get_problem(p), v, scale)
                print(f"[{gi}/{len(groups)}] {p} / {tl.VARIANTS[v][0]}: seeds {chunk} (Adam {cfg.adam.steps} + "
                      f"L-BFGS {cfg.second.steps}) ... elapsed {(time.time() - t0) / 60:.1f} min", flush=True)
                tg = time.time()
                recs = train_group(p, v, chunk, scale, vmap=not args.no_vmap, figure_seed=figure_seed, machine=machine,
                                   progress_seconds=args.progress_seconds, runs_dir=runs_dir, record=record)
                done_runs += len(recs)
                rel = ", ".join(f"s{r['seed']}={tl.fmt_sci(r['metrics']['rel_e2'])}" for r in recs)
                print(f"    done in {time.time() - tg:.1f} s: rel_e2 {rel}", flush=True)
            build_outputs(expected=expected, figures=False, quiet=True, **out_kw)
    finally:
        print(f"trained {done_runs} run(s) in {(time.time() - t0) / 60:.1f} min; rebuilding tables", flush=True)
        build_outputs(expected=expected, figures=not args.no_figures, **out_kw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
