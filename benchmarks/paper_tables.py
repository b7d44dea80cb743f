"""Reproduce the paper's method, optimizer and ablation tables over several seeds.

For every (problem, variant, seed) one training run at the paper's budget (Adam 5000 + L-BFGS
10000; Fisher-KPP 8000 + 12000), the seeds of one (problem, variant) vmapped in one compiled
call (``cj.sweep``; ``--no-vmap`` trains them one by one with ``cj.train``). Variants:

* methods table: the eight methods at Adam→L-BFGS with their defaults, and CGMPINN twice:
  ``cgmpinn`` (ReLoBRaLo in both stages, as released) and ``cgmpinn_relobralo_off``;
* optimizer table (CGMPINN): ``cgmpinn_adam`` (Adam for the whole budget), ``cgmpinn_lbfgs``
  (L-BFGS for the whole budget, ReLoBRaLo off, ``LBFGS(lr=...)`` from ``paper_runs.LBFGS_ONLY_LR``)
  and Adam→L-BFGS (= the ``cgmpinn`` runs, reused);
* ablation table: ``gmmpinn``, ``clpinn`` (their method defaults encode reference-code.md §11.3) and
  CGMPINN (= the ``cgmpinn`` runs, reused).

Each finished run is one line of the committed record ``benchmarks/results/paper_runs.json`` and one
full file in the git-ignored cache ``benchmarks/cache/paper_runs/`` (``benchmarks/paper_runs.py``
describes the record and trains the runs); a rerun trains only what neither holds.

Outputs (rebuilt from the record and the cache after every group and with ``--build-only``):
``benchmarks/results/{methods,optimizers,ablation}.md`` (committed;
``benchmarks/tables_render.py``), and, git-ignored, ``benchmarks/cache/paper_tables.json`` (the
tables' statistics) and the figures in ``benchmarks/figures/`` (``benchmarks/paper_figures.py``).

Usage (from the repository root)::

    python -m benchmarks.paper_tables                     # everything, seeds 0-4
    python -m benchmarks.paper_tables --problems poisson1d --methods pinn,cgmpinn --seeds 0,1,2
    python -m benchmarks.paper_tables --tables optimizers --timeout-hours 6
    python -m benchmarks.paper_tables --budget-scale 0.1  # quick, marked "(scale 0.1)"
    python -m benchmarks.paper_tables --build-only        # tables + figures from record + cache
    python -m benchmarks.paper_tables --list              # planned runs, cached or not, CPU
                                                          # minutes left
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache
from benchmarks import tables_lib as tl
from benchmarks import tables_render as tr
from benchmarks.paper_runs import (
    RECORD_NAME,
    RESULTS,
    RUN_ORDER,
    RUNS,
    _cj,
    _now,
    all_runs,
    command_line,
    expected_keys,
    plan,
    planned_variants,
    study,
    train_group,
    variant_config,
)

ROOT = Path(__file__).resolve().parents[1]
TABLES_JSON = runcache.CACHE / "paper_tables.json"  # git-ignored
FIGURES = ROOT / "benchmarks" / "figures"  # git-ignored
DEFAULT_SEEDS = (0, 1, 2, 3, 4)


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
        cmd += (
            "  # (runs at budget scales "
            + ", ".join(f"{s:g}" for s in scales)
            + ": one call per scale)"
        )
    return cmd


def build_outputs(
    *,
    expected: set[str] = frozenset(),
    figures: bool = True,
    runs_dir: Path = RUNS,
    results: Path = RESULTS,
    record: Path | None = None,
    figures_dir: Path = FIGURES,
    tables_json: Path = TABLES_JSON,
    quiet: bool = False,
) -> dict:
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
        "machines": tr.machines_of(used),
        "build_machine": runcache.machine_info(),
        "versions": sorted({str(r["spec"].get("version")) for r in used}),
        "n_runs_cached": len(runs),
        "n_runs_used": len(used),
    }
    tables = {name: tl.build_table(name, selected, paper) for name in tl.TABLES}
    results.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        (results / f"{name}.md").write_text(tr.render_markdown(name, table, header))
    doc = {
        "header": header,
        "tables": tables,
        "authors_rerun": tl.AUTHORS_RERUN,
        "authors_rerun_note": tl.AUTHORS_RERUN_NOTE,
        "notes": "rel_e2 etc.: stats over seeds (median with non-finite runs ranked worst); "
        "wall_seconds = compile + run seconds (vmapped runs: share of the sweep); paper numbers: "
        "one PyTorch CPU run each.",
    }
    tables_json = Path(tables_json)
    tables_json.parent.mkdir(parents=True, exist_ok=True)
    tables_json.write_text(json.dumps(tl.enc(doc), indent=1, allow_nan=False))
    fig_paths = []
    if figures and used:
        try:
            from benchmarks.paper_figures import make_figures

            fig_paths = make_figures(selected, Path(figures_dir))
        except ImportError as e:  # matplotlib missing
            print(f"(no figures: {e})", file=sys.stderr)
    if not quiet:
        print(
            f"tables: {len(used)} runs used of {len(runs)} recorded -> "
            + ", ".join(str(results / f"{n}.md") for n in tables)
            + f", {tables_json}; {len(fig_paths)} figures in {figures_dir}",
            flush=True,
        )
    return {"tables": tables, "header": header, "figures": fig_paths}


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
        if (
            float(spec.get("budget_scale", 1.0)) != 1.0
            or machine.get("backend") != "cpu"
            or r.get("timing") != "single"
            or not isinstance(sec, (int, float))
        ):
            continue
        for key in ((spec["problem"], spec["variant"]), (spec["problem"], None)):
            groups.setdefault(key, []).append(sec / 60.0)
    return {k: (float(np.median(v)), len(v)) for k, v in groups.items()}


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--problems", default=",".join(tl.PROBLEM_ORDER), help="comma list (default: all six)"
    )
    p.add_argument(
        "--methods",
        default=None,
        help="comma list of method names (cgmpinn covers its four variants) or variant ids "
        f"({', '.join(tl.VARIANTS)}); default: all",
    )
    p.add_argument(
        "--variants",
        default=None,
        help="comma list of exact variant ids (e.g. cgmpinn without cgmpinn_relobralo_off); "
        "overrides --methods",
    )
    p.add_argument(
        "--seeds",
        default=",".join(map(str, DEFAULT_SEEDS)),
        help="comma list of integer seeds (default 0-4)",
    )
    p.add_argument(
        "--tables", default="methods,optimizers,ablation", help="which tables' runs to train"
    )
    p.add_argument(
        "--budget-scale",
        type=float,
        default=1.0,
        help="scale Adam and L-BFGS steps (tables mark scaled runs)",
    )
    p.add_argument(
        "--build-only",
        action="store_true",
        help="no training: rebuild tables and figures from the cache",
    )
    p.add_argument(
        "--list",
        action="store_true",
        help="print the planned runs, whether they are cached, and the estimated CPU time of the "
        "missing ones (median wall time of cached CPU runs), then exit",
    )
    p.add_argument(
        "--no-vmap",
        action="store_true",
        help="train seeds one by one with cj.train instead of cj.sweep",
    )
    p.add_argument(
        "--max-vmap", type=int, default=0, help="at most this many seeds per vmapped call (0 = all)"
    )
    p.add_argument(
        "--figure-seed",
        type=int,
        default=None,
        help="seed whose CGMPINN runs are trained alone and keep predictions "
        "(default: first of --seeds)",
    )
    p.add_argument(
        "--timeout-hours", type=float, default=None, help="start no new group after this many hours"
    )
    p.add_argument("--no-figures", action="store_true")
    p.add_argument("--x64", action="store_true", help="train in float64 (a different cache key)")
    p.add_argument(
        "--retrain-stale",
        action="store_true",
        help="a recorded run counts as done only under the current cache key (package version and "
        "TrainConfig); default: any recorded run of the same problem, variant, seed, "
        "scale and dtype",
    )
    p.add_argument(
        "--progress-seconds",
        type=float,
        default=60.0,
        help="print the engine's progress lines at most this often (0 = every chunk)",
    )
    p.add_argument("--runs-dir", default=str(RUNS), help=argparse.SUPPRESS)
    p.add_argument(
        "--results-dir", default=str(RESULTS), help=argparse.SUPPRESS
    )  # .md tables and the record
    p.add_argument("--figures-dir", default=str(FIGURES), help=argparse.SUPPRESS)
    return p


def _checked_args(args, cj) -> tuple:
    """``--problems``, ``--tables``, ``--methods``, ``--seeds`` and ``--budget-scale``, checked:
    (problems, tables, methods or None, seeds, scale)."""
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
            raise SystemExit(
                f"unknown method/variant {m!r}; valid: "
                f"{', '.join(list(cj.METHODS) + list(tl.VARIANTS))}"
            )
    seeds = [int(s) for s in _csv(args.seeds)]
    if not seeds:
        raise SystemExit("--seeds is empty")
    if not args.budget_scale > 0:
        raise SystemExit("--budget-scale must be > 0")
    scale = float(args.budget_scale)
    return problems, tables, methods, seeds, scale


def _variants(args, tables: list[str], methods: list[str] | None) -> list[str]:
    """The variants to run: those of ``tables`` and ``methods``, or exactly ``--variants``."""
    variants = planned_variants(tables, methods)
    if args.variants:
        want = _csv(args.variants)
        for v in want:
            if v not in tl.VARIANTS:
                raise SystemExit(f"unknown variant {v!r}; valid: {', '.join(tl.VARIANTS)}")
        variants = [v for v in RUN_ORDER if v in want]
    return variants


def _print_list(todo: list, runs_dir: Path, record: Path, scale: float) -> None:
    """``--list``: the planned runs per (problem, variant), cached or missing, with the CPU minutes
    the missing ones would take at the cached runs' median (at budget scale 1 only)."""
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
        print(
            f"missing runs: ~{total / 60:.1f} CPU core-hours at the cached runs' median "
            "wall times"
            + (
                f"; {unknown} run(s) without an estimate (no CPU run of that problem cached)"
                if unknown
                else ""
            )
        )


