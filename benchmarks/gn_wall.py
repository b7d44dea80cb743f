"""Time to accuracy on the CPU: the Gauss-Newton preset beside the float64 L-BFGS setting, side by side.

``cgmpinn-jax run heat --preset accurate`` (CGMPINN, seed 1224, float64, Gauss-Newton) and
the same run with ``--preset accurate_lbfgs`` (float64 optax L-BFGS for the problem's 10000
iterations), started together, each pinned to its own core with one XLA thread (the way
``accurate_wall.py`` measures). Each tracks the test-grid relative e2 against wall seconds
(``train(track_error_every=...)``). Afterwards, alone and pinned the same way, the float32
faithful run (``--preset faithful``) for the figure.

The issue's goals, read off the traces: the Gauss-Newton run reaches the L-BFGS run's final
error in <= 0.5x the L-BFGS run's wall time, and reaches <= 1e-5 within 600 s, compile
included. The second pair asks whether item 3's other candidate, Adam in float32 before the
float64 Gauss-Newton stage (``precision="mixed"``), gets there sooner.

    python -m benchmarks.gn_wall                  # the pair, then the float32 run (~40 min)
    python -m benchmarks.gn_wall --mixed          # the second pair: precision="mixed" beside L-BFGS
    python -m benchmarks.gn_wall --build-only     # report + figure from the record / cache

Writes ``benchmarks/results/gn_wall.{json,md}`` and the figure
``benchmarks/results/gn_wall_heat.png`` (relative e2 against wall seconds, the README's; copied
to ``docs/img/`` for the docs site).
The float32 run can run afterwards or beside the pair's remainder: ``--only float32 --core 1``.
Error traces live in the ignored cache ``benchmarks/cache/gn_wall/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks import runcache

STUDY = "gn_wall"
RESULTS = Path(__file__).parent / "results"
PROBLEM, METHOD, SEED = "heat", "cgmpinn", 1224
VARIANTS = {  # name -> (preset, overrides, track every n second-stage iterations)
    "gauss_newton": ("accurate", {}, 25),
    "lbfgs_f64": ("accurate_lbfgs", {}, 100),
    "float32": ("faithful", {}, 100),
    "mixed": ("accurate", {"precision": "mixed"}, 25),
}
LABELS = {"gauss_newton": "float64, Gauss-Newton (--preset accurate)",
          "lbfgs_f64": "float64, L-BFGS (--preset accurate_lbfgs)", "float32": "float32, L-BFGS (faithful)",
          "mixed": "float32 Adam, float64 Gauss-Newton (--precision mixed; second pair)"}
#: Gauss-Newton variant -> (its L-BFGS partner started with it, the partner's record key, name in
#: the goals). The second pair (``--mixed``) ran beside a fresh float64 L-BFGS run, kept under its
#: own key so that each pair's ratio comes from one run.
PAIRS = {"gauss_newton": ("lbfgs_f64", "lbfgs_f64", "Gauss-Newton"),
         "mixed": ("lbfgs_f64", "lbfgs_f64-beside-mixed", "Gauss-Newton (mixed)")}

WORKER = """
import json, sys, time
import numpy as np
import cgmpinn_jax as cj
t0 = time.perf_counter()
res = cj.train({problem!r}, {method!r}, cj.TrainConfig.preset({preset!r}, **{overrides!r}), key={seed}, quiet=True,
               prefetch_compile=True, track_error_every={every})
wall = time.perf_counter() - t0
h = res.history
out = dict(variant={variant!r}, preset={preset!r}, problem={problem!r}, method={method!r}, seed={seed},
           rel_e2=float(res.metrics.rel_e2), wall_seconds=wall, compile_seconds=res.compile_seconds,
           run_seconds=res.run_seconds, second_status=res.statuses["lbfgs"].name, adam_status=res.statuses["adam"].name,
           second_iterations=int(np.sum(h.k > res.adam_steps)), adam_steps=res.adam_steps, config=res.config.to_dict(),
           error_trace=dict(k=h.error_k.tolist(), seconds=h.error_seconds.tolist(), rel_e2=h.error_rel_e2.tolist()))
