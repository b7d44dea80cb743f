"""Side by side with DSGNAR (Webb, Jerad, Cartis 2026) on its own Burgers problem
(issue 44, item 5).

Burgers, nu = 0.01, u0 = -sin(pi x), u(+-1, t) = 0 (DSGNAR: periodic in x, the same solution),
float64, one core each, started together; both errors against our pseudo-spectral reference
(``burgers_nu0.01.npz``, error 2.8e-13) on its 256 x 101 grid. Ours: ``BurgersFromData(nu=0.01)``,
the accurate preset, ``--n-pde`` + ``--n-ic`` points, 100 on each edge. DSGNAR: a clone of its
repository, run by this module under its own environment (``--peer-python``; ``--peer-src`` on
``PYTHONPATH``; that side imports nothing of cgmpinn_jax). It has no licence file: we only call its
API as its Burgers notebook does (SIREN 40 x 4, periodic, sketches 2000 x 2000) at our point
counts, until its own stop rule or ``--seconds``; ours there: the yardstick (our reference in its
schema), a headless stand-in for its plotter. Seconds: wall, compilation apart (ours: each stage's
spread evenly).

    python -m benchmarks.peer_dsgnar --peer-python PEER_VENV/bin/python --peer-src CLONE/src \
        --seconds 2400
    python -m benchmarks.peer_dsgnar --report-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import machine, runcache, tracking

STUDY, THRESHOLDS = "peer_dsgnar", (1e-4, 1e-5, 1e-6, 1e-9)
EQUAL_AT = (150, 300, 600, 1200, 2400)
REFERENCE = (
    Path(__file__).resolve().parents[1] / "cgmpinn_jax" / "data" / "burgers" / "burgers_nu0.01.npz"
)


def _dump(path: Path, doc: dict) -> None:
    path.with_suffix(".tmp").write_text(json.dumps(doc)), os.replace(path.with_suffix(".tmp"), path)


def ours(args, out: Path) -> None:
    """Our side, in its own process: writes ``out/ours.json``."""
    import cgmpinn_jax as cj
    from cgmpinn_jax.nn._nets import count_params
    from cgmpinn_jax.problems.worked import BurgersFromData

    cfg, prob = (
        cj.TrainConfig.preset("accurate"),
        BurgersFromData(nu=0.01, n_pde=args.n_pde, n_ic=args.n_ic, n_bc=100),
    )
    res = cj.train(prob, "pinn", cfg, key=args.seed, quiet=True, track_error_every=25)
    h, (a, g) = (
        res.history,
        (st.seconds for st in res.stages),
    )  # compile-free seconds of Adam and Gauss-Newton
    k, A, G = np.asarray(h.error_k, float), res.budgets["adam"], max(res.stages[1].iterations, 1)
    _dump(
        out / "ours.json",
        {  # each stage's compile-free seconds spread evenly over its steps
            "seconds": np.where(k <= A, a * k / A, a + g * (k - A) / G).tolist(),
            "rel_l2": h.error_rel_e2.tolist(),
            "done": True,
            "compile_seconds": res.compile_seconds,
            "adam_steps": A,
            "stages": res.stage_lines(),
            "config": cfg.to_dict(),
            "parameters": count_params(res.model),
        },
    )


def dsgnar(args, out: Path) -> None:
    """DSGNAR's side, under its own environment: writes ``out/dsgnar.json`` on every update."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # its own process, as its notebook does
    import pinn
    import pinn.trainer64 as trainer64
    from pinn import operators as op
    from pinn import sampling

    d = np.load(REFERENCE)
    X, T = np.meshgrid(d["x"], d["t"], indexing="ij")
    ref = out / "reference_nu0.01.npz"
    np.savez(
        ref,
        coords=np.stack([X.ravel(), T.ravel()], 1),
        solution=d["u"].reshape(-1, 1),
        channels=np.array(["u"]),
        plot_axes=np.array(["x", "t"]),
        plot_x0=d["x"],
        plot_x1=d["t"],
        plot_u=d["u"],
    )
    trace = {
        "seconds": [],
        "rel_l2": [],
        "done": False,
        "jax": jax.__version__,
        "parameters": None,
        "t0": time.perf_counter(),
    }

    class Headless(
        trainer64.Plotter
    ):  # its clock times the dispatch of a step, not the step (JAX is async):
        prime = wait = finalize = lambda self: None  # noqa: E731  # ours is the wall clock from its last compile

        def log(self, *a, **k):
            trace.update(t0=time.perf_counter()) if "Compile complete" in " ".join(
                map(str, a)
            ) else print(*a, **k)

        def update(self, hists, l2, *a, **k):
            trace.update(
                own_clock=[float(s) for s, _ in l2["l2_rel_vs_wall"]],
                n_steps=len(hists["loss"]),
                rel_l2=[float(e["u"]) for _, e in l2["l2_rel_vs_wall"]],
            )
            trace["seconds"] += [time.perf_counter() - trace["t0"]] * (
                len(trace["rel_l2"]) - len(trace["seconds"])
            )
            _dump(out / "dsgnar.json", trace)

    trainer64.Plotter = Headless

    class Burgers(pinn.Problem):
        x_min, x_max, t_max, nu, problem_name, ref_path = -1.0, 1.0, 1.0, 0.01, "Burgers", str(ref)

        def __init__(self, *, n_pde, n_ic, n_bc=0):
            self.n_pde, self.n_ic, self.n_bc = n_pde, n_ic, n_bc

        def residual_fns(self):
            def pde(model, c):
                f = lambda z: model(z)[0]  # noqa: E731
                return jnp.array(
                    [op.grad(f, c, 1) + f(c) * op.grad(f, c, 0) - self.nu * op.grad2(f, c, 0)]
                )

            return {"pde": pde, "ic": lambda model, c: jnp.array([model(c[:2])[0] - c[2]])}

        def samplers(self):
            return {
                "pde": sampling.interior(-1.0, 1.0),
                "ic": sampling.initial_line(-1.0, 1.0),
            }  # noqa: E731

        analytical_ic = staticmethod(lambda x: -jnp.sin(jnp.pi * x))

    def net(key):
        return pinn.SIREN(
            key, Burgers, hidden_dims=(40,) * 4, periodic_bc=True, n_inputs=2, n_outputs=1
        )  # noqa: E731

    cfg = pinn.RunConfig(
        dt=1.0,
        seed=args.seed,
        n_pde=args.n_pde,
        n_ic=args.n_ic,
        network=net,
        return_network=True,
        batch_size=min(1024, args.n_ic),
        cache_dir=str(out / "jax_cache"),
    )
    _, model = pinn.train64(Burgers, cfg)
    trace.update(
        done=True,
        parameters=sum(
            int(a.size) for a in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
        ),
    )
    _dump(out / "dsgnar.json", trace)


