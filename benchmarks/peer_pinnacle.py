"""PINNacle's own PINN (DeepXDE on PyTorch) beside ours at its setting, on its seven problems.

Each problem: two processes started together, one core each (``taskset``), one thread each:
PINNacle's code from a clone of i207M/PINNacle (``--peer-src``) under its own environment
(``--peer-python``: PyTorch on the CPU, its bundled DeepXDE; that side imports nothing of
cgmpinn_jax), and ours (``benchmarks.pinnacle.setup(problem, "pinnacle")``: 5 x 100 tanh, Adam lr
1e-3, PINNacle's point counts, loss weights 1, float32, Glorot-normal weights and zero biases as
PINNacle's, where our PINN's default is PyTorch's init: ``--init torch`` runs that instead; the PDE
residual on DeepXDE's point set, the boundary and initial points included,
``benchmarks.pinnacle.deepxde_point_set``: ``--points interior`` leaves them out). The peer side is
built as PINNacle's ``benchmark.py --method adam`` builds it (its PDE class, ``dde.nn.FNN`` tanh
with Glorot normal, ``torch.optim.Adam``, loss weights 1), trained by its ``Model.train`` with its
loss display every ``--iters`` steps (only at the start and the end, as logging is not training),
and scored as its ``TesterCallback`` scores: pooled L2RE
``sqrt(mean((U_hat - U)^2)) / sqrt(mean(U^2))`` on its own test points (its reference data, or
``ref_sol`` on ``uniform_points``). Ours is scored on our reference points (the same data, or the
closed form on our test grid). Both record the error every ``--track-every`` iterations. Seconds:
training wall time with the error evaluations (and our compilation) taken out; ours spreads the Adam
stage's compile-free seconds evenly over its steps.

    python -m benchmarks.peer_pinnacle --peer-python PEER_VENV/bin/python --peer-src CLONE \
        --iters 2000
    python -m benchmarks.peer_pinnacle --report-only
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

STUDY = "peer_pinnacle"
# our registry name -> PINNacle's module and class (its benchmark.py's pde_list)
CLASSES = {
    "burgers1d_c": ("burgers", "Burgers1D"),
    "poisson2d_c": ("poisson", "Poisson2D_Classic"),
    "ns2d_c": ("ns", "NS2D_LidDriven"),
    "wave1d_c": ("wave", "Wave1D"),
    "heat2d_ms": ("heat", "Heat2D_Multiscale"),
    "poisson_nd": ("poisson", "PoissonND"),
    "heat_nd": ("heat", "HeatND"),
}


def _dump(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def peer(args, out: Path) -> None:
    """PINNacle's side, run in its clone under its environment: writes ``out/peer.json``."""
    os.environ["DDEBACKEND"] = "pytorch"
    import importlib

    import torch

    torch.set_num_threads(1)
    import deepxde as dde

    dde.config.set_random_seed(args.seed)
    pde = getattr(
        importlib.import_module(f"src.pde.{CLASSES[args.problem][0]}"), CLASSES[args.problem][1]
    )()
    net = dde.nn.FNN(
        [pde.input_dim] + [100] * 5 + [pde.output_dim], "tanh", "Glorot normal"
    ).float()
    model = pde.create_model(net)
    model.compile(torch.optim.Adam(net.parameters(), args.lr), loss_weights=np.ones(pde.num_loss))
    if (
        pde.ref_sol is not None
    ):  # as its TesterCallback: ref_sol on uniform points, else the reference data
        x = model.data.geom.uniform_points(2500 if pde.input_dim == 2 else 20000, boundary=False)
        y = pde.ref_sol(x)
    else:
        keep = ~np.isnan(pde.ref_data).any(axis=1)
        x, y = pde.ref_data[keep, : pde.input_dim], pde.ref_data[keep, pde.input_dim :]
    trace = {
        "k": [],
        "seconds": [],
        "rel_l2": [],
        "done": False,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "points": {
            "domain": pde.num_domain_points,
            "boundary": pde.num_boundary_points,
            "initial": getattr(pde, "num_initial_points", None),
        },
        "test_points": int(x.shape[0]),
        "parameters": sum(p.numel() for p in net.parameters()),
    }

    class Track(dde.callbacks.Callback):
        def on_train_begin(self):
            self.step, self.spent, self.t0 = 0, 0.0, time.perf_counter()
            self.record()

        def record(self):
            t = time.perf_counter()
            with torch.no_grad():
                err = float(np.sqrt(np.mean((model.predict(x) - y) ** 2)) / np.sqrt(np.mean(y**2)))
            trace["k"].append(self.step), trace["rel_l2"].append(err)
            trace["seconds"].append(t - self.t0 - self.spent)
            self.spent += time.perf_counter() - t
            _dump(out / "peer.json", trace)

        def on_epoch_end(self):
            self.step += 1
            if self.step % args.track_every == 0 or self.step == args.iters:
                self.record()

    model.train(iterations=args.iters, display_every=args.iters, callbacks=[Track()])
    trace["done"] = True
    _dump(out / "peer.json", trace)