json.dump(out, open(sys.argv[1], "w"))
"""


def launch(variant: str, core: int, out: Path) -> subprocess.Popen:
    preset, overrides, every = VARIANTS[variant]
    code = WORKER.format(problem=PROBLEM, method=METHOD, preset=preset, overrides=overrides, seed=SEED, variant=variant,
                         every=every)
    env = dict(os.environ, XLA_FLAGS=runcache.ONE_THREAD_XLA_FLAGS)
    return subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", code, str(out)], env=env)


def compact(full: dict) -> dict:
    c = {k: v for k, v in full.items() if k != "error_trace"}
    t = full["error_trace"]
    config = full["config"]  # today's form (adam.steps), or the flat one of the records before it (adam_steps)
    adam = int(full.get("adam_steps") or (config.get("adam") or {}).get("steps") or config.get("adam_steps") or 5000)
    at = [s for k, s in zip(t["k"], t["seconds"]) if k >= adam]
    c["adam_end_seconds"] = float(at[0]) if at else None  # the first tracked point after Adam
    for thr in (1e-4, 1e-5, 1e-6):
        idx = np.nonzero(np.asarray(t["rel_e2"]) <= thr)[0]
        c[f"seconds_to_{thr:.0e}"] = float(t["seconds"][idx[0]]) if idx.size else None
    return c


def run(variants: list[str], together: bool, first_core: int = 0) -> None:
    study = runcache.Study(STUDY)
    tmp = Path(runcache.CACHE) / STUDY
    tmp.mkdir(parents=True, exist_ok=True)
    load0, started = os.getloadavg(), runcache._now()
    procs = {v: launch(v, first_core + i, tmp / f"{v}.out.json") for i, v in enumerate(variants)}
    for v, p in procs.items():
        if p.wait() != 0:
            raise SystemExit(f"{v} run failed (exit {p.returncode})")
    load1 = os.getloadavg()
    fulls = {v: json.loads((tmp / f"{v}.out.json").read_text()) for v in variants}
    names = {v: v for v in variants}  # record keys
    for gn, (lb, key, _) in PAIRS.items():  # when a Gauss-Newton run reached its partner's final error
        if gn in fulls and lb in fulls:
            fulls[gn]["seconds_to_partner_final"] = first_time(fulls[gn]["error_trace"], fulls[lb]["rel_e2"])
            names[lb] = key
    for v in variants:
        full = fulls[v]
        full.update(started_at=started, load_start=load0, load_end=load1, xla_flags=runcache.ONE_THREAD_XLA_FLAGS,
                    pinned="one core per run (taskset), " + ("started together" if together else "alone"))
        study.save(f"{names[v]}-seed{SEED}", full, compact=compact)


def first_time(trace: dict, thr: float):
    idx = np.nonzero(np.asarray(trace["rel_e2"]) <= thr)[0]
    return float(trace["seconds"][idx[0]]) if idx.size else None


def build() -> None:
    study = runcache.Study(STUDY)
    for key, rec in study.load().items():  # records written before a field was added: from the cache
        full = study.load_full(key)
        if full is not None and "adam_end_seconds" not in rec:
            study.save(key, full, compact=compact)
    recs = study.load()
    lines = [
        "# Time to accuracy: Gauss-Newton beside float64 L-BFGS (heat CGMPINN, seed 1224)",
        "",
        "Command: `python -m benchmarks.gn_wall`; record `benchmarks/results/gn_wall.json`. The two float64 runs "
        "started together, each pinned to its own core with one XLA thread; the float32 run pinned the same way "
        "(recorded here: on the L-BFGS run's core once that run had ended, then `peer_jinns.py` on that core, while "
        "the Gauss-Newton run went on; `--only float32 --core 1`). The second pair, `python -m benchmarks.gn_wall "
        "--mixed`: the accurate preset with `precision=\"mixed\"` (Adam in float32, Gauss-Newton in float64) beside "
        "a fresh float64 L-BFGS run, started together the same way on another day. Seconds from the start of "
        "`cj.train` (compile included), read off the test-grid error tracked every "
        "25 (Gauss-Newton) or 100 (L-BFGS) second-stage iterations.",
        "",
        "| run | final rel. e2 | wall s (compile) | second stage | to 1e-4 s | to 1e-5 s | to 1e-6 s |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [(v, LABELS[v]) for v in VARIANTS] + [
        (key, f"{LABELS[lb]}, beside the {gn} run") for gn, (lb, key, _) in PAIRS.items() if key != lb]
    for v, label in rows:
        r = recs.get(f"{v}-seed{SEED}")
        if r is None:
            continue
        f = lambda x: "never" if x is None else f"{x:.0f}"  # noqa: E731
        lines.append(f"| {label} | {r['rel_e2']:.3e} | {r['wall_seconds']:.0f} ({r['compile_seconds']:.1f}) | "
                     f"{r['second_iterations']} its, {r['second_status']} | {f(r['seconds_to_1e-04'])} | "
                     f"{f(r['seconds_to_1e-05'])} | {f(r['seconds_to_1e-06'])} |")
    goals = [goal_lines(recs.get(f"{gn}-seed{SEED}"), recs.get(f"{key}-seed{SEED}"), name)
             for gn, (_, key, name) in PAIRS.items()]
    if any(goals):
        lines += ["", "Goals:", ""] + [line for g in goals for line in g]
        gn = recs.get(f"gauss_newton-seed{SEED}") or recs.get(f"mixed-seed{SEED}")
        lines += ["", f"Load average at start {gn['load_start']}, at end {gn['load_end']} (the first pair); machine: "
                  f"{gn['machine'].get('processor')}, {gn['machine'].get('cpu_count')} CPUs, jax {gn['machine'].get('jax')}."]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{STUDY}.md").write_text(text)
    print(text)
    figure(study)


def goal_lines(gn: dict | None, lb: dict | None, name: str) -> list[str]:
    """The issue's two goals for one pair started together (empty when either run is missing)."""
    if not (gn and lb):
        return []
    out = []
    t_match = gn.get("seconds_to_partner_final")
    if t_match is not None:
        ratio = t_match / lb["wall_seconds"]
        out.append(f"- {name} reached its L-BFGS partner's final error ({lb['rel_e2']:.3e}) after {t_match:.0f} s, "
                   f"{ratio:.2f}x the L-BFGS run's wall time ({lb['wall_seconds']:.0f} s): goal <= 0.5x "
                   + ("met." if ratio <= 0.5 else "missed."))
        if gn.get("adam_end_seconds") and lb.get("adam_end_seconds"):
            same = gn["config"].get("precision") == lb["config"].get("precision")
            out.append(f"- Their Adam stages ({'the same float64 stage' if same else 'float32 against float64'}) "
                       f"took {gn['adam_end_seconds']:.0f} s / {lb['adam_end_seconds']:.0f} s; the second stages "
                       f"alone: {t_match - gn['adam_end_seconds']:.0f} s against "
                       f"{lb['wall_seconds'] - lb['adam_end_seconds']:.0f} s "
                       f"({(t_match - gn['adam_end_seconds']) / (lb['wall_seconds'] - lb['adam_end_seconds']):.2f}x).")
    else:
        out.append(f"- {name} never reached its L-BFGS partner's final error ({lb['rel_e2']:.3e}): goal <= 0.5x missed.")
    t5 = gn["seconds_to_1e-05"]
    out.append(f"- {name} to <= 1e-5: " + ("never" if t5 is None else f"{t5:.0f} s") + ", goal <= 600 s: "
               + ("met." if t5 is not None and t5 <= 600 else "missed."))
    return out