def summarise(side: str, t: dict, n_pde: int, n_ic: int, seed: int) -> dict:
    sec, err = np.asarray(t["seconds"], float), np.asarray(t["rel_l2"], float)
    reach = {
        f"{thr:.0e}": tracking.first_reach(np.arange(len(err)), sec, err, thr)[1]
        for thr in THRESHOLDS
    }
    best = {str(T): (float(err[sec <= T].min()) if np.any(sec <= T) else None) for T in EQUAL_AT}
    keep = {
        k: t[k]
        for k in (
            "adam_steps",
            "compile_seconds",
            "parameters",
            "stages",
            "config",
            "n_steps",
            "jax",
        )
        if k in t
    }
    return {
        "side": side,
        "seed": seed,
        "n_pde": n_pde,
        "n_ic": n_ic,
        "final_rel_l2": float(err[-1]) if err.size else None,
        "seconds": float(sec[-1]) if sec.size else None,
        "finished": bool(t.get("done")),
        "reach_seconds": reach,
        "best_by_seconds": best,
        **keep,
        "trace": {"seconds": sec.tolist(), "rel_l2": err.tolist()},
    }


def pair_dir(args) -> Path:
    return runcache.CACHE / STUDY / f"pair-seed{args.seed}-{args.n_pde}"


