"""Compile time of the headline run, with and without the on-disk XLA cache.

The headline run is ``cgmpinn-jax run`` with its defaults: 1D Poisson, CGMPINN, float32,
the reference's settings. Its compiled programs do not depend on the budgets (the number of
steps in a chunk is an argument, not a constant; ``k_upd`` is), so each run here trains the
headline's 5000 Adam steps (the time the second stage's compilation can hide behind) and a
short second stage (``--lbfgs-steps``, default 100), and compiles exactly what the full run
compiles. A chunk is three programs: the weight refresh (one for both stages), the second
stage's re-basing (where it has one) and the stage's loop. Every run is a fresh process
(nothing in memory); per run:

* ``serial``: no on-disk cache, each program compiled when first needed (the library's
  default);
* ``prefetch``: no on-disk cache; the second stage's programs compiled in a background
  thread while Adam runs (``prefetch_compile=True``: off in the library unless asked, the
  ``cgmpinn-jax`` command's default, ``--background-compile on``);
* ``cold``: ``cgmpinn_jax.training.enable_compile_cache`` into an empty directory (a first run on a
  machine: compiles, then stores), each program compiled when first needed;
* ``warm``: the same directory again (every later run of the same setup).

For each: the seconds of every compiled chunk split into tracing+lowering (Python, jax) and
XLA's compiler (``CompileCache.timings``, also where a background thread did it), the
seconds the run waited for compilations (``TrainResult.compile_seconds``: with the
background compilation, only what Adam's run did not hide), and the process's wall seconds
from start to the end of training (imports included). ``--repeats`` rounds of every mode, one
process at a time; the machine's load average is recorded before and after.

    python -m benchmarks.compile_time                 # default XLA threads (as the command runs)
    python -m benchmarks.compile_time --threads 1     # one XLA thread, pinned to core 0
    python -m benchmarks.compile_time --anatomy       # each piece compiled on its own: where the time goes
    python -m benchmarks.compile_time --build-only

Writes ``benchmarks/results/compile_time.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import runcache

STUDY = "compile_time"
RESULTS = Path(__file__).parent / "results"
MODES = ("serial", "prefetch", "cold", "warm")

WORKER = """
import json, sys, time
t0 = time.perf_counter()
cache_dir = sys.argv[2]
import cgmpinn_jax as cj
if cache_dir != "-":
    cj.training.enable_compile_cache(cache_dir)
cache = cj.CompileCache()
res = cj.train("poisson1d", "cgmpinn", cj.TrainConfig(adam={{"steps": {adam}}}, second={{"steps": {lbfgs}}}), key=1224, quiet=True,
               cache=cache, prefetch_compile=sys.argv[3] == "prefetch")
wall = time.perf_counter() - t0
chunks = {{}}
for name, lower, comp in cache.timings:
    a, b = chunks.get(name, (0.0, 0.0))
    chunks[name] = (a + lower, b + comp)
json.dump(dict(compile_seconds=res.compile_seconds, lower_seconds=sum(v[0] for v in chunks.values()),
               xla_seconds=sum(v[1] for v in chunks.values()), chunks=chunks, process_wall_seconds=wall,
               run_seconds=res.run_seconds, rel_e2=float(res.metrics.rel_e2)), open(sys.argv[1], "w"))
"""


def one(mode: str, cache_dir: str, threads: int | None, adam: int, lbfgs: int, out: Path) -> dict:
    env = dict(os.environ)
    cmd = [sys.executable, "-c", WORKER.format(adam=adam, lbfgs=lbfgs), str(out), cache_dir,
           "prefetch" if mode == "prefetch" else "serial"]
    if threads == 1:
        env["XLA_FLAGS"] = runcache.ONE_THREAD_XLA_FLAGS
        cmd = ["taskset", "-c", "0"] + cmd
    load0 = os.getloadavg()
    subprocess.run(cmd, env=env, check=True)
    full = json.loads(out.read_text())
    full.update(mode=mode, threads=threads or "default", adam_steps=adam, lbfgs_steps=lbfgs,
                load_start=load0, load_end=os.getloadavg(), xla_flags=env.get("XLA_FLAGS", ""))
    return full


ANATOMY_WORKER = """
import json, sys, time
import equinox as eqx, jax, jax.numpy as jnp, optax
import cgmpinn_jax as cj
from cgmpinn_jax.config import Hyper
from cgmpinn_jax.training import CompileCache
from cgmpinn_jax.training._driver import init_state
from cgmpinn_jax.methods import get_method
from cgmpinn_jax.problems import get_problem
from cgmpinn_jax.training._schedule import resolve

out = {}

def timed(name, fn, *args):
    t0 = time.perf_counter(); lowered = jax.jit(fn).lower(*args); t1 = time.perf_counter()
    exe = lowered.compile(); t2 = time.perf_counter()
    out[name] = dict(lower_seconds=t1 - t0, xla_seconds=t2 - t1, hlo_lines=len(exe.as_text().splitlines()))
    print(f"  {name}: lowering {t1 - t0:.2f} s, XLA {t2 - t1:.2f} s", flush=True)