def ours(args, out: Path) -> None:
    """Our side: writes ``out/ours.json``."""
    import cgmpinn_jax as cj
    from benchmarks import pinnacle
    from cgmpinn_jax.nn._nets import count_params

    from cgmpinn_jax.methods import Method, MethodSettings

    params, cfg = pinnacle.setup(args.problem, "pinnacle", adam_steps=args.iters)
    prob = (
        pinnacle.make_problem(args.problem, "pinnacle", params)
        if args.points == "deepxde"
        else cj.get_problem(args.problem, **params)
    )
    init = {"glorot": "xavier", "torch": "torch"}[args.init]
    method = Method("pinn", settings=lambda problem: MethodSettings(init=init), label="PINN")
    t0 = time.perf_counter()
    res = cj.train(prob, method, cfg, key=args.seed, quiet=True, track_error_every=args.track_every)
    wall = time.perf_counter() - t0
    h, a = res.history, res.stages[0].seconds
    k = np.asarray(h.error_k, float)
    _dump(
        out / "ours.json",
        {
            "k": k.tolist(),
            "seconds": (a * k / max(res.budgets["adam"], 1)).tolist(),
            "rel_l2": np.asarray(h.error_rel_e2, float).tolist(),
            "done": True,
            "final": res.metrics.rel_e2,
            "compile_seconds": res.compile_seconds,
            "adam_seconds": a,
            "wall_seconds": wall,
            "adam_steps": res.budgets["adam"],
            "params": {k: v for k, v in params.items()},
            "parameters": count_params(res.model),
            "config": cfg.to_dict(),
        },
    )


def _reach(tr: dict, level: float):
    """(iteration, seconds) at which a trace first reaches ``level``, else (None, None)."""
    for k, s, e in zip(tr["k"], tr["seconds"], tr["rel_l2"]):
        if e <= level:
            return k, s
    return None, None


def summarize(problem: str, pe: dict, us: dict, iters: int) -> dict:
    n = lambda tr: max(tr["k"][-1], 1)  # noqa: E731
    pe_it, us_it = pe["seconds"][-1] / n(pe), us["seconds"][-1] / n(us)
    level = max(pe["rel_l2"][-1], us["rel_l2"][-1])  # the error both reached by the end
    (pk, ps), (uk, usec) = _reach(pe, level), _reach(us, level)
    return {
        "problem": problem,
        "iters": iters,
        "peer_l2re": pe["rel_l2"][-1],
        "ours_l2re": us["rel_l2"][-1],
        "ratio_ours_peer": us["rel_l2"][-1] / pe["rel_l2"][-1],
        "peer_s_per_iter": pe_it,
        "ours_s_per_iter": us_it,
        "speed_ratio": us_it / pe_it,
        "common_error": level,
        "peer_reach": [pk, ps],
        "ours_reach": [uk, usec],
        "time_ratio_at_common": (usec / ps) if ps else None,
        "peer_done": pe["done"],
        "peer_iterations_run": pe["k"][-1],
        "ours_compile_seconds": us["compile_seconds"],
        "peer_torch": pe.get("torch"),
        "peer_test_points": pe.get("test_points"),
        "peer_points": pe.get("points"),
        "ours_points": us.get("params"),
        "parameters": [pe.get("parameters"), us.get("parameters")],
        "trace_peer": {k: pe[k] for k in ("k", "seconds", "rel_l2")},
        "trace_ours": {k: us[k] for k in ("k", "seconds", "rel_l2")},
    }