def figure(study) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no figure")
        return
    traces = {v: study.load_full(f"{v}-seed{SEED}") for v in VARIANTS}
    if not any(traces.values()):
        return
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    for v, full in traces.items():
        if full is None:
            continue
        t = full["error_trace"]
        ax.plot(t["seconds"], t["rel_e2"], label=LABELS[v], lw=1.6)
    ax.set_yscale("log")
    ax.set_xlabel("wall seconds (one core each, compile included)")
    ax.set_ylabel("relative e2 (test grid)")
    ax.set_title("heat, CGMPINN, seed 1224")
    ax.axhline(1e-5, color="grey", lw=0.8, ls=":")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "gn_wall_heat.png")
    plt.close(fig)
    docs_img = RESULTS.parent.parent / "docs" / "img"  # the docs site's copy
    if docs_img.is_dir():
        shutil.copyfile(RESULTS / "gn_wall_heat.png", docs_img / "gn_wall_heat.png")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--only", nargs="+", choices=tuple(VARIANTS), help="run these (default: the pair, then float32)")
    ap.add_argument("--core", type=int, default=0, help="the first core to pin to (--only)")
    ap.add_argument("--mixed", action="store_true", help="the second pair: mixed Gauss-Newton beside float64 L-BFGS")
    a = ap.parse_args()
    if not a.build_only:
        if a.mixed:
            run(["mixed", "lbfgs_f64"], together=True, first_core=a.core)
        elif a.only:
            run(a.only, together=len(a.only) > 1, first_core=a.core)
        else:
            run(["gauss_newton", "lbfgs_f64"], together=True)
            run(["float32"], together=False)
    build()
