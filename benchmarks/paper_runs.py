"""The runs of the paper tables (study ``paper_runs``): what identifies a run (its spec and cache
key), its training and saving, and the plan of what is missing; ``paper_tables.py`` is the command
line.

Record and cache (``benchmarks/runcache.py``): every finished run is one line of the committed
compact record ``benchmarks/results/paper_runs.json`` and one full JSON file in the git-ignored
cache ``benchmarks/cache/paper_runs/``, both under the run key
``<problem>__<variant>__seed<s>[__scale<x>]__<key>``, where ``key`` is 16 hex digits of sha256 over
{problem, problem_params, method, variant, config (``TrainConfig.to_dict()`` as JSON reads it back),
seed, budget_scale, version (cgmpinn_jax.__version__), x64}. A rerun skips every (problem, variant,
seed, budget scale, dtype) that the record or the cache holds, under any key (a new package version
or TrainConfig field changes the key, not the run; ``--retrain-stale`` retrains runs recorded under
another key), so a long reproduction resumes where it stopped, on any checkout; the tables prefer,
per cell and seed, the run under the current key. Fields of a full run file (``format`` =
``cgmpinn-jax/paper-run/1``): ``key``, ``spec`` (the hashed dict), ``label``, ``seed``, ``resolved``
(adam_steps, lbfgs_steps: the L-BFGS stage's budget, k_upd, relobralo), ``metrics`` (e2, rel_e2,
e_inf, l2), ``e_loss``, ``statuses`` ({adam, lbfgs}: StageStatus names), ``compile_seconds``,
``run_seconds``, ``wall_seconds`` (= compile + run), ``timing`` ("single", or "vmapped-share": the
sweep's seconds divided by its number of seeds, totals in ``sweep``), ``evals_per_lbfgs_iteration``,
``loss_curve`` ({every, k, raw_total = unweighted PDE+IC+BC, objective}: every 10th step and the
last; None where a stopped run took no step), ``prediction`` (CGMPINN variants at the figure seed
only: {shape, values} on the test grid, float32 rounded to 7 digits; else null), ``machine``,
``command``, ``finished_at``. Non-finite floats are stored as the strings "nan"/"inf". The compact
record holds the same fields without ``loss_curve`` and ``prediction`` (plus ``run_key``); a full
file in the cache whose run is not in the record yet (e.g. copied back from a GPU session's
``benchmarks/cache/paper_runs/``) is added to it by the next build.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from benchmarks import runcache
from benchmarks import tables_lib as tl

RESULTS = runcache.RESULTS  # benchmarks/results: committed .md tables and the compact record
STUDY = "paper_runs"
RECORD_NAME = f"{STUDY}.json"  # benchmarks/results/paper_runs.json
RUNS = runcache.CACHE / STUDY  # benchmarks/cache/paper_runs: full run files (git-ignored)
CURVE_EVERY = 10

# variant order of execution: the verdict pair first, so a partial reproduction is useful early
RUN_ORDER = (
    "cgmpinn",
    "pinn",
    "cgmpinn_relobralo_off",
    "lbpinn",
    "gpinn",
    "lnn_pinn",
    "star_pinn",
    "gmmpinn",
    "clpinn",
    "cgmpinn_adam",
    "cgmpinn_lbfgs",
)


def _cj():
    import cgmpinn_jax as cj

    return cj


def scaled(n: int, scale: float) -> int:
    """``n`` scaled by ``scale``, at least 1 when ``n`` > 0."""
    return 0 if n == 0 else max(1, int(round(n * scale)))


# the L-BFGS-only optimizer row (``cgmpinn_lbfgs``): L-BFGS's first trial step (``LBFGS(lr=...)``)
# per problem, 1.0 where not listed (the paper's: its damped wave diverges at 1.0)
LBFGS_ONLY_LR = {"damped_wave": 0.1}


def variant_config(problem, variant: str, scale: float = 1.0):
    """The TrainConfig of ``variant`` on ``problem`` (a Problem) at budget ``scale``."""
    cj = _cj()
    Adam, LBFGS = cj.stages.Adam, cj.stages.LBFGS
    d = problem.defaults
    adam, lbfgs = scaled(d.adam_steps, scale), scaled(d.second_steps, scale)
    total = scaled(d.adam_steps + d.second_steps, scale)
    if variant == "cgmpinn_adam":
        return cj.TrainConfig(stages=(Adam(steps=total), LBFGS(steps=0)))
    if variant == "cgmpinn_lbfgs":
        return cj.TrainConfig(
            stages=(Adam(steps=0), LBFGS(steps=total, lr=LBFGS_ONLY_LR.get(problem.name, 1.0))),
            balancing={"stages": "none"},
        )
    if variant == "cgmpinn_relobralo_off":
        return cj.TrainConfig(
            stages=(Adam(steps=adam), LBFGS(steps=lbfgs)), balancing={"stages": "none"}
        )
    if variant not in tl.VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    return cj.TrainConfig(stages=(Adam(steps=adam), LBFGS(steps=lbfgs)))


def _config_for_key(cfg) -> dict:
    """The config as a run's spec holds it (and its key hashes): ``to_dict()`` after a JSON round
    trip."""
    return json.loads(json.dumps(cfg.to_dict()))


def run_spec(
    problem_name: str,
    variant: str,
    seed: int,
    scale: float = 1.0,
    *,
    problem_params: dict | None = None,
) -> dict:
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
    return runcache.Study(
        STUDY, record=record if record is not None else RESULTS / RECORD_NAME, folder=runs_dir
    )


def all_runs(runs_dir: Path = RUNS, record: Path | None = None) -> list[dict]:
    """Every run: the compact record's, with the full file from ``runs_dir`` in place of the
    compact entry where the cache has one (same run key = file name)."""
    by_key = {
        k: r for k, r in study(runs_dir, record).load().items() if r.get("format") == tl.RUN_FORMAT
    }
    for r in tl.load_runs(runs_dir):
        by_key[Path(r["_path"]).stem] = r
    return [by_key[k] for k in sorted(by_key)]


def command_line() -> str:
    return "python -m benchmarks.paper_tables " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="seconds")


def _status_name(code) -> str:
    return _cj().StageStatus(int(code)).name


def _evals_per_lbfgs(history, adam_steps: int) -> float:
    k = np.asarray(history.k)
    m = (k > adam_steps) & np.isfinite(np.asarray(history.loss, dtype=float))
    e = np.asarray(history.evals)[m]
    return float(np.mean(e)) if e.size else float("nan")


def downsample_curve(k: Iterable, *series: Iterable, every: int = 10, digits: int = 6) -> dict:
    """Every ``every``-th step (k = 1, 1+every, ...) and the last one, rounded to ``digits``
    significant digits; non-finite -> None."""
    k = np.asarray(list(k), dtype=np.int64)
    if k.size == 0:
        return {"every": every, "k": [], **{f"s{i}": [] for i in range(len(series))}}
    keep = (k - k[0]) % every == 0
    keep[-1] = True
    out = {"every": every, "k": k[keep].tolist()}
    for i, s in enumerate(series):
        arr = np.asarray(s, dtype=np.float64)[keep]
        out[f"s{i}"] = [float(f"{v:.{digits}g}") if math.isfinite(v) else None for v in arr]
    return out


def _curve(history) -> dict:
    raw = np.asarray(history.raw, dtype=float)
    raw_total = raw.sum(axis=1) if raw.ndim == 2 else raw
    c = downsample_curve(history.k, raw_total, history.loss, every=CURVE_EVERY)
    return {"every": c["every"], "k": c["k"], "raw_total": c["s0"], "objective": c["s1"]}


def _record(
    spec,
    *,
    resolved,
    metrics,
    e_loss,
    statuses,
    compile_s,
    run_s,
    timing,
    history,
    prediction,
    machine,
    sweep_info=None,
) -> dict:
    return tl.enc(
        {
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
            "timing_note": (
                "single cj.train call"
                if timing == "single"
                else "seeds trained together in one vmapped cj.sweep call: its compile and run "
                "seconds divided by the number of seeds (totals in 'sweep')"
            ),
            "sweep": sweep_info,
            "evals_per_lbfgs_iteration": _evals_per_lbfgs(history, resolved["adam_steps"]),
            "loss_curve": _curve(history),
            "prediction": prediction,
            "machine": machine,
            "command": command_line(),
            "finished_at": _now(),
        }
    )


class _Throttle:
    """Forward the engine's progress lines at most every ``seconds`` (stage stops and
    "done" lines always)."""

    def __init__(self, seconds: float, prefix: str):
        self.seconds, self.prefix, self.last = seconds, prefix, 0.0

    def __call__(self, line: str) -> None:
        now = time.time()
        if (
            self.seconds <= 0
            or "stopped" in line
            or " done" in line
            or now - self.last >= self.seconds
        ):
            self.last = now
            print(f"{self.prefix}{line}", flush=True)


def train_group(
    problem_name: str,
    variant: str,
    seeds: list[int],
    scale: float,
    *,
    vmap: bool,
    figure_seed: int | None,
    machine: dict,
    progress_seconds: float = 60.0,
    runs_dir: Path = RUNS,
    record: Path | None = None,
) -> list[dict]:
    """Train ``seeds`` of one (problem, variant); write each run's full JSON to ``runs_dir`` and
    its compact form to the record; return the full records."""
    cj = _cj()
    problem = cj.get_problem(problem_name)
    method = cj.get_method(tl.VARIANTS[variant][1])
    cfg = variant_config(problem, variant, scale)
    from cgmpinn_jax.training._schedule import resolve

    setup = resolve(problem, method, cfg)  # the budgets, k_upd and ReLoBRaLo stages the run uses
    resolved = {
        "adam_steps": setup.adam_steps,
        "lbfgs_steps": setup.second_steps,
        "k_upd": setup.k_upd,
        "relobralo": setup.relobralo_stages,
    }
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
        rec = _record(
            spec,
            resolved=resolved,
            metrics=res.metrics.as_dict(),
            e_loss=res.e_loss,
            statuses={"adam": res.statuses["adam"].name, "lbfgs": res.statuses["lbfgs"].name},
            compile_s=res.compile_seconds,
            run_s=res.run_seconds,
            timing="single",
            history=res.history,
            prediction=pred,
            machine=machine,
        )
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
            sw = cj.sweep(
                problem, method, cfg, seeds=batch, quiet=False, keep_histories=True, print_fn=emit
            )
        except Exception as e:  # noqa: BLE001 - only out-of-memory falls back, anything else is re-raised
            if not (
                isinstance(e, MemoryError)
                or "RESOURCE_EXHAUSTED" in str(e)
                or "out of memory" in str(e).lower()
            ):
                raise
            print(
                f"    vmapped call ran out of memory ({type(e).__name__}); "
                f"training seeds {batch} one by one",
                flush=True,
            )
            for seed in batch:
                train_one(seed)
            return sorted(records, key=lambda r: r["seed"])
        n = len(batch)
        info = {
            "seeds": batch,
            "compile_seconds": sw.compile_seconds,
            "run_seconds": sw.run_seconds,
            "n_devices": sw.n_devices,
        }
        for i, seed in enumerate(batch):
            spec = run_spec(problem_name, variant, seed, scale)
            metrics = {
                f: float(np.asarray(sw.metrics[f]).reshape(-1)[i])
                for f in ("e2", "rel_e2", "e_inf", "l2")
            }
            rec = _record(
                spec,
                resolved=resolved,
                metrics=metrics,
                e_loss=float(np.asarray(sw.metrics["e_loss"]).reshape(-1)[i]),
                statuses={
                    "adam": _status_name(np.asarray(sw.statuses["adam"]).reshape(-1)[i]),
                    "lbfgs": _status_name(np.asarray(sw.statuses["lbfgs"]).reshape(-1)[i]),
                },
                compile_s=sw.compile_seconds / n,
                run_s=sw.run_seconds / n,
                timing="vmapped-share",
                history=sw.histories[i],
                prediction=None,
                machine=machine,
                sweep_info=info,
            )
            save(seed, rec)
    return sorted(records, key=lambda r: r["seed"])


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
    return (
        spec["problem"],
        spec["variant"],
        int(spec["seed"]),
        float(spec.get("budget_scale", 1.0)),
        dtype,
    )


def plan(
    problems,
    variants,
    seeds,
    scale,
    runs_dir: Path = RUNS,
    record: Path | None = None,
    *,
    exact_keys: bool = False,
):
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
                hit = (
                    run_key(spec) in done
                    or run_path(spec, runs_dir).exists()
                    or run_identity(spec) in ids
                )
                (cached if hit else missing).append(s)
            out.append((p, v, missing, cached))
    return out


def expected_keys(problems, seeds, scale) -> set[str]:
    keys = set()
    for p in problems:
        for v in tl.VARIANTS:
            for s in seeds:
                keys.add(tl.cache_key(run_spec(p, v, s, scale)))
    return keys