def side_by_side(args, problem: str, out: Path) -> dict:
    """Both sides at once, one core each; the summary of the pair."""
    from benchmarks import machine

    out.mkdir(parents=True, exist_ok=True)
    common = [
        "--problem",
        problem,
        "--iters",
        str(args.iters),
        "--seed",
        str(args.seed),
        "--track-every",
        str(args.track_every),
        "--out",
        str(out),
        "--init",
        args.init,
        "--points",
        args.points,
    ]
    here = Path(__file__).resolve().parents[1]
    env_ours = dict(os.environ, XLA_FLAGS=machine.ONE_THREAD_XLA_FLAGS, PYTHONPATH=str(here))
    env_peer = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    env_peer.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(args.peer_src))
    cores = ["taskset", "-c"] if not args.no_pin else None
    procs = []
    for side, py, env, cwd, core in (
        ("peer", args.peer_python, env_peer, args.peer_src, "0"),
        ("ours", sys.executable, env_ours, here, "1"),
    ):
        cmd = (
            ([*cores, core] if cores else [])
            + [str(py), str(Path(__file__).resolve()), "--side", side]
            + common
        )
        log = open(out / f"{side}.log", "w")
        procs.append(
            (side, subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT))
        )
    for side, p in procs:
        if p.wait() != 0:
            raise RuntimeError(
                f"{problem}: the {side} side failed (rc {p.returncode}); see "
                f"{out / (side + '.log')}"
            )
    pe, us = (json.loads((out / f"{s}.json").read_text()) for s in ("peer", "ours"))
    return {
        **summarize(problem, pe, us, args.iters),
        "ours_init": args.init,
        "ours_point_set": args.points,
    }


def _compact(full: dict) -> dict:
    return {k: v for k, v in full.items() if not k.startswith("trace_")}


