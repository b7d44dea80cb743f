"""Long runs as a user lives them: the command line on a stage whose iterations take tens of
seconds.

A lid-driven cavity of PINNacle's NS2d-C (``ns2d_c``) with its collocation points raised
(``--n-pde``, default 2400: 8401 residual rows x 7953 parameters at width 50), the accurate
preset (float64, Gauss-Newton) after a short Adam stage, run by ``cgmpinn-jax run`` in a child
process whose every output line is timestamped here. Two scenarios, each into its own folder:

* ``ctrl-c``: ``--checkpoint-every 60``; Ctrl-C (SIGINT) ``--sigint-after`` seconds into the
  second stage. Measured: the longest gap between progress lines and between checkpoints
  (new ``checkpoints/ckpt-*`` folders, polled every 0.2 s) in the second stage, and the seconds
  from the signal to the process's exit (status 130).
* ``time-limit``: ``--time-limit`` (default 120) on the whole run, then ``--resume`` with
  ``--resume-limit``. Measured: the run's wall seconds against the limit, the stage's status in
  the summary, and that the resumed run goes on past the first one's iterations.

    python -m benchmarks.long_runs --out /tmp/long-runs
    python -m benchmarks.long_runs --report-only

Writes ``results/long_runs.json`` and ``.md`` (one record per scenario, with the commit).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from benchmarks import machine, runcache

STUDY = "long_runs"


def _module(folder: Path, n_pde: int) -> str:
    (folder / "long_runs_ns.py").write_text(
        textwrap.dedent(f"""
        import dataclasses
        from cgmpinn_jax.problems.pinnacle import NS2DC
        @dataclasses.dataclass(frozen=True)
        class RaisedNS2DC(NS2DC):
            n_pde: int = {n_pde}
        """)
    )
    return "long_runs_ns:RaisedNS2DC"


def _watch(cmd, cwd: Path, out: Path, sigint_after: float | None = None) -> dict:
    """Run ``cmd``; every line and every new checkpoint with its time; SIGINT ``sigint_after``
    seconds after the second stage's first line."""
    as_terminal = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'cgmpinn-jax'; runpy.run_module('cgmpinn_jax.cli', run_name='__main__', "
        "alter_sys=True)"
    )
    env = dict(
        os.environ,
        XLA_FLAGS=machine.ONE_THREAD_XLA_FLAGS,
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(cwd), str(Path(__file__).resolve().parents[1])]),
    )
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", as_terminal, *cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    os.set_blocking(proc.stdout.fileno(), False)
    lines, ckpts, seen, second_at, sent_at, buf = [], [], set(), None, None, ""
    while True:
        try:
            chunk = proc.stdout.read() or ""
        except (BlockingIOError, TypeError):
            chunk = ""
        buf += chunk
        now = time.perf_counter() - t0
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            lines.append((now, line))
            if second_at is None and "gauss_newton" in line and "k=" in line:
                second_at = now
        folder = out / "checkpoints"
        for p in folder.iterdir() if folder.is_dir() else []:
            if p.name.startswith("ckpt-") and p.name not in seen:
                seen.add(p.name)
                ckpts.append((now, p.name))
        if (
            sigint_after is not None
            and sent_at is None
            and second_at is not None
            and now - second_at >= sigint_after
        ):
            proc.send_signal(signal.SIGINT)
            sent_at = now
        if proc.poll() is not None and not chunk:
            break
        time.sleep(0.2)
    return {
        "rc": proc.returncode,
        "wall": time.perf_counter() - t0,
        "lines": lines,
        "checkpoints": ckpts,
        "second_stage_at": second_at,
        "sigint_at": sent_at,
    }


def _gaps(times, start, end) -> float | None:
    ts = [t for t in times if start <= t <= end]
    return max((b - a for a, b in zip([start] + ts, ts + [end])), default=None)


def scenario(name: str, args, work: Path) -> dict:
    r = json.loads(
        json.dumps(_scenario(name, args, work)).replace(str(work / name), "DIR")
    )  # no machine paths
    return {
        **r,
        "threads": machine.threads_label(machine.ONE_THREAD_XLA_FLAGS),
        "n_pde": args.n_pde,
        "width": args.width,
        "adam_steps": args.adam_steps,
        **({"sigint_after_s": args.sigint_after} if name == "ctrl-c" else {}),
    }


