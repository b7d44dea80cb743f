"""PINNacle's seven problems through the library: PINN and CGMPINN at three settings, beside
PINNacle's own PINN run here and its best published method (a secondary quote).

Cells: every problem of ``cgmpinn_jax.problems.PINNACLE`` at ``faithful`` (``TrainConfig()``: our
default network and budgets at the problem's default points; PINN and CGMPINN), ``pinnacle``
(PINNacle's ``benchmark.py`` at i207M/PINNacle 6f8d69c: 5 x 100 tanh, Adam lr 1e-3 for 20000
iterations, no second stage, at its point counts `PINNACLE_POINTS`; PINN only, the like-for-like
check of our problem statements) and ``accurate`` (``TrainConfig.preset("accurate")``: float64,
Adam then Gauss-Newton, at the CPU-sized points, network and budget of `ACCURATE`; PINN and
CGMPINN). L2RE is PINNacle's: ``||U_hat - U||_2 / ||U||_2`` pooled over every field and point
(``rel_e2``), against PINNacle's reference data or the closed form; ``burgers1d_c`` also against
our pseudo-spectral reference (``l2re_spectral``). Runs are cached by ``benchmarks/runcache.py``
(record ``results/pinnacle.json``, with commit and thread setting); report ``results/pinnacle.md``;
PINNacle's best published method per problem from ``results/pinnacle_published.json`` (as a
secondary summary quotes the paper's Table 3); PINNacle's own PINN as run here, beside ours at its
setting, from ``results/peer_pinnacle.json`` (``benchmarks/peer_pinnacle.py``).

    python -m benchmarks.pinnacle --list
    python -m benchmarks.pinnacle --problems wave1d_c --presets pinnacle --seeds 0 1 2
    python -m benchmarks.pinnacle --report-only
    python -m benchmarks.pinnacle --smoke --problems wave1d_c poisson_nd --out /tmp/pinnacle-smoke

``--smoke``: tiny budgets (points / 64, a 2 x 8 network, 30 Adam steps, 3 second-stage iterations)
into ``--out`` (a temporary folder if none), never into ``benchmarks/results``. ``--adam-steps`` /
``--second-steps`` override the budgets (such runs get keys and rows of their own).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import runcache

STUDY = "pinnacle"
PUBLISHED = (
    runcache.BENCH / "results" / "pinnacle_published.json"
)  # committed, wherever the runs go
PEER = (
    runcache.BENCH / "results" / "peer_pinnacle.json"
)  # PINNacle's own PINN beside ours (benchmarks/peer_pinnacle.py)
PROBLEMS = (
    "burgers1d_c",
    "poisson2d_c",
    "ns2d_c",
    "wave1d_c",
    "heat2d_ms",
    "poisson_nd",
    "heat_nd",
)
PRESETS = {"faithful": ("pinn", "cgmpinn"), "pinnacle": ("pinn",), "accurate": ("pinn", "cgmpinn")}
# PINNacle's point counts (8192 collocation, 2048 boundary, 2048 initial; x 4 where a class calls
# training_points(mul=4)) in our problems' parameters; each class's docstring derives them
PINNACLE_POINTS = {
    "burgers1d_c": dict(n_pde=8192, n_ic=2048, n_bc=1024),
    "poisson2d_c": dict(n_pde=8192, n_outer=1256, n_holes=792),
    "ns2d_c": dict(n_pde=8192, n_lid=512, n_wall=1536),
    "wave1d_c": dict(n_pde=8192, n_ic=512, n_bc=1024),
    "heat2d_ms": dict(n_pde=32768, n_ic=8192, n_bc=8192),
    "poisson_nd": dict(n_pde=32768, n_bc=8192),
    "heat_nd": dict(n_pde=32768, n_ic=8192, n_bc=8192),
}
PINNACLE_CONFIG = dict(
    stages=("adam",), width=100, depth=5
)  # Adam alone, 20000 steps at lr 1e-3 (`_stages`)
# the accurate preset on the 2-core CPU: (problem parameters, TrainConfig overrides; second_steps:
# the Gauss-Newton stage's budget), a 4 x 40 network and the problem's Adam budget (5000);
# extrapolated from 200 Adam steps + 5 Gauss-Newton iterations on one loaded core: 10-31 minutes a
# run (ns2d_c: 30 from field_problems' cavity_accurate at the same size)
ACCURATE = {
    "burgers1d_c": (dict(n_pde=1500, n_ic=200, n_bc=100), dict(width=40, second_steps=400)),
    "poisson2d_c": (dict(n_pde=1000, n_outer=200, n_holes=200), dict(width=40, second_steps=300)),
    "ns2d_c": (dict(n_pde=1000, n_lid=150, n_wall=300), dict(width=40, second_steps=300)),
    "wave1d_c": (dict(n_pde=1000, n_ic=200, n_bc=200), dict(width=40, second_steps=300)),
    "heat2d_ms": (dict(n_pde=1500, n_ic=400, n_bc=400), dict(width=40, second_steps=300)),
    "poisson_nd": (dict(n_pde=1000, n_bc=400), dict(width=40, second_steps=400)),
    "heat_nd": (dict(n_pde=1000, n_ic=200, n_bc=200), dict(width=40, second_steps=500)),
}
# cells whose run takes more than ~45 minutes on one core (extrapolated): one seed on the CPU, the
# rest on a GPU when one is lent. pinnacle: 36 (wave1d_c) to ~800 minutes (heat_nd); faithful: 7-13,
# ns2d_c ~47.
ONE_SEED = {("ns2d_c", "faithful")} | {(p, "pinnacle") for p in PROBLEMS if p != "wave1d_c"}
SMOKE = dict(
    width=8, depth=2, adam_steps=30, second_steps=3
)  # the budgets: Adam's and every later stage's


def seeds_for(problem: str, preset: str) -> list[int]:
    return [0] if (problem, preset) in ONE_SEED else [0, 1, 2]


def deepxde_point_set(prob):
    """``prob`` with DeepXDE's point set, as PINNacle's code trains it: the PDE residual on every
    training point, the boundary and initial ones included (DeepXDE's ``train_x_all``; its
    boundary conditions take their points from that set), not on the interior points only. A
    point shared by several pieces (a wall's u and v) is added once."""
    import jax.numpy as jnp

    base = type(prob)

    def sample_points(self, key):
        batch = base.sample_points(self, key)
        seen: list = []
        for term, pieces in batch.items():
            for piece in pieces if term != "pde" else ():
                pts = piece[0] if isinstance(piece, (tuple, list)) else piece
                if not any(
                    pts is q for q in seen
                ):  # the same array (traced or not), not equal values
                    seen.append(pts)
        return {**batch, "pde": jnp.concatenate([batch["pde"], *seen], 0)}

    cls = dataclasses.dataclass(frozen=True)(
        type(base.__name__, (base,), {"sample_points": sample_points, "__module__": __name__})
    )
    return cls(**{f.name: getattr(prob, f.name) for f in dataclasses.fields(prob)})


def make_problem(problem: str, preset: str, params: dict):
    """The problem of a cell: PINNacle's setting trains on DeepXDE's point set
    (`deepxde_point_set`)."""
    import cgmpinn_jax as cj

    prob = cj.get_problem(problem, **params)
    return deepxde_point_set(prob) if preset == "pinnacle" else prob


def budgets(cfg) -> dict:
    """Adam steps, Adam's learning rate and the second stage's budget of ``cfg`` (None: no such
    stage)."""
    adam = cfg.stage("adam")
    return {
        "adam_steps": adam.steps,
        "adam_lr": adam.lr,
        "second_steps": cfg.stages[1].steps if len(cfg.stages) > 1 else None,
    }


def _stages(cfg, adam_steps=None, second_steps=None):
    """``cfg`` with Adam's budget ``adam_steps`` and every later stage's ``second_steps`` (None
    keeps one)."""
    return cfg.with_steps(*(adam_steps if st.name == "adam" else second_steps for st in cfg.stages))


def _options(opts: dict) -> dict:
    """TrainConfig options of a cell: stages=("adam",) is PINNACLE's Adam alone (20000 steps at lr
    1e-3)."""
    import cgmpinn_jax as cj

    opts = {k: v for k, v in opts.items() if k not in ("adam_steps", "second_steps")}
    return (
        {**opts, "stages": (cj.stages.Adam(steps=20000, lr=1e-3),)}
        if opts.get("stages") == ("adam",)
        else opts
    )


def setup(
    problem: str, preset: str, *, smoke=False, adam_steps=None, second_steps=None, time_limit=None
):
    """(problem parameters, TrainConfig) of a cell. ``time_limit``: the run's wall-clock limit in
    seconds (``TrainConfig.time_limit``; not part of the run's key: the record says whether it was
    reached)."""
    import cgmpinn_jax as cj

    params, name, opts = {}, preset, {}
    if preset == "pinnacle":
        params, name, opts = dict(PINNACLE_POINTS[problem]), "faithful", PINNACLE_CONFIG
    elif preset == "accurate":
        params, opts = dict(ACCURATE[problem][0]), ACCURATE[problem][1]
    cfg = _stages(
        cj.TrainConfig.preset(name, **_options(opts)), second_steps=opts.get("second_steps")
    )
    if smoke:
        base = cj.get_problem(problem, **params)
        params = {
            f.name: max(8, getattr(base, f.name) // 64)
            for f in dataclasses.fields(base)
            if f.name.startswith("n_")
        }
        cfg = _stages(
            cfg.replace(**_options(SMOKE)), SMOKE["adam_steps"], SMOKE["second_steps"]
        )  # Adam's lr stays
    cfg = _stages(cfg, adam_steps=adam_steps, second_steps=second_steps)
    if time_limit is not None:
        cfg = cfg.replace(time_limit=time_limit)
    if problem == "burgers1d_c":
        params["reference_source"] = "pinnacle"  # PINNacle's L2RE; l2re_spectral is measured too
    return params, cfg


def variant(smoke=False, adam_steps=None, second_steps=None, time_limit=None) -> str:
    parts = (
        (["smoke"] if smoke else [])
        + ([f"adam{adam_steps}"] if adam_steps is not None else [])
        + ([f"second{second_steps}"] if second_steps is not None else [])
    )
    return ",".join(parts)


def run_key(problem, preset, method, seed, var="") -> str:
    return f"{problem}__{preset}__{method}__seed{seed}" + "".join(
        f"__{v}" for v in var.split(",") if v
    )


def train_one(problem: str, preset: str, method: str, seed: int, **kw) -> dict:
    import equinox as eqx
    import jax

    import cgmpinn_jax as cj
    from cgmpinn_jax.metrics import compare

    params, cfg = setup(problem, preset, **kw)
    prob = make_problem(problem, preset, params)
    t0 = time.perf_counter()
    res = cj.train(prob, method, cfg, key=seed, quiet=True)
    wall = time.perf_counter() - t0
    m = res.metrics.as_dict()
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(eqx.filter(res.model, eqx.is_array)))
    out = {
        "problem": problem,
        "preset": preset,
        "method": method,
        "seed": seed,
        "variant": variant(**kw),
        "l2re": m["rel_e2"],
        "against": m.get("against", "exact"),
        "metrics": m,
        "params": params,
        "network": {
            "width": cfg.width or prob.defaults.width,
            "depth": cfg.depth or prob.defaults.depth,
            "parameters": int(n_params),
        },
        "budgets": budgets(cfg),
        "config": cfg.to_dict(),
        "precision": cfg.precision,
        "second_stage": cfg.stage_names[1] if len(cfg.stages) > 1 else None,
        "stages": [
            {
                "name": s.name,
                "label": s.label,
                "status": s.status.name,
                "iterations": s.iterations,
                "budget": s.budget,
                "evaluations": s.evaluations,
                "seconds": s.seconds,
            }
            for s in res.stages
        ],
        "compile_seconds": res.compile_seconds,
        "run_seconds": res.run_seconds,
        "wall_seconds": wall,
        "time_limit": cfg.time_limit,
        "time_limited": bool(res.time_limited),
    }
    if problem == "burgers1d_c":
        truth = dataclasses.replace(prob, reference_source="spectral").truth()
        spec = compare(
            res.predict(truth.points), truth.values, fields=truth.fields, against=truth.against
        )
        out["l2re_spectral"], out["against_spectral"] = spec.rel_e2, truth.against
    return out


def load_published(path: Path = PUBLISHED) -> dict:
    return (
        json.loads(path.read_text()) if path.exists() else {"status": "not found", "problems": {}}
    )


def _cell(vals) -> str:
    a = np.asarray([v for v in vals if v is not None], float)
    spread = f" [{a.min():.1e} - {a.max():.1e}]" if a.size > 1 else ""
    return "-" if a.size == 0 else f"{np.median(a):.2e}{spread} (n={a.size})"


def _pub(pub: dict, problem: str) -> str:
    row = pub.get("problems", {}).get(problem, {})
    return (
        "not found" if row.get("best") is None else f"{row['best']:.2e} ({row.get('best_method')})"
    )


def _ratio_text(ours, ref, fmt: str) -> str:
    return "n/a" if ref is None else "-" if not ours else fmt.format(float(np.median(ours)) / ref)


def _stages_text(runs) -> str:
    first = runs[0]["stages"]
    return "; ".join(
        f"{s['label']} {np.median([r['stages'][i]['iterations'] for r in runs]):.0f}/{s['budget']} "
        f"({', '.join(sorted({r['stages'][i]['status'] for r in runs}))})"
        for i, s in enumerate(first)
    )


def load_peer(path: Path = PEER) -> dict:
    """Per problem, the side-by-side run of PINNacle's own PINN and ours at its setting with the
    most iterations, from ``results/peer_pinnacle.json``: a run with ours as PINNacle's (Glorot
    init, DeepXDE's point set) where there is one, else the closest run there is, marked
    ``"unlike"`` with what differed."""
    runs = json.loads(path.read_text()).get("runs", {}) if path.exists() else {}
    best: dict = {}
    for r in runs.values():
        unlike = [
            w
            for w, ok in (
                ("our interior points", r.get("ours_point_set", "interior") == "deepxde"),
                ("PyTorch-default init", r.get("ours_init", "torch") == "glorot"),
            )
            if not ok
        ]
        have = best.get(r["problem"])
        rank = (-len(unlike), r["iters"])
        if have is None or rank >= (-len(have["unlike"]), have["iters"]):
            best[r["problem"]] = {**r, "unlike": unlike}
    return best


def render(recs: dict, pub: dict | None = None, peer: dict | None = None) -> str:
    pub = load_published() if pub is None else pub
    peer = load_peer() if peer is None else peer
    by: dict = {}
    for r in recs.values():
        by.setdefault((r["problem"], r["preset"], r["method"], r.get("variant", "")), []).append(r)
        by[(r["problem"], r["preset"], r["method"], r.get("variant", ""))].sort(
            key=lambda q: q["seed"]
        )
    errs = lambda p, s, m, v="": [r["l2re"] for r in by.get((p, s, m, v), [])]  # noqa: E731
    label = pub.get("label", "PINNacle's published table")
    lines = [
        "# PINNacle's problems: PINN and CGMPINN beside PINNacle's own PINN and its best "
        "published method",
        "",
        "Written by `python -m benchmarks.pinnacle` from its record "
        "`benchmarks/results/pinnacle.json` and the side-by-side record "
        "`benchmarks/results/peer_pinnacle.json` (`python -m benchmarks.peer_pinnacle`). L2RE = "
        "||U_hat - U||_2 / ||U||_2 pooled over every field and point (PINNacle's definition), "
        "against PINNacle's reference data (burgers1d_c: `ref/burgers1d.dat`; poisson2d_c, "
        "ns2d_c: its COMSOL data) or the closed form; median [min - max] over the seeds. "
        "`PINNacle PINN, run here`: PINNacle's own code (DeepXDE on PyTorch, 5 x 100 tanh, Glorot "
        "normal, Adam lr 1e-3, its point counts, loss weights 1) on this machine, beside ours at "
        "the same setting and budget (`our PINN there`; iterations in brackets, PINNacle's own "
        "budget is 20000). `faithful` = `TrainConfig()` at our default points; `accurate` = "
        '`TrainConfig.preset("accurate")` (float64, Gauss-Newton) at the CPU-sized points and '
        "network of `benchmarks/pinnacle.py` (`ACCURATE`).",
        "",
        f"PINNacle's best method: {label}"
        + (" ({citation}, {table}).".format(**pub["source"]) if pub.get("source") else ".")
        + " Not checked against the paper.",
        "",
        "| problem | PINNacle best (method), secondary quote | PINNacle PINN, run here | "
        "our PINN there | ours / PINNacle | faithful PINN | faithful CGMPINN | accurate PINN | "
        "accurate CGMPINN | accurate (better median) / PINNacle best |",
        "|" + "---|" * 10,
    ]
    for p in PROBLEMS:
        best = pub.get("problems", {}).get(p, {}).get("best")
        acc = min(
            (
                [float(np.median(e))]
                for e in (errs(p, "accurate", "pinn"), errs(p, "accurate", "cgmpinn"))
                if e
            ),
            default=[],
        )  # the better method's median
        q = peer.get(p)
        unlike = f" ({', '.join(q['unlike'])})" if q and q.get("unlike") else ""
        side = (
            (
                f"{q['peer_l2re']:.2e} ({q['iters']}) | {q['ours_l2re']:.2e} "
                f"({q['iters']}{unlike}) | {q['ratio_ours_peer']:.2f}"
            )
            if q
            else "- | - | -"
        )
        lines.append(
            f"| {p} | {_pub(pub, p)} | {side} | {_cell(errs(p, 'faithful', 'pinn'))} "
            f"| {_cell(errs(p, 'faithful', 'cgmpinn'))} | {_cell(errs(p, 'accurate', 'pinn'))} | "
            f"{_cell(errs(p, 'accurate', 'cgmpinn'))} | {_ratio_text(acc, best, '{:.1e}')} |"
        )
    lines += [
        "",
        "## Runs: points, network, time and iterations",
        "",
        "Iterations per stage: median over the seeds / budget (stop statuses). Seconds: the whole "
        "`cj.train` call, median. burgers1d_c also against our pseudo-spectral reference "
        "(`vs spectral`).",
        "",
        "| problem | setting | method | seeds | L2RE | vs spectral | points | "
        "network (parameters) | stages | wall s | compile s | threads | commit |",
        "|" + "---|" * 13,
    ]
    order = {p: i for i, p in enumerate(PROBLEMS)}

    def rank(kv):
        return (
            order.get(kv[0][0], 99),
            list(PRESETS).index(kv[0][1]) if kv[0][1] in PRESETS else 9,  # noqa
            kv[0][3],
            kv[0][2],
        )

    for (p, s, m, v), runs in sorted(by.items(), key=rank):
        r0, net = runs[0], runs[0]["network"]
        pts = (
            ", ".join(f"{k}={x}" for k, x in r0["params"].items() if k.startswith("n_"))
            or "problem's default"
        )
        lines.append(
            f"| {p} | {s}{f' ({v})' if v else ''} | {m} | "
            f"{','.join(str(r['seed']) for r in runs)} | {_cell([r['l2re'] for r in runs])} | "
            f"{_cell([r.get('l2re_spectral') for r in runs])} | {pts} | "
            f"{net['depth']} x {net['width']} ({net['parameters']:,}) | {_stages_text(runs)} | "
            f"{np.median([r['wall_seconds'] for r in runs]):.0f} | "
            f"{np.median([r['compile_seconds'] for r in runs]):.0f} | "
            f"{', '.join(sorted({r.get('threads', '?') for r in runs}))} | "
            f"{', '.join(sorted({r.get('commit', '?') for r in runs}))} |"
        )
    paired = []
    for (p, s, m, v), runs in sorted(by.items(), key=rank):
        pinn = {r["seed"]: r["l2re"] for r in by.get((p, s, "pinn", v), [])}
        pairs = [
            (r["seed"], r["l2re"], pinn[r["seed"]])
            for r in runs
            if r["seed"] in pinn and m == "cgmpinn"
        ]
        if pairs:
            ratio = np.median([c / q for _, c, q in pairs])
            paired.append(
                f"- {p}, {s}{f' ({v})' if v else ''}: CGMPINN lower on "
                f"{sum(c < q for _, c, q in pairs)} of {len(pairs)} seeds; median ratio CGMPINN / "
                f"PINN {ratio:.2f} ("
                + ", ".join(f"seed {sd}: {c:.2e} vs {q:.2e}" for sd, c, q in pairs)
                + ")."
            )
    lines += ["", "## CGMPINN against PINN, paired by seed", ""] + (
        paired or ["(no seed has both methods yet)"]
    )
    machines = sorted(
        {
            f"{r['machine'].get('processor') or r['machine'].get('platform')}, "
            f"{r['machine'].get('cpu_count')} cores, {r['machine'].get('backend')}"
            for r in recs.values()
            if isinstance(r.get("machine"), dict)
        }
    )
    lines += ["", "Machine(s): " + ("; ".join(machines) or "-") + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument(
        "--methods", nargs="+", default=["pinn", "cgmpinn"], choices=["pinn", "cgmpinn"]
    )
    ap.add_argument(
        "--seeds", nargs="+", type=int, default=None, help="default: seeds_for(problem, preset)"
    )
    ap.add_argument("--adam-steps", type=int, default=None)
    ap.add_argument(
        "--second-steps",
        type=int,
        default=None,
        help="second-stage iterations (Gauss-Newton, L-BFGS)",
    )
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="each run's wall-clock limit in seconds (TrainConfig.time_limit: the best point so "
        "far is kept; the record says when it was reached)",
    )
    ap.add_argument(
        "--smoke", action="store_true", help="tiny budgets, written to --out (never to results/)"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder of the record, cache and report (default: "
        "benchmarks/results and benchmarks/cache; with --smoke a temporary folder)",
    )
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = (
        Path(tempfile.mkdtemp(prefix="pinnacle-smoke-"))
        if args.smoke and args.out is None
        else args.out
    )
    study = (
        runcache.Study(STUDY)
        if out is None
        else runcache.Study(STUDY, results_dir=out, cache_dir=out / "cache")
    )
    kw = dict(
        smoke=args.smoke,
        adam_steps=args.adam_steps,
        second_steps=args.second_steps,
        time_limit=args.time_limit,
    )
    if not args.report_only:
        done = study.load()
        for p in args.problems:
            for s in args.presets:
                for m in (m for m in PRESETS[s] if m in args.methods):
                    for seed in args.seeds if args.seeds is not None else seeds_for(p, s):
                        key = run_key(p, s, m, seed, variant(**kw))
                        if args.list:
                            print(f"{key}: {'done' if key in done else 'missing'}")
                            continue
                        r = study.run(
                            key, lambda p=p, s=s, m=m, seed=seed: train_one(p, s, m, seed, **kw)
                        )
                        print(
                            f"{key}: L2RE {r['l2re']:.3e} ({r['wall_seconds']:.0f} s)", flush=True
                        )
    if not args.list:
        if study.write_report(render) is not None:
            print(f"wrote {study.record_path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
