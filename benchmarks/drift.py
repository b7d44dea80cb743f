"""Drift of recorded runs: the same runs retrained at today's code against their record
(issue 45, item 5).

Any study on ``runcache`` can retrain recorded runs beside its committed record:
``CGMPINN_BENCH_OUT=DIR`` sends the study's record, cache and report to ``DIR`` (the committed
ones are left alone). This script then compares that record with the committed one run by run
(paper runs by problem, variant and seed, whose keys hash the config; every other study by run
key): the relative e2 of each, their ratio, the medians per (problem, method), and the commit
each side names. ``--adopt`` replaces the committed runs by the retrained ones (the tables and
the README are then rebuilt from the record by the study's ``--build-only`` / ``--report-only``
and ``readme_tables``).

    CGMPINN_BENCH_OUT=/tmp/drift python -m benchmarks.paper_tables --problems poisson1d,heat \
        --variants pinn,cgmpinn --no-vmap --no-figures
    python -m benchmarks.drift --new /tmp/drift/results/paper_runs.json [--adopt]
    CGMPINN_BENCH_OUT=/tmp/drift python -m benchmarks.accuracy --problems poisson1d --seeds 0
    python -m benchmarks.drift --record benchmarks/results/accuracy.json \
        --new /tmp/drift/results/accuracy.json

Writes ``benchmarks/results/drift.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from benchmarks import runcache

RESULTS = Path(__file__).parent / "results"


def _cell(run_key: str, run: dict) -> tuple:
    """What matches a run across records: ``(problem, variant, seed)`` of a paper run key (None
    for scaled runs), else the run key itself."""
    parts = run_key.split("__")
    if run.get("format") == "cgmpinn-jax/paper-run/1":
        return (
            (parts[0], parts[1], int(parts[2][4:]))
            if len(parts) == 4 and parts[2].startswith("seed")
            else None
        )
    return (
        run.get("problem", "?"),
        run.get("method", run.get("variant", "?")),
        run.get("seed"),
        run_key,
    )


def _rel_e2(run: dict) -> float:
    return float(run["metrics"]["rel_e2"] if "metrics" in run else run["rel_e2"])


def compare(old: dict, new: dict) -> list[dict]:
    by_cell = {_cell(k, r): (k, r) for k, r in old["runs"].items() if _cell(k, r)}
    rows = []
    for k, r in sorted(new["runs"].items()):
        cell = _cell(k, r)
        if cell is None or cell not in by_cell:
            continue
        ok, o = by_cell[cell]
        a, b = _rel_e2(o), _rel_e2(r)
        rows.append(
            {
                "problem": cell[0],
                "variant": cell[1],
                "seed": cell[2],
                "old_key": ok,
                "new_key": k,
                "same_key": ok == k,
                "old_rel_e2": a,
                "new_rel_e2": b,
                "ratio": b / a,
                "old_commit": o.get("commit", old.get("commit")),
                "old_finished": o.get("finished_at"),
                "old_timing": o.get("timing"),
                "new_commit": r.get("commit"),
                "new_timing": r.get("timing"),
                "new_threads": r.get("threads"),
            }
        )
    return rows


def medians(rows: list[dict]) -> list[dict]:
    out = []
    for pv in sorted({(r["problem"], r["variant"]) for r in rows}):
        sel = [r for r in rows if (r["problem"], r["variant"]) == pv]
        mo, mn = (
            float(np.median([r["old_rel_e2"] for r in sel])),
            float(np.median([r["new_rel_e2"] for r in sel])),
        )
        out.append(
            {
                "problem": pv[0],
                "variant": pv[1],
                "seeds": len(sel),
                "old_median": mo,
                "new_median": mn,
                "ratio": mn / mo,
            }
        )
    return out


def render(doc: dict) -> str:
    lines = [
        "# Drift: recorded runs retrained at today's code",
        "",
        f"Command: `{doc['command']}`. Retrained with `{doc['retrain_command']}`. "
        f"{doc['machine_text']}",
        "",
        "The old runs name no commit where the record predates commit records (2026-11-26); "
        "'single' is one `cj.train` call, 'vmapped-share' a seed of a `cj.sweep` call (same "
        "numbers only up to rounding). Thread setting of the retrained runs: "
        + ", ".join(sorted({str(r.get("new_threads")) for r in doc["runs"]}))
        + "; the old runs' is not recorded. A retrained run names the commit it started from "
        "(+dirty: the package had uncommitted changes).",
        "",
        "| problem | variant | seeds | old median rel. e2 | new median rel. e2 | new / old |",
        "|---|---|---|---|---|---|",
    ]
    for m in doc["medians"]:
        lines.append(
            f"| {m['problem']} | {m['variant']} | {m['seeds']} | {m['old_median']:.3e} | "
            f"{m['new_median']:.3e} | {m['ratio']:.2f} |"
        )
    lines += [
        "",
        "| problem | variant | seed | old rel. e2 (timing, finished) | "
        "new rel. e2 (timing, commit) | new / old | same key |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["runs"]:
        lines.append(
            f"| {r['problem']} | {r['variant']} | {r['seed']} | "
            f"{r['old_rel_e2']:.3e} ({r['old_timing']}, {r['old_finished']}) | "
            f"{r['new_rel_e2']:.3e} ({r['new_timing']}, {r['new_commit']}) | {r['ratio']:.2f} | "
            f"{'yes' if r['same_key'] else 'no'} |"
        )
    lines += ["", f"Adopted into the record: {'yes' if doc['adopted'] else 'no'}.", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--record", default=str(RESULTS / "paper_runs.json"), help="the committed record"
    )
    ap.add_argument("--new", required=True, help="the retrained runs' record")
    ap.add_argument(
        "--retrain-command", default="", help="the command that retrained them, for the report"
    )
    ap.add_argument(
        "--adopt", action="store_true", help="replace the committed runs by the retrained ones"
    )
    args = ap.parse_args(argv)
    old, new = json.loads(Path(args.record).read_text()), json.loads(Path(args.new).read_text())
    rows = compare(old, new)
    if not rows:
        sys.exit(f"drift: no run of {args.new} matches a run of {args.record}")
    if args.adopt:
        for r in rows:
            old["runs"].pop(r["old_key"], None)
            old["runs"][r["new_key"]] = new["runs"][r["new_key"]]
        Path(args.record).write_text(runcache._dumps_record(old))
    raw = list(argv if argv is not None else sys.argv[1:])
    doc = {
        "study": "drift",
        "command": shlex.join(["python", "-m", "benchmarks.drift", *raw]),
        "retrain_command": args.retrain_command
        or new["runs"][rows[0]["new_key"]].get("command", ""),
        "machine_text": runcache.machine_text("Machine: {system} {arch}, {cpu_count} CPUs."),
        "commit": runcache.code_commit(),
        "adopted": bool(args.adopt),
        "medians": medians(rows),
        "runs": rows,
    }
    (RESULTS / "drift.json").write_text(json.dumps(runcache.to_json(doc), indent=1) + "\n")
    (RESULTS / "drift.md").write_text(render(doc))
    print(render(doc))


if __name__ == "__main__":
    main()