def _scenario(name: str, args, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    base = [
        "run",
        _module(work, args.n_pde),
        "--method",
        "pinn",
        "--preset",
        "accurate",
        "--width",
        str(args.width),
        "--adam-steps",
        str(args.adam_steps),
        "--seed",
        "0",
        "--no-plots",
        "--compile-cache",
        "off",
    ]
    out = work / name
    if name == "ctrl-c":
        r = _watch(
            base + ["--out", str(out), "--checkpoint-every", "60"], work, out, args.sigint_after
        )
        s2, end = r["second_stage_at"], r["sigint_at"]
        progress = [t for t, line in r["lines"] if "gauss_newton" in line and "k=" in line]
        return {
            "scenario": name,
            "rc": r["rc"],
            "second_stage_started_s": s2,
            "sigint_s": end,
            "answered_after_s": r["wall"] - end,
            "max_progress_gap_s": _gaps(progress, s2, end),
            "max_checkpoint_gap_s": _gaps([t for t, _ in r["checkpoints"]], s2, end),
            "progress_lines": len([t for t in progress if s2 <= t <= end]),
            "estimate_line": next(
                (line for _, line in r["lines"] if "an iteration measured" in line), None
            ),
            "form_line": next((line for _, line in r["lines"] if "Gauss-Newton:" in line), None),
            "tail": [line for _, line in r["lines"][-4:]],
        }
    first = _watch(base + ["--out", str(out), "--time-limit", str(args.time_limit)], work, out)
    again = _watch(
        [
            "run",
            "--resume",
            str(out),
            "--time-limit",
            str(args.resume_limit),
            "--no-plots",
            "--compile-cache",
            "off",
        ],
        work,
        out,
    )

    def summary(r):
        return [line.strip() for _, line in r["lines"] if "Gauss-Newton" in line and " of " in line]  # noqa: E731

    return {
        "scenario": name,
        "time_limit_s": args.time_limit,
        "rc": first["rc"],
        "wall_s": first["wall"],
        "estimate_line": next(
            (
                line
                for _, line in first["lines"] + again["lines"]
                if "an iteration measured" in line
            ),
            None,
        ),
        "over_limit_s": first["wall"] - args.time_limit,
        "summary": summary(first),
        "continue_line": next((line for _, line in first["lines"] if "--resume" in line), None),
        "resume_limit_s": args.resume_limit,
        "resume_rc": again["rc"],
        "resume_wall_s": again["wall"],
        "resume_summary": summary(again),
    }


def render(recs: dict) -> str:
    lines = [
        "# Long runs: the command line on a stage of slow iterations",
        "",
        "Written by `python -m benchmarks.long_runs` (its docstring has the setting). Seconds are "
        "wall seconds seen by the parent process (lines timestamped as they arrive, checkpoints "
        "polled every 0.2 s).",
        "",
    ]
    for key in sorted(recs):
        r = recs[key]
        lines += [f"## {key}", "", "| measure | value |", "|---|---|"]
        lines += [
            f"| {k} | {v if not isinstance(v, float) else f'{v:.1f}'} |"
            for k, v in r.items()
            if k not in ("machine", "tail", "summary", "resume_summary") and not isinstance(v, list)
        ]
        for k in ("summary", "resume_summary", "tail"):
            if r.get(k):
                lines += [f"| {k} | {'<br>'.join(x.replace('|', '/') for x in r[k])} |"]
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--scenarios", nargs="+", default=["ctrl-c", "time-limit"], choices=["ctrl-c", "time-limit"]
    )
    ap.add_argument("--n-pde", type=int, default=2400)
    ap.add_argument("--width", type=int, default=50)
    ap.add_argument("--adam-steps", type=int, default=200)
    ap.add_argument(
        "--sigint-after", type=float, default=300.0, help="seconds into the second stage"
    )
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--resume-limit", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=Path("runs/long-runs"), help="work folder")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    study = runcache.Study(STUDY)
    if not args.report_only:
        for name in args.scenarios:
            r = study.run(
                f"{name}__npde{args.n_pde}__w{args.width}",
                lambda name=name: scenario(name, args, args.out.resolve()),
            )
            print(json.dumps({k: v for k, v in r.items() if k != "machine"}, indent=1), flush=True)
    study.write_report(render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