def _train_missing(
    cj,
    args,
    todo: list,
    scale: float,
    figure_seed: int,
    runs_dir: Path,
    record: Path,
    expected,
    out_kw: dict,
) -> None:
    """Train the missing runs group by group (the tables rebuilt after each), within
    ``--timeout-hours``; the tables and figures are rebuilt at the end, also when interrupted."""
    machine = runcache.machine_info()
    t0 = time.time()
    groups = [(p, v, m) for p, v, m, _ in todo if m]
    done_runs = 0
    try:
        for gi, (p, v, missing) in enumerate(groups, 1):
            if args.timeout_hours is not None and time.time() - t0 > args.timeout_hours * 3600:
                print(
                    f"timeout ({args.timeout_hours} h) reached: {len(groups) - gi + 1} group(s) "
                    "left; rerun to resume",
                    flush=True,
                )
                break
            chunks = [missing]
            if args.max_vmap and not args.no_vmap:
                chunks = [
                    missing[i : i + args.max_vmap] for i in range(0, len(missing), args.max_vmap)
                ]
            for chunk in chunks:
                cfg = variant_config(cj.get_problem(p), v, scale)
                print(
                    f"[{gi}/{len(groups)}] {p} / {tl.VARIANTS[v][0]}: seeds {chunk} (Adam "
                    f"{cfg.stages[0].steps} + L-BFGS {cfg.stages[1].steps}) ... elapsed "
                    f"{(time.time() - t0) / 60:.1f} min",
                    flush=True,
                )
                tg = time.time()
                recs = train_group(
                    p,
                    v,
                    chunk,
                    scale,
                    vmap=not args.no_vmap,
                    figure_seed=figure_seed,
                    machine=machine,
                    progress_seconds=args.progress_seconds,
                    runs_dir=runs_dir,
                    record=record,
                )
                done_runs += len(recs)
                rel = ", ".join(f"s{r['seed']}={tl.fmt_sci(r['metrics']['rel_e2'])}" for r in recs)
                print(f"    done in {time.time() - tg:.1f} s: rel_e2 {rel}", flush=True)
            build_outputs(expected=expected, figures=False, quiet=True, **out_kw)
    finally:
        print(
            f"trained {done_runs} run(s) in {(time.time() - t0) / 60:.1f} min; rebuilding tables",
            flush=True,
        )
        build_outputs(expected=expected, figures=not args.no_figures, **out_kw)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    cj = _cj()
    problems, tables, methods, seeds, scale = _checked_args(args, cj)
    runs_dir, results = Path(args.runs_dir), Path(args.results_dir)
    record = results / RECORD_NAME
    out_kw = dict(
        runs_dir=runs_dir, results=results, record=record, figures_dir=Path(args.figures_dir)
    )
    figure_seed = seeds[0] if args.figure_seed is None else args.figure_seed
    variants = _variants(args, tables, methods)
    expected = expected_keys(problems, seeds, scale)

    if args.build_only:
        build_outputs(expected=expected, figures=not args.no_figures, **out_kw)
        return 0

    todo = plan(problems, variants, seeds, scale, runs_dir, record, exact_keys=args.retrain_stale)
    n_missing = sum(len(m) for _, _, m, _ in todo)
    n_cached = sum(len(c) for _, _, _, c in todo)
    print(
        f"paper_tables: {len(problems)} problem(s) x {len(variants)} variant(s) x {len(seeds)} "
        f"seed(s), budget scale {scale:g}: {n_cached} run(s) cached, {n_missing} to train "
        f"({'cj.train per seed' if args.no_vmap else 'seeds vmapped with cj.sweep'}); record "
        f"{record}, cache {runs_dir}",
        flush=True,
    )
    if args.list:
        _print_list(todo, runs_dir, record, scale)
        return 0

    _train_missing(cj, args, todo, scale, figure_seed, runs_dir, record, expected, out_kw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