def engine(method, **kw):
    cfg = cj.TrainConfig(**kw)
    setup = resolve(get_problem("poisson1d"), get_method(method), cfg)
    _, eng = CompileCache().engine(setup)
    state, batch = init_state(setup, eng, jax.random.key(0))
    return cfg, eng, state, batch

with jax.default_matmul_precision("highest"):
    cfg, eng, state, batch = engine("cgmpinn")
    hyper = Hyper.from_config(cfg)
    w = jnp.ones(batch["pde"][0].shape[-2])
    timed("GMM refresh (residuals, EM, CGM weights)", lambda s, b, h: eng.refresh(s, b, h, jnp.int32(3)), state, batch, hyper)
    timed("loss + gradient", eng.objective.value_and_grad, state.params, w, state.lambdas, batch)
    timed("loss + gradient + ReLoBRaLo update",
          lambda p, w, bs, b: eng.objective.balanced_eval(p, w, bs, b, eng.balancing), state.params, w, state.bstate, batch)
    timed("Adam chunk (CGMPINN): refresh + loop in one program", eng.adam_chunk, state, batch, hyper, jnp.int32(0), jnp.int32(5))
    _, w0, h0 = eng.begin_chunk(state.params, state.wstate, batch, hyper, jnp.int32(0))
    timed("Adam loop alone (CGMPINN; the program the run compiles)", eng.adam_steps, state, batch, hyper, w0, h0, jnp.int32(5))
    for label, method, kw in (("second-stage chunk: optax L-BFGS, CGMPINN (the default)", "cgmpinn", {}),
                              ("second-stage chunk: optax L-BFGS, CGMPINN, lambdas per refresh", "cgmpinn",
                               dict(balancing={"second_stage_apply": "refresh"})),
                              ("second-stage chunk: dense BFGS (own line search), CGMPINN", "cgmpinn", dict(second_stage="bfgs")),
                              ("second-stage chunk: optax L-BFGS, PINN", "pinn", {})):
        cfg, eng, state, batch = engine(method, **kw)
        hyper = Hyper.from_config(cfg)
        w = jnp.ones(batch["pde"][0].shape[-2])
        state = eqx.tree_at(lambda s: s.opt, state, eng.init_second(state.params, w, state.lambdas, batch))
        timed(label, eng.second_chunk, state, batch, hyper, jnp.int32(0), jnp.int32(5))
        if method == "cgmpinn" and not kw:
            _, w0, h0 = eng.begin_chunk(state.params, state.wstate, batch, hyper, jnp.int32(0))
            timed("second-stage loop alone: optax L-BFGS, CGMPINN (the program the run compiles)", eng.second_steps,
                  state, batch, hyper, w0, h0, jnp.int32(5))
    # optax's L-BFGS and zoom line search alone: the network's parameter tree, a trivial objective
    params = state.params
    f = lambda p: sum(jnp.sum(jnp.tanh(x) ** 2) for x in jax.tree_util.tree_leaves(p))
    solver = optax.lbfgs(learning_rate=1.0, memory_size=100,
                         linesearch=optax.scale_by_zoom_linesearch(max_linesearch_steps=10, initial_guess_strategy="one"))
    def machinery(p, n):
        def body(c):
            i, p, st = c
            v, g = jax.value_and_grad(f)(p)
            u, st = solver.update(g, st, p, value=v, grad=g, value_fn=f)
            return i + 1, optax.apply_updates(p, u), st
        return jax.lax.while_loop(lambda c: c[0] < n, body, (0, p, solver.init(p)))[1]
    timed("optax L-BFGS + zoom search alone (trivial objective, same parameter tree)", machinery, params, 5)
json.dump(out, open(sys.argv[1], "w"))
"""


def anatomy(repeats: int) -> None:
    """Compile the headline run's pieces one by one, each round in a fresh process."""
    study = runcache.Study(STUDY)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            out = Path(tmp) / "anatomy.json"
            load0 = os.getloadavg()
            subprocess.run([sys.executable, "-c", ANATOMY_WORKER, str(out)], check=True)
            study.save(f"anatomy-r{r}", {"pieces": json.loads(out.read_text()), "load_start": load0,
                                         "load_end": os.getloadavg()})


def anatomy_table(recs: dict) -> list[str]:
    rs = [v for k, v in sorted(recs.items()) if k.startswith("anatomy-")]
    if not rs:
        return []
    loads = [r["load_start"][0] for r in rs] + [r["load_end"][0] for r in rs]
    lines = ["", "## Where the compile time goes", "",
             "`python -m benchmarks.compile_time --anatomy`: each piece of the headline run (1D Poisson, float32) "
             "traced and compiled on its own (`jax.jit(f).lower(...).compile()`), a fresh process per round; "
             f"{len(rs)} round(s), median seconds; load average (1 min) {min(loads):.2f}-{max(loads):.2f}. "
             "HLO lines: length of the optimized HLO text, a size measure independent of the machine's load.",
             "", "| piece | lowering s | XLA s | optimized HLO lines |", "|---|---|---|---|"]
    for name in rs[0]["pieces"]:
        vals = [r["pieces"][name] for r in rs if name in r["pieces"]]
        med = lambda k: statistics.median(v[k] for v in vals)
        lines.append(f"| {name} | {med('lower_seconds'):.2f} | {med('xla_seconds'):.2f} | {med('hlo_lines'):.0f} |")
    return lines


