"""What CGMPINN adds to a PINN's Adam step, measured in pairs (issue 22: "CGMPINN within 10%
of PINN per step, the GMM refresh amortised").

``roofline.py`` times PINN and CGMPINN one after the other, minutes apart. On the 2-core
development machine such timings drift by up to 2x: its rows have put CGMPINN from 26%
cheaper to 25% dearer per Adam step than PINN, although a CGMPINN step does strictly more work
and, on five of the six problems, runs the very same network, and the loss+gradient
evaluation, one and the same program for both methods, has differed by up to 2x between the
two rows. This script measures the difference itself: in one process (one XLA thread, one
core) it compiles three Adam steps on the same training points,

* ``pinn``: the PINN network, unit weights, fixed term weights (a PINN step);
* ``cgm-weights``: the CGMPINN network and non-uniform per-point weights, fixed term weights
  (the CGM weighting between two refreshes, no ReLoBRaLo);
* ``cgmpinn``: as ``cgm-weights`` plus the ReLoBRaLo update of the term weights at every step
  (a CGMPINN step as the engine runs it between refreshes),

then times them in rounds, each round calling each step once (``--steps`` Adam steps per call)
in a rotating order, so slow drifts of the machine hit all three alike. It also times one GMM
refresh (residual pass + EM fit + CGM weights) and spreads it over the method's ``k_upd``
steps: ``cgmpinn + refresh/k_upd`` is the per-step cost the goal names. Reported: median ms per
step of each, and the median [min-max] over rounds of the per-round ratio to ``pinn``.

The steps and the refresh are ``roofline.py``'s own (``step_parts``, ``adam_loop``,
``gmm_refresh``).

    python -m benchmarks.cgm_overhead                       # all six problems (~3 min idle)
    python -m benchmarks.cgm_overhead --problems poisson1d --rounds 5 --no-write

Writes ``benchmarks/results/cgm_overhead.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import roofline as rl  # the steps and objective of the roofline
from benchmarks import runcache

HERE = Path(__file__).resolve().parent

RESULTS = HERE / "results"
STEPS = ("pinn", "cgm-weights", "cgmpinn")


def _adam_step(problem, variant: str, steps: int):
    """(jitted loop of ``steps`` Adam steps, its arguments) of one of :data:`STEPS`."""
    params, _, batch, w, lam, vg = rl.step_parts(problem, "pinn" if variant == "pinn" else "cgmpinn",
                                                 weighted=variant != "pinn")
    loop, args = rl.adam_loop(vg, params, batch, w, lam, steps, relobralo=variant == "cgmpinn")
    fn, compile_s, _ = rl._compile(rl.jax.jit(loop), args)
    return fn, args, compile_s


def _refresh(problem):
    """(jitted GMM refresh of the CGMPINN network, its arguments)."""
    params, static, batch, *_ = rl.step_parts(problem, "cgmpinn", weighted=True)
    refresh, wstate = rl.gmm_refresh(problem, static, batch)
    fn, _, _ = rl._compile(rl.jax.jit(refresh), (params, wstate))
    return fn, (params, wstate)


def _once(fn, args) -> float:
    t0 = time.perf_counter()
    rl.jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def measure(name: str, steps: int, rounds: int) -> dict:
    cj = rl.cj
    problem = cj.get_problem(name)
    k_upd = cj.get_method("cgmpinn").settings(problem).k_upd or problem.defaults.k_upd
    fns, compile_s = {}, {}
    for v in STEPS:
        fn, args, compile_s[v] = _adam_step(problem, v, steps)
        fns[v] = (fn, args)
        _once(fn, args)  # warm-up
    rf, rargs = _refresh(problem)
    _once(rf, rargs)
    times = {v: [] for v in STEPS}
    refresh = []
    for k in range(rounds):
        order = STEPS[k % 3:] + STEPS[:k % 3]  # rotate who goes first
        for v in order:
            times[v].append(_once(*fns[v]) / steps)
        refresh.append(_once(rf, rargs))
    ms = {v: 1e3 * statistics.median(t) for v, t in times.items()}
    refresh_ms = 1e3 * statistics.median(refresh)
    ratios = {}
    for v in STEPS[1:]:
        per_round = [a / b for a, b in zip(times[v], times["pinn"])]
        ratios[v] = per_round
    amort = [(c + r / k_upd) / p for c, r, p in zip(times["cgmpinn"], refresh, times["pinn"])]
    ratios["cgmpinn+refresh"] = amort

    def summary(xs):
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}

    return {"problem": name, "steps_per_call": steps, "rounds": rounds, "k_upd": k_upd, "ms_per_step": ms,
            "refresh_ms": refresh_ms, "cgmpinn_plus_refresh_ms": ms["cgmpinn"] + refresh_ms / k_upd,
            "ratio_to_pinn": {v: summary(x) for v, x in ratios.items()}, "compile_s": compile_s}


def worker_main(args) -> None:
    rl._worker_imports()
    rows = []
    for name in args.problems.split(","):
        steps = max(1, round(args.steps * (0.25 if name == "fisher_kpp" else 1.0)))
        rounds = max(3, args.rounds // 2) if name == "fisher_kpp" else args.rounds
        t0 = time.perf_counter()
        row = measure(name, steps, rounds)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print("@@RESULT@@" + json.dumps({"rows": rows, "jax": rl.jax.__version__,
                                     "xla_flags": os.environ.get("XLA_FLAGS", "")}), flush=True)


def render(doc: dict) -> str:
    def r(x):
        return f"{x['median']:.2f} [{x['min']:.2f}-{x['max']:.2f}]"

    lines = [
        "# What CGMPINN adds to a PINN's Adam step (paired)",
        "",
        f"Made by `benchmarks/cgm_overhead.py` on {doc['machine']} ({doc['date']}, {doc['total_seconds'] / 60:.1f} min), "
        f"one XLA thread pinned to one core. Command: `{doc['command']}`. Load average (1, 5, 15 min): "
        f"{doc['loadavg_start']} at the start, {doc['loadavg_end']} at the end.",
        "",
        "Three Adam steps on the same training points, compiled in one process and timed in rounds (each round calls "
        "each once, in a rotating order): `pinn` (PINN network, unit weights, fixed term weights), `cgm-weights` "
        "(CGMPINN network, non-uniform per-point weights, fixed term weights), `cgmpinn` (plus ReLoBRaLo at every "
        "step, as between two refreshes). `+ refresh` adds one GMM refresh (residual pass, EM fit, CGM weights) "
        "spread over the method's k_upd steps: the per-step cost of issue 22's goal (CGMPINN within 10% of PINN). "
        "Ratios: median [min-max] over rounds of the round's ratio to `pinn`.",
        "",
        "| problem | rounds | pinn ms / step | cgm-weights ms | cgmpinn ms | refresh ms (k_upd) | cgm-weights / pinn "
        "| cgmpinn / pinn | (cgmpinn + refresh/k_upd) / pinn | within 10% |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["rows"]:
        ms, rt = row["ms_per_step"], row["ratio_to_pinn"]
        ok = "yes" if rt["cgmpinn+refresh"]["median"] <= 1.10 else "no"
        lines.append(
            f"| {row['problem']} | {row['rounds']} | {ms['pinn']:.2f} | {ms['cgm-weights']:.2f} | {ms['cgmpinn']:.2f} "
            f"| {row['refresh_ms']:.2f} ({row['k_upd']}) | {r(rt['cgm-weights'])} | {r(rt['cgmpinn'])} "
            f"| {r(rt['cgmpinn+refresh'])} | {ok} |")
    lines += ["", "Compile seconds and every round's figures' summaries are in the JSON.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default=",".join(rl.PROBLEMS))
    ap.add_argument("--steps", type=int, default=20, help="Adam steps per timed call (Fisher-KPP: a quarter)")
    ap.add_argument("--rounds", type=int, default=15, help="timing rounds (Fisher-KPP: half, at least 3)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write results/")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    bad = [p for p in args.problems.split(",") if p not in rl.PROBLEMS]
    if bad:
        ap.error(f"--problems: unknown {bad}; choose from {list(rl.PROBLEMS)}")
    if args.steps < 1 or args.rounds < 1:
        ap.error("--steps and --rounds must be >= 1")
    if args.worker:
        worker_main(args)
        return 0
    env = dict(os.environ, XLA_FLAGS=rl.THREAD_FLAGS[1])
    cmd = ["taskset", "-c", "0", sys.executable, "-m", "benchmarks.cgm_overhead", "--worker",
           "--problems", args.problems, "--steps", str(args.steps), "--rounds", str(args.rounds)]
    load0, t0 = os.getloadavg(), time.perf_counter()
    res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
    if res.returncode != 0:
        raise SystemExit(f"worker failed (rc {res.returncode})")
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
    doc = json.loads(line[len("@@RESULT@@"):])
    doc.update({
        "command": "python -m benchmarks.cgm_overhead " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": runcache.machine_text("{processor}, {cpu_count} cores, {system}"),
        "loadavg_start": [round(x, 2) for x in load0], "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "total_seconds": time.perf_counter() - t0,
    })
    md = render(doc)
    print(md)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "cgm_overhead.json").write_text(json.dumps(doc, indent=1) + "\n")
        (RESULTS / "cgm_overhead.md").write_text(md)
        print(f"wrote {RESULTS / 'cgm_overhead.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