def render(recs: dict) -> str:
    rows = sorted(
        recs.values(),
        key=lambda r: (list(CLASSES).index(r["problem"]), r["iters"], r.get("commit", "")),
    )
    lines = [
        "# PINNacle's PINN (DeepXDE on PyTorch) beside ours at its setting",
        "",
        "Written by `python -m benchmarks.peer_pinnacle` from its record "
        "`benchmarks/results/peer_pinnacle.json`. Per problem, PINNacle's own code (a clone of "
        "i207M/PINNacle, its bundled DeepXDE on PyTorch, CPU) and ours "
        '(`TrainConfig.preset("faithful")` with 5 x 100 tanh and Adam lr 1e-3, no second stage, '
        "float32) at PINNacle's point counts and loss weights 1, seed 0 on both sides (not the "
        "same initial weights or points), started together, one core and one thread each. L2RE "
        "pooled over every field and point, each side on its own test points (the same reference "
        "data; closed-form problems on each side's own grid). `our PDE points`: `deepxde` = the "
        "PDE residual on DeepXDE's point set, the boundary and initial points included, as "
        "PINNacle's code trains; `interior` = our problems' interior points only. Seconds per "
        "iteration: training wall time, error evaluations and our compilation taken out. `common "
        "error`: the larger of the two final errors, reached by both; `time to it`: ours / "
        "PINNacle's seconds to first reach it.",
        "",
        "| problem | iterations | our init | our PDE points | PINNacle PINN | ours | "
        "ours / PINNacle | s/iter PINNacle | s/iter ours | speed ratio (ours / PINNacle) | "
        "common error | time to it, ours / PINNacle | torch | commit |",
        "|" + "---|" * 14,
    ]
    for r in rows:
        tr = r.get("time_ratio_at_common")
        lines.append(
            f"| {r['problem']} | {r['iters']} | {r.get('ours_init', 'torch')} | "
            f"{r.get('ours_point_set', 'interior')} | {r['peer_l2re']:.3e} | "
            f"{r['ours_l2re']:.3e} | {r['ratio_ours_peer']:.2f} | {r['peer_s_per_iter']:.4f} | "
            f"{r['ours_s_per_iter']:.4f} | {r['speed_ratio']:.2f} | {r['common_error']:.2e} | "
            f"{'-' if tr is None else f'{tr:.2f}'} | {r.get('peer_torch')} | "
            f"{r.get('commit', '?')} |"
        )
    machines = sorted(
        {
            f"{r['machine'].get('processor') or r['machine'].get('platform')}, "
            f"{r['machine'].get('cpu_count')} cores"
            for r in rows
            if isinstance(r.get("machine"), dict)
        }
    )
    return "\n".join(lines + ["", "Machine: " + ("; ".join(machines) or "-") + "."]) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(CLASSES), choices=list(CLASSES))
    ap.add_argument("--problem", choices=list(CLASSES), help=argparse.SUPPRESS)
    ap.add_argument("--side", choices=["peer", "ours"], help=argparse.SUPPRESS)
    ap.add_argument(
        "--iters", type=int, default=20000, help="Adam iterations on both sides (PINNacle's: 20000)"
    )
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--track-every", type=int, default=500)
    ap.add_argument(
        "--init",
        choices=["glorot", "torch"],
        default="glorot",
        help="our network's init: PINNacle's Glorot normal (default) "
        "or our PINN's default, PyTorch's",
    )
    ap.add_argument(
        "--points",
        choices=["deepxde", "interior"],
        default="deepxde",
        help="our PDE points: DeepXDE's set, the boundary and initial points included, as "
        "PINNacle's code trains (default), or our problems' interior points only",
    )
    ap.add_argument(
        "--peer-python", type=Path, help="python of PINNacle's environment (PyTorch, CPU)"
    )
    ap.add_argument("--peer-src", type=Path, help="a clone of i207M/PINNacle")
    ap.add_argument(
        "--no-pin", action="store_true", help="no taskset (one thread each all the same)"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder of the record, report and work files (default: "
        "benchmarks/results and benchmarks/cache/peer_pinnacle)",
    )
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.side:
        return (peer if args.side == "peer" else ours)(args, args.out) or 0
    from benchmarks import runcache  # not on the peer side, which has only its own environment

    study = (
        runcache.Study(STUDY)
        if args.out is None
        else runcache.Study(STUDY, results_dir=args.out, cache_dir=args.out / "cache")
    )
    if not args.report_only:
        if args.peer_python is None or args.peer_src is None:
            ap.error("--peer-python and --peer-src are needed to run (or give --report-only)")
        for p in args.problems:
            var = ("" if args.init == "glorot" else f"__init_{args.init}") + (
                "" if args.points == "deepxde" else f"__points_{args.points}"
            )
            work = (
                (args.out or runcache.CACHE / STUDY)
                / "work"
                / f"{p}_{args.iters}_seed{args.seed}{var}"
            )
            key = f"{p}__iters{args.iters}__seed{args.seed}{var}"
            r = study.run(key, lambda p=p, work=work: side_by_side(args, p, work), compact=_compact)
            print(
                f"{p}: PINNacle {r['peer_l2re']:.3e} ({r['peer_s_per_iter']:.4f} s/it), ours "
                f"{r['ours_l2re']:.3e} ({r['ours_s_per_iter']:.4f} s/it)",
                flush=True,
            )
    study.write_report(render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