def run(threads: int | None, repeats: int, adam: int, lbfgs: int) -> None:
    study = runcache.Study(STUDY)
    tag = "t1" if threads == 1 else "tdefault"
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            cache_dir = Path(tmp) / f"xla-{r}"
            for mode in MODES:
                full = one(mode, str(cache_dir) if mode in ("cold", "warm") else "-", threads, adam, lbfgs,
                           Path(tmp) / "out.json")
                study.save(f"{tag}-{mode}-r{r}", full)
                print(f"[compile_time] {tag} {mode} round {r}: compile {full['compile_seconds']:.2f} s "
                      f"(lowering {full['lower_seconds']:.2f} + XLA {full['xla_seconds']:.2f}), process "
                      f"{full['process_wall_seconds']:.1f} s", flush=True)


def build() -> str:
    recs = runcache.Study(STUDY).load()
    lines = [
        "# Compile time of the headline run, with and without the on-disk XLA cache",
        "",
        "Command: `python -m benchmarks.compile_time [--threads 1]`; record `benchmarks/results/compile_time.json`.",
        "1D Poisson CGMPINN, float32, the command's defaults (the compiled programs are the full run's: budgets are "
        "arguments of the chunks; 5000 Adam steps as in the headline, a short second stage). One fresh process per "
        "run, one at a time. A chunk is three programs: the weight refresh (one for both stages), the second stage's "
        "re-basing (where it has one) and the stage's loop. `serial`: no disk cache, each program compiled when first "
        "needed (the library's default); `prefetch`: `prefetch_compile=True` (the second stage's programs compile in "
        "a thread while Adam runs; the `cgmpinn-jax` command's default); `cold`: first run into an empty `disk_cache` "
        "directory (compiles and stores), each program compiled when first needed; `warm`: the same directory again. Seconds: median [min-max] over rounds; waited = what "
        "`TrainResult.compile_seconds` reports (the compilations the run waited for); lowering and XLA = work done, "
        "in the foreground or the background thread; process = the whole process to the end of training, imports "
        "included.",
        "",
        "| threads | mode | rounds | waited s | lowering s | XLA s | refresh s | adam loop s | lbfgs loop s | process s | load avg (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(vals):
        vals = sorted(vals)
        return f"{statistics.median(vals):.2f} [{vals[0]:.2f}-{vals[-1]:.2f}]" if len(vals) > 1 else f"{vals[0]:.2f}"

    machines = set()
    recs_runs = {k: v for k, v in recs.items() if not k.startswith("anatomy-")}
    for tag, label in (("tdefault", "default"), ("t1", "1 (pinned)")):
        for mode in MODES:
            rs = [v for k, v in sorted(recs.items()) if k.startswith(f"{tag}-{mode}-")]
            if not rs:
                continue
            machines.add(json.dumps(rs[0].get("machine", {}).get("platform", ""), sort_keys=True))
            ch = lambda name: [sum(r["chunks"].get(name, (0.0, 0.0))) for r in rs]
            loads = [r["load_start"][0] for r in rs] + [r["load_end"][0] for r in rs]
            lines.append(f"| {label} | {mode} | {len(rs)} | {cell([r['compile_seconds'] for r in rs])} | "
                         f"{cell([r['lower_seconds'] for r in rs])} | {cell([r['xla_seconds'] for r in rs])} | "
                         f"{cell(ch('refresh'))} | {cell(ch('adam'))} | {cell(ch('lbfgs'))} | {cell([r['process_wall_seconds'] for r in rs])} | "
                         f"{min(loads):.2f}-{max(loads):.2f} |")
    if recs_runs:
        r0 = next(iter(recs_runs.values()))
        m = r0.get("machine", {})
        lines += ["", f"Machine: {m.get('platform', '?')}, {m.get('cpu_count', '?')} CPUs, jax {m.get('jax', '?')}, "
                      f"backend {m.get('backend', '?')}; finished {max(r.get('finished_at', '') for r in recs_runs.values())}."]
    lines += anatomy_table(recs)
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{STUDY}.md").write_text(text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, choices=(1,), default=None, help="1: one XLA thread pinned to core 0")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--adam-steps", type=int, default=5000)
    ap.add_argument("--lbfgs-steps", type=int, default=100)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--anatomy", action="store_true", help="compile the pieces one by one (where the time goes)")
    a = ap.parse_args()
    if a.anatomy:
        anatomy(a.repeats)
    elif not a.build_only:
        run(a.threads, a.repeats, a.adam_steps, a.lbfgs_steps)
    print(build())


if __name__ == "__main__":
    main()
