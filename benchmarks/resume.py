"""Checkpoints survive a kill: 1D Poisson CGMPINN at the paper's budget (5000 Adam + 10000
L-BFGS, float32, seed 1224), killed with SIGKILL at random moments, then resumed.

For each kill, ``cgmpinn-jax run --out D --checkpoint-every 0`` (a checkpoint at every chunk
boundary) is started and killed at a moment drawn uniformly over the rest of the run once its
first checkpoint exists (the reference run's wall time after its first checkpoint); ``cgmpinn-jax run
--resume D`` then finishes it. The resumed run's ``metrics.json`` and every entry of
``history.json`` are compared with the uninterrupted reference run's (the same command
without a kill). Three more kills do the same for a short Gauss-Newton run (``--preset
accurate --adam-steps 1000 --second-steps 100``).

The checkpoint overhead is measured inside single runs: ``TrainResult.checkpoint_seconds``
(time spent writing checkpoints) as a share of the run's wall time, at the default interval
(60 s) and at every chunk boundary.

    python -m benchmarks.resume            # -> benchmarks/results/resume.{json,md}
    python -m benchmarks.resume --settings gauss_newton --no-overhead   # one part (merged into the record)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
BASE = ["poisson1d", "--method", "cgmpinn", "--seed", "1224", "--no-plots", "--quiet", "--compile-cache", "off"]
SETTINGS = {"faithful": [], "gauss_newton": ["--preset", "accurate", "--adam-steps", "1000", "--second-steps", "100"]}
KILLS = {"faithful": 10, "gauss_newton": 3}


def cli(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cgmpinn_jax.cli", "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


def finished(out: Path) -> dict:
    return {"metrics": json.loads((out / "metrics.json").read_text()),
            "history": json.loads((out / "history.json").read_text())}


def same(a: dict, b: dict) -> dict:
    """Which parts differ: metrics (timings aside) and each history entry."""
    skip = {"compile_seconds", "run_seconds"}
    m = [k for k in a["metrics"] if k not in skip and a["metrics"][k] != b["metrics"].get(k)]
    h = [k for k in a["history"] if a["history"][k] != b["history"].get(k)]
    return {"metrics_differ": m, "history_differ": h, "identical": not m and not h}


def reference(setting: str, work: Path) -> tuple[dict, float, float]:
    """The uninterrupted run: its outputs, its wall seconds, and when its first checkpoint appeared."""
    out = work / f"ref-{setting}"
    t0 = time.perf_counter()
    p = cli([*BASE, *SETTINGS[setting], "--out", str(out), "--checkpoint-every", "0"])
    first = None
    while p.poll() is None:
        if first is None and (out / "checkpoints").exists() and any((out / "checkpoints").iterdir()):
            first = time.perf_counter() - t0
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(p.stdout.read()[-3000:])
    return finished(out), wall, first or 0.0


def kill_and_resume(setting: str, work: Path, after: float, i: int) -> dict:
    """Start the run, wait for its first checkpoint, kill it ``after`` seconds later, resume."""
    out = work / f"kill-{setting}-{i}"
    t0 = time.perf_counter()
    p = cli([*BASE, *SETTINGS[setting], "--out", str(out), "--checkpoint-every", "0"])
    while p.poll() is None and not any((out / "checkpoints").glob("ckpt-*")):
        time.sleep(0.02)
    time.sleep(after)
    at = time.perf_counter() - t0
    p.send_signal(signal.SIGKILL)
    p.wait()
    latest = max((out / "checkpoints").glob("ckpt-*"), default=None)
    # the run's work was done when it was killed: it had exited, or was past its last step
    # (model saved, checkpoints removed, not yet exited)
    alive = p.returncode == -signal.SIGKILL and not (latest is None and (out / "metrics.json").exists())
    pos = json.loads((latest / "meta.json").read_text())["position"] if latest else None
    t0 = time.perf_counter()
    r = cli(["--resume", str(out), "--no-plots", "--quiet", "--compile-cache", "off"])
    text = r.communicate()[0]
    if r.returncode != 0:
        return {"kill_at_s": at, "killed_alive": alive, "position": pos, "error": text[-2000:]}
    return {"kill_at_s": at, "killed_alive": alive, "position": pos, "resume_seconds": time.perf_counter() - t0,
            **{k: v for k, v in finished(out).items() if k != "history"}, "_outputs": finished(out)}


def overhead() -> list[dict]:
    """Checkpoint time as a share of the run, in the same run, per interval (paper budget)."""
    import cgmpinn_jax as cj

    rows = []
    for every in (60.0, 0.0):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            res = cj.train("poisson1d", "cgmpinn", cj.TrainConfig(), key=1224, quiet=True, checkpoint_dir=d,
                           checkpoint_every=every)
            wall = time.perf_counter() - t0
            n = len(list(Path(d, "checkpoints").glob("ckpt-*")))
        rows.append({"every_s": every, "checkpoint_seconds": res.checkpoint_seconds, "wall_seconds": wall,
                     "share": res.checkpoint_seconds / wall, "kept": n, "rel_e2": res.metrics.rel_e2})
        print(f"[resume] overhead every={every:g}s: {res.checkpoint_seconds:.3f}s of {wall:.1f}s "
              f"({100 * res.checkpoint_seconds / wall:.2f}%)", flush=True)
    return rows


def render(rec: dict) -> str:
    lines = ["# Resume after a kill: bit for bit", "",
             "1D Poisson CGMPINN, seed 1224, `cgmpinn-jax run` killed with SIGKILL at a random moment, then "
             "`cgmpinn-jax run --resume`; compared with the uninterrupted run (metrics.json without timings, every "
             "entry of history.json). Kill runs checkpoint at every chunk boundary (`--checkpoint-every 0`).", ""]
    for setting, s in rec["settings"].items():
        ok = sum(k.get("identical", False) for k in s["kills"])
        lines += [f"## {setting} ({s['command']})", "",
                  f"Reference run: {s['reference_wall_s']:.1f} s wall (first checkpoint at {s['first_checkpoint_s']:.1f} s), "
                  f"rel e2 {s['reference_rel_e2']:.4e}. **{ok} of {len(s['kills'])} resumed runs bit-identical.**", "",
                  "| kill | at (s) | last checkpoint | steps of the stage done | resumed rel e2 | identical |",
                  "|---|---|---|---|---|---|"]
        for i, k in enumerate(s["kills"]):
            pos = k.get("position") or {}
            where = "none" if not pos else f"{pos['stage']} chunk {pos['chunk']}" + ("" if pos["handed"] else " (hand-off)")
            rel = k.get("metrics", {}).get("rel_e2")
            lines.append(f"| {i + 1} | {k['kill_at_s']:.1f} | {where} | {pos.get('done', '-')} | "
                         f"{'-' if rel is None else f'{rel:.4e}'} | {'yes' if k.get('identical') else 'NO: ' + str(k.get('error', k.get('diff')))[:80]} |")
        lines.append("")
    lines += ["## Checkpoint overhead (paper budget, in the same run)", "",
              "| interval | checkpoint seconds | run wall seconds | share |", "|---|---|---|---|"]
    for o in rec.get("overhead", []):
        label = "every chunk" if o["every_s"] == 0 else f"{o['every_s']:g} s (default)"
        lines.append(f"| {label} | {o['checkpoint_seconds']:.3f} | {o['wall_seconds']:.1f} | {100 * o['share']:.2f}% |")
    m = rec["machine"]
    lines += ["", f"Machine: {m.get('processor', '?')}, {m.get('cpu_count', '?')} cores, jax {m.get('jax', '?')}; "
              f"{rec['threads']}.", "", "Reproduce: `python -m benchmarks.resume`.", ""]
    return "\n".join(lines)


def study(setting: str, work: Path, rng) -> dict:
    ref, wall, first = reference(setting, work)
    print(f"[resume] {setting}: reference {wall:.1f}s, first checkpoint at {first:.1f}s, "
          f"rel_e2 {ref['metrics']['rel_e2']:.4e}", flush=True)
    kills = []
    for i in range(KILLS[setting]):
        after = float(rng.uniform(0.0, wall - first - 1.0))
        for attempt in range(4):  # a run that finished before its kill moment: draw again, sooner
            shutil.rmtree(work / f"kill-{setting}-{i}", ignore_errors=True)
            k = kill_and_resume(setting, work, after, i)
            if k["killed_alive"]:
                break
            after /= 2  # the run finished before the drawn moment: draw sooner
        k["attempts"] = attempt + 1
        if "_outputs" in k:
            k["diff"] = same(ref, k.pop("_outputs"))
            k["identical"] = k["diff"]["identical"]
        print(f"[resume] {setting} kill {i + 1} at {k['kill_at_s']:.1f}s, checkpoint {k.get('position')}: "
              f"identical={k.get('identical')}", flush=True)
        kills.append(k)
    return {"command": "cgmpinn-jax run " + " ".join(BASE + SETTINGS[setting]), "reference_wall_s": wall,
            "first_checkpoint_s": first, "reference_rel_e2": ref["metrics"]["rel_e2"], "kills": kills}


def main(argv=None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--no-overhead", action="store_true", help="skip the overhead runs")
    ap.add_argument("--report-only", action="store_true", help="rebuild resume.md from resume.json")
    args = ap.parse_args(argv)
    path = RESULTS / "resume.json"
    if args.report_only:
        (RESULTS / "resume.md").write_text(render(json.loads(path.read_text())))
        return
    rec = json.loads(path.read_text()) if path.exists() else {"settings": {}}
    rec.update({"machine": runcache.machine_info(), "threads": runcache.threads_label()})
    work = Path(tempfile.mkdtemp(prefix="cgmpinn-resume-"))
    try:
        for setting in args.settings:
            rng = np.random.default_rng(list(SETTINGS).index(setting))
            result = study(setting, work, rng)
            rec = json.loads(path.read_text()) if path.exists() else rec  # another setting may have landed
            rec["settings"][setting] = result
            RESULTS.mkdir(exist_ok=True)
            path.write_text(json.dumps(runcache.to_json(rec), indent=1))
        if not args.no_overhead:
            rec = json.loads(path.read_text())
            rec["overhead"] = overhead()
            path.write_text(json.dumps(runcache.to_json(rec), indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (RESULTS / "resume.md").write_text(render(rec))
    print(render(rec))


if __name__ == "__main__":
    main()
