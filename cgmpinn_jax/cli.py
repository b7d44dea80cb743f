"""The ``cgmpinn-jax`` command.

    cgmpinn-jax run [PROBLEM] [--method cgmpinn] [--adam-steps N] [--lbfgs-steps N] [--seed S]
                    [--x64] [--lbfgs-backend jaxopt|optax] [--relobralo on|off|adam]
                    [--relobralo-lbfgs iteration|refresh]
                    [--out DIR] [--no-plots] [--quiet]
    cgmpinn-jax list

``run`` defaults to the paper's headline: 1D Poisson, CGMPINN, 5000 Adam + 10000 L-BFGS
steps, float32. It prints e_loss, e2, relative e2, e_inf and seconds beside the paper's
numbers and writes metrics.json, the model and PNGs into ``--out``
(default ``runs/<problem>-<method>-<time>``). ``--adam-steps 15000 --lbfgs-steps 0`` and
the reverse give the paper's optimizer study.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources
from pathlib import Path

PAPER_METHOD_NAMES = {
    "cgmpinn": "CGMPINN",
    "pinn": "PINN",
    "lbpinn": "lbPINN",
    "gpinn": "gPINN",
    "lnn_pinn": "LNN-PINN",
    "star_pinn": "STAR-PINN",
    "gmmpinn": "GMMPINN",
    "clpinn": "CLPINN",
}


def paper_tables() -> dict:
    """The paper's reported numbers (a copy of shared/spec/paper_tables.json)."""
    return json.loads(resources.files("cgmpinn_jax").joinpath("data/paper_tables.json").read_text())


def paper_row(problem: str, method: str, adam_steps: int, lbfgs_steps: int) -> dict | None:
    """The paper's numbers for this run, if it reports them (method, optimizer or ablation tables)."""
    tables = paper_tables()
    label = PAPER_METHOD_NAMES.get(method, method)
    if adam_steps and lbfgs_steps:
        row = tables.get("methods", {}).get(problem, {}).get(label)
        if row is None:
            row = tables.get("ablation", {}).get(problem, {}).get(label)
        return row
    if method == "cgmpinn":
        opt = "Adam" if lbfgs_steps == 0 else "L-BFGS"
        return tables.get("optimizers", {}).get(problem, {}).get(opt)
    return None


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.3g}" if abs(v) >= 100 else f"{v:.3e}"


def _table(result, paper: dict | None) -> str:
    s = result.summary()
    ours = {
        "e_loss": s["e_loss"],
        "e2 (RMS)": s["e2"],
        "relative e2": s["rel_e2"],
        "e_inf": s["e_inf"],
        "seconds": s["run_seconds"] + s["compile_seconds"],
    }
    keys = {"e_loss": "e_loss", "e2 (RMS)": "e2_rms", "relative e2": "rel_e2", "e_inf": "e_inf", "seconds": "cpu_s"}
    lines = [f"{'metric':<14}{'cgmpinn-jax':>14}{'paper':>14}"]
    for name, v in ours.items():
        pv = paper.get(keys[name]) if paper else None
        lines.append(f"{name:<14}{_fmt(v):>14}{_fmt(pv):>14}")
    lines.append(
        f"(seconds: ours = compile {s['compile_seconds']:.1f} s + run {s['run_seconds']:.1f} s on this machine; "
        "paper = one PyTorch CPU run, hardware not stated)"
    )
    lines.append(
        f"stages: Adam {s['adam_steps']} steps -> {s['adam_status']}, L-BFGS {s['lbfgs_steps']} iterations -> "
        f"{s['lbfgs_status']} ({s['evals_per_lbfgs_iteration']:.2f} loss+gradient evaluations per iteration); "
        f"ReLoBRaLo: {s['relobralo']}"
    )
    return "\n".join(lines)


def _cmd_list(_args) -> int:
    from .methods import METHODS
    from .problems import PROBLEMS

    print("problems:")
    for name, cls in PROBLEMS.items():
        d = cls.defaults
        print(f"  {name:<22} coords={','.join(cls.coords):<5} Adam {d.adam_steps} + L-BFGS {d.lbfgs_steps}, width {d.width}")
    print("methods:")
    for name, m in METHODS.items():
        print(f"  {name:<22} network={m.network}, weighting={m.weighting}, relobralo={m.relobralo}")
    return 0


def _cmd_run(args) -> int:
    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    from . import io
    from .methods import get_method
    from .problems import get_problem
    from .train import TrainConfig, train

    try:
        problem = get_problem(args.problem)
        method = get_method(args.method)
        relo = {"on": "both", "both": "both", "off": "none", "none": "none", "adam": "adam", None: None}[args.relobralo]
        config = TrainConfig(
            adam_steps=args.adam_steps,
            lbfgs_steps=args.lbfgs_steps,
            lbfgs_backend=args.lbfgs_backend,
            relobralo=relo,
            relobralo_lbfgs_apply=args.relobralo_lbfgs,
            **({"lbfgs_lr": args.lbfgs_lr} if args.lbfgs_lr is not None else {}),
        )
    except ValueError as e:
        print(f"cgmpinn-jax: error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("runs") / f"{problem.name}-{method.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    print(f"cgmpinn-jax run: {problem.name} / {method.name}, seed {args.seed}, "
          f"{'float64' if args.x64 else 'float32'}, backend {jax.default_backend()}; output -> {out}")
    result = train(problem, method, config, key=args.seed, quiet=args.quiet)
    io.save_result(result, out)
    (out / "history.json").write_text(json.dumps(io.to_jsonable(result.history.to_dict())))
    if not args.no_plots:
        try:
            from .plots import plot_result

            plot_result(result, out)
        except ImportError as e:
            print(f"(no plots: {e})", file=sys.stderr)
    paper = paper_row(problem.name, method.name, result.adam_steps, result.lbfgs_steps)
    print()
    print(f"{problem.name} / {method.name} (seed {args.seed}):")
    print(_table(result, paper))
    print(f"wrote {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cgmpinn-jax", description="CGMPINN in JAX: train and compare PINNs")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train one method on one problem (default: the paper's 1D Poisson CGMPINN run)")
    r.add_argument("problem", nargs="?", default="poisson1d")
    r.add_argument("--method", default="cgmpinn")
    r.add_argument("--adam-steps", type=int, default=None, help="default: the problem's (5000; Fisher-KPP 8000)")
    r.add_argument("--lbfgs-steps", type=int, default=None, help="default: the problem's (10000; Fisher-KPP 12000)")
    r.add_argument("--lbfgs-lr", type=float, default=None, help="L-BFGS initial (and largest) line-search step (default 1.0)")
    r.add_argument("--seed", type=int, default=1224)
    r.add_argument("--x64", action="store_true", help="train in float64")
    r.add_argument("--lbfgs-backend", choices=("optax", "jaxopt"), default="optax")
    r.add_argument("--relobralo", choices=("on", "off", "adam"), default=None, help="default: the method's")
    r.add_argument("--relobralo-lbfgs", choices=("iteration", "refresh"), default="iteration",
                   help="when ReLoBRaLo's lambdas enter the L-BFGS objective: every iteration (default, as "
                        "released) or at each weight refresh (fewer evaluations, measured less accurate; see "
                        "benchmarks/results/headline.md)")
    r.add_argument("--out", default=None)
    r.add_argument("--no-plots", action="store_true")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_cmd_run)
    l = sub.add_parser("list", help="list problems and methods")
    l.set_defaults(func=_cmd_list)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