def run_pair(args) -> None:
    """Both sides at once, one core each; DSGNAR stopped at ``--seconds`` (plus its compile)."""
    (out := pair_dir(args)).mkdir(parents=True, exist_ok=True)
    common = [
        "-m",
        "benchmarks.peer_dsgnar",
        "--n-pde",
        str(args.n_pde),
        "--n-ic",
        str(args.n_ic),
        "--seed",
        str(args.seed),
    ]
    env = dict(os.environ, XLA_FLAGS=machine.ONE_THREAD_XLA_FLAGS, OMP_NUM_THREADS="1")
    t0, procs = time.time(), {}
    for side, core, py, extra in (
        ("ours", 0, sys.executable, {}),
        ("dsgnar", 1, args.peer_python, {"PYTHONPATH": args.peer_src}),
    ):
        with open(out / f"{side}.log", "w") as log:
            procs[side] = subprocess.Popen(
                ["taskset", "-c", str(core), py, *common, "--side", side, str(out)],
                env=dict(env, **extra),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
    while any(p.poll() is None for p in procs.values()):
        time.sleep(30)
        if procs["dsgnar"].poll() is None and time.time() - t0 > args.seconds + 400:
            procs["dsgnar"].terminate()
        print(
            f"  {time.time() - t0:6.0f} s: running "
            + ", ".join(s for s, p in procs.items() if p.poll() is None),
            flush=True,
        )
    collect(args, out) if not procs["ours"].returncode else sys.exit(
        f"our side failed; see {out / 'ours.log'}"
    )


def collect(args, out: Path) -> None:
    """Both sides' traces from ``out`` into the record (``--collect``: after a side was rerun
    alone)."""
    for side in ("ours", "dsgnar"):
        t = json.loads((out / f"{side}.json").read_text())
        runcache.Study(STUDY).save(
            f"{side}__seed{args.seed}__pde{args.n_pde}",
            summarise(side, t, args.n_pde, args.n_ic, args.seed),
        )


def render(runs: dict) -> str:
    f = lambda x, s="{:.2e}": "-" if x is None else s.format(x)  # noqa: E731
    lines = [
        "# Side by side with DSGNAR on its own Burgers problem",
        "",
        "Generated by `python -m benchmarks.peer_dsgnar --report-only` from `peer_dsgnar.json`. "
        "Burgers, nu = 0.01, u0 = -sin(pi x), float64, one core each (one XLA thread). Errors: "
        "relative L2 against our pseudo-spectral reference on its 256 x 101 grid. Seconds: wall, "
        "compilation apart (ours: each stage's compile-free seconds spread evenly over its steps; "
        "DSGNAR's: from the end of its dry run). Ours: the accurate preset (PINN, tanh 50 x 4, "
        "5000 Adam steps then Gauss-Newton), 100 points on each edge besides those listed. "
        "DSGNAR: its own code (a clone, its own environment) with its Burgers notebook's settings "
        "(SIREN 40 x 4, periodic in x, sketches 2000 x 2000) at the listed points.",
        "",
        "| side | seed | interior + initial points | params | to 1e-4 / 1e-5 / 1e-6 / 1e-9 (s) | "
        "best by "
        + " / ".join(f"{T} s" for T in EQUAL_AT)
        + " | end (s) | final | stop | commit |",
        "|" + "---|" * 10,
    ]
    for r in sorted(runs.values(), key=lambda r: (r["n_pde"], r["seed"], r["side"] != "ours")):
        stop = (
            r["stages"][-1]
            if r.get("stages")
            else ("its own stop rule" if r["finished"] else "stopped at the time limit")
        )
        lines.append(
            f"| {'ours' if r['side'] == 'ours' else 'DSGNAR'} | {r['seed']} | "
            f"{r['n_pde']} + {r['n_ic']} | {f(r.get('parameters'), '{}')} | "
            f"{' / '.join(f(v, '{:.0f}') for v in r['reach_seconds'].values())} | "
            f"{' / '.join(f(v) for v in r['best_by_seconds'].values())} | "
            f"{f(r['seconds'], '{:.0f}')} | {f(r['final_rel_l2'])} | {stop} | {r['commit']} |"
        )
    return (
        "\n".join(
            lines + ["", machine.machine_text("Machine: {cpu_model}, {cpu_count} cores, {system}.")]
        )
        + "\n"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-python", default=".venv-dsgnar/bin/python")
    ap.add_argument("--peer-src", default="../dsgnar/src")
    for name, default in (("--n-pde", 2048), ("--n-ic", 1024), ("--seed", 0)):
        ap.add_argument(name, type=int, default=default)
    ap.add_argument("--seconds", type=float, default=2400.0)
    ap.add_argument("--side", nargs=2, metavar=("SIDE", "DIR"), help="run one side only, into DIR")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--collect", action="store_true")
    args = ap.parse_args(argv)
    if args.side:
        return {"ours": ours, "dsgnar": dsgnar}[args.side[0]](args, Path(args.side[1])) or 0
    if not args.report_only:
        collect(args, pair_dir(args)) if args.collect else run_pair(args)
    return (
        0
        if runcache.Study(STUDY).write_report(render, echo=True)
        else print("no runs recorded yet") or 0
    )


if __name__ == "__main__":
    raise SystemExit(main())
