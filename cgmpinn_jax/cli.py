"""The ``cgmpinn-jax`` command.

    cgmpinn-jax run [PROBLEM] [--method cgmpinn] [--adam-steps N] [--lbfgs-steps N]
                    [--k-upd N] [--width N] [--depth N] [--lbfgs-lr STEP] [--seed S]
                    [--preset faithful|accurate|accurate_lbfgs] [--precision float32|float64|mixed] [--x64]
                    [--second-stage optax|jaxopt|bfgs|ssbfgs|ssbroyden|gauss_newton] [--relobralo on|off|adam]
                    [--relobralo-lbfgs iteration|refresh]
                    [--out DIR] [--no-plots] [--quiet] [--compile-cache DIR|off]
                    [--background-compile on|off]
    cgmpinn-jax infer [PROBLEM] [--unknowns D,r] [--n-obs 200] [--noise 0.01] [--obs-seed S]
                      [--obs-weight W] [every option of run]
    cgmpinn-jax list

``infer`` trains the inverse version of a problem (:mod:`cgmpinn_jax.inverse`): its unknown
coefficients (default: all it declares) are trained with the network from ``--n-obs``
synthetic observations with relative noise ``--noise``; it prints each coefficient's
estimate, true value and relative error and writes them into ``metrics.json``
(``unknowns.<name>.estimate``, ``.true``, ``.rel_error``) beside the solution metrics, with
the usual plots plus ``unknowns.png`` (each coefficient's trajectory).

``PROBLEM`` is a registry name or ``package.module:ClassName`` of a user's Problem subclass
(the current directory is importable). ``cgmpinn-jax run --help`` shows every option with
its default; ``cgmpinn-jax list`` lists the problems, the methods and the ReLoBRaLo modes.

Both commands keep XLA's compiled programs on disk (:mod:`cgmpinn_jax.disk_cache`;
``--compile-cache DIR|off``, default ``~/.cache/cgmpinn-jax/xla``), so a second run of the same
setup skips most of its compile time; the library itself never does this unasked. They also
compile the second stage's programs in a background thread while Adam trains
(``train(..., prefetch_compile=True)``; ``--background-compile off`` waits for each program
when it is first needed): the same programs and results; a run then waits less for
compilation and takes no longer as a whole (measured in
``benchmarks/results/compile_time.md``).

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

import numpy as np

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
    # the "paper" column only where the paper has a number for this problem, method and budget
    lines = [f"{'metric':<14}{'cgmpinn-jax':>14}" + (f"{'paper':>14}" if paper else "")]
    for name, v in ours.items():
        lines.append(f"{name:<14}{_fmt(v):>14}" + (f"{_fmt(paper.get(keys[name])):>14}" if paper else ""))
    lines.append(
        f"(seconds: ours = compile {s['compile_seconds']:.1f} s + run {s['run_seconds']:.1f} s on this machine"
        + ("; paper = one PyTorch CPU run, hardware not stated)" if paper else ")")
    )
    if s["second_stage"] == "gauss_newton":
        per = "damping trials per iteration (one Jacobian per iteration, one forward evaluation per trial)"
    else:
        per = "loss+gradient evaluations per iteration"
    lines += result.stage_lines()
    if np.isfinite(s["evals_per_lbfgs_iteration"]):
        lines.append(f"{result.second_stage_name}: {s['evals_per_lbfgs_iteration']:.2f} {per}")
    lines.append(f"ReLoBRaLo: {s['relobralo']}")
    return "\n".join(lines)


RELOBRALO_MODES = {
    "on": ("both", "ReLoBRaLo rebalances the loss terms in both stages (Adam and the second stage)"),
    "adam": ("adam", "ReLoBRaLo rebalances during Adam only; the second stage keeps the last Adam lambdas fixed"),
    "off": ("none", "no balancing: every loss term has weight 1"),
}


def _cmd_list(_args) -> int:
    from .methods import METHODS
    from .problems import PROBLEMS

    print("problems (or your own Problem subclass: cgmpinn-jax run package.module:ClassName):")
    for name, cls in PROBLEMS.items():
        d = cls.defaults
        print(f"  {name:<22} coords={','.join(cls.coords):<5} Adam {d.adam_steps} + L-BFGS {d.lbfgs_steps}, width {d.width}")
    print("methods (relobralo = the method's default --relobralo mode, on the heat problem):")
    internal = {v[0]: k for k, v in RELOBRALO_MODES.items()}
    probe = PROBLEMS["heat"]()

    def short(f, suffix):
        return getattr(f, "__name__", str(f)).removesuffix(suffix)

    for name, m in METHODS.items():
        relo = internal.get(m.settings(probe).relobralo, m.settings(probe).relobralo)
        print(f"  {name:<22} {m.label or name:<10} network={short(m.network, '_network')}, "
              f"weighting={short(m.weighting, '_weights')}, relobralo={relo}")
    print("ReLoBRaLo modes (--relobralo MODE; internal names in parentheses):")
    for mode, (internal, text) in RELOBRALO_MODES.items():
        print(f"  {mode:<5} ({internal}): {text}")
    return 0


def config_kwargs(args: argparse.Namespace) -> dict:
    """The :class:`~cgmpinn_jax.TrainConfig` keyword arguments the ``run`` options set
    (options left at their default are left out, so the config's own defaults apply)."""
    kw = {
        "adam_steps": args.adam_steps,
        "lbfgs_steps": args.lbfgs_steps,
        "k_upd": args.k_upd,
        "width": args.width,
        "depth": args.depth,
        "lbfgs_lr": args.lbfgs_lr,
        "second_stage": args.second_stage or args.lbfgs_backend,
        "precision": args.precision or ("float64" if args.x64 else None),
        "relobralo": RELOBRALO_MODES[args.relobralo][0] if args.relobralo else None,
        "relobralo_lbfgs_apply": args.relobralo_lbfgs,
    }
    return {k: v for k, v in kw.items() if v is not None}


class _Bars:
    """Progress bars for the command line: one ``tqdm`` bar per stage (steps done / budget,
    elapsed, time left, the loss; an inverse run's coefficients), on a terminal only; the
    library's plain progress lines elsewhere (a log file, CI)."""

    def __init__(self, second_name: str):
        self.second_name, self.bar, self.stage = second_name, None, None

    @staticmethod
    def wanted(args) -> bool:
        return not args.quiet and sys.stderr.isatty()

    def __call__(self, p) -> None:
        from tqdm import tqdm

        if p.stage != self.stage:
            self.close()
            self.stage = p.stage
            name = "Adam" if p.stage == "adam" else self.second_name
            self.bar = tqdm(total=p.total, desc=f"{name:>12}", unit="it", file=sys.stderr, dynamic_ncols=True)
        post = {"loss": f"{p.loss:.3e}"}
        if p.coeffs:
            post.update({k: f"{v:.5g}" for k, v in p.coeffs.items()})
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(p.done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _train_with_progress(args, problem, method, config, out: Path, key):
    """``train`` with progress bars on a terminal, plain lines elsewhere, nothing with --quiet;
    checkpoints into ``out`` (``--resume``: continues from them)."""
    from .driver import train

    from .records import second_stage_label

    bars = _Bars(second_stage_label(config.second_stage)) if _Bars.wanted(args) else None
    try:
        return train(problem, method, config, key=key, quiet=args.quiet or bars is not None,
                     prefetch_compile=args.background_compile == "on", progress=bars, checkpoint_dir=out,
                     checkpoint_every=args.checkpoint_every, resume=out if args.resume else None)
    finally:
        if bars is not None:
            bars.close()


#: exit status after Ctrl-C with a checkpoint written (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130


def _resumed(args, command: str):
    """``(problem, method, config, key, out)`` recorded in the checkpoint of ``--resume DIR``;
    an error if other run options were given with it."""
    from .resuming import recorded_run

    defaults = build_parser().parse_args([command])
    given = [f"--{k.replace('_', '-')}" for k, v in vars(args).items()
             if k not in ("resume", "func", "quiet", "no_plots", "compile_cache", "background_compile", "checkpoint_every",
                          "command") and getattr(defaults, k, v) != v]
    if given:
        raise ValueError(f"--resume continues the run with the settings it recorded; drop {', '.join(given)}")
    run = recorded_run(args.resume)
    return run["problem"], run["method"], run["config"], run["key"], Path(args.resume)


def _train_and_save(args, problem, method, config, out: Path, key, command: str):
    """Train (checkpointing into ``out``), then write the model, history.json and the plots;
    the result, or the exit status after Ctrl-C or a checkpoint that cannot be resumed."""
    from . import io
    from .checkpoint import CheckpointError, TrainingInterrupted

    try:
        result = _train_with_progress(args, problem, method, config, out, key)
    except TrainingInterrupted as stop:
        return _interrupted(stop, out, command)
    except CheckpointError as e:
        print(f"cgmpinn-jax: error: {e}", file=sys.stderr)
        return 2
    io.save_result(result, out)
    (out / "history.json").write_text(json.dumps(io.to_jsonable(result.history.to_dict())))
    if not args.no_plots:
        try:
            from .plots import plot_result

            plot_result(result, out)
        except ImportError as e:
            print(f"(no plots: {e})", file=sys.stderr)
    return result


def _drop_checkpoints(out: Path) -> None:
    """A finished run's checkpoints are of no further use (a longer run is another config)."""
    import shutil

    from .checkpoint import SUBDIR

    shutil.rmtree(out / SUBDIR, ignore_errors=True)


def _interrupted(stop, out: Path, command: str) -> int:
    from . import io

    print()
    if stop.result is not None:
        io.save_result(stop.result, out)
        print(f"interrupted: the best model so far (rel e2 {stop.result.metrics.rel_e2:.3e}) saved in {out}")
    print(f"checkpoint in {stop.checkpoint_dir}; continue with: cgmpinn-jax {command} --resume {out}")
    return EXIT_INTERRUPTED


def _compile_cache(args) -> str:
    """Turn on XLA's persistent compilation cache as ``--compile-cache`` says (the command may
    change jax's global configuration; the library does not): a description for the header."""
    from . import disk_cache

    path = disk_cache.resolve(args.compile_cache)
    if path is None:
        return "compile cache off"
    return f"compile cache {disk_cache.enable(path)}"


def _cmd_run(args) -> int:
    import jax

    from .config import TrainConfig
    from .methods import get_method
    from .problems import get_problem, validate_problem

    from .checkpoint import CheckpointError

    if ":" in args.problem and "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # a user's module in the current directory, as `python -m` would
    try:
        if args.resume:
            problem, method, config, key, out = _resumed(args, "run")
            args.seed = key
        else:
            problem = validate_problem(get_problem(args.problem))
            method = get_method(args.method)
            config = TrainConfig.preset(args.preset, **config_kwargs(args))
            key = args.seed
            out = Path(args.out) if args.out else Path("runs") / f"{problem.name}-{method.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        cache_text = _compile_cache(args)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as e:
        print(f"cgmpinn-jax: error: {e}", file=sys.stderr)
        return 2
    print(f"cgmpinn-jax run{' (resumed)' if args.resume else ''}: {problem.name} / {method.name}, seed {args.seed}, "
          f"{config.precision}, second stage {config.second_stage}, backend {jax.default_backend()}, {cache_text}; "
          f"output -> {out}")
    result = _train_and_save(args, problem, method, config, out, key, "run")
    if isinstance(result, int):
        return result
    paper = paper_row(problem.name, method.name, result.adam_steps, result.lbfgs_steps)
    print()
    print(f"{problem.name} / {method.name} (seed {args.seed}):")
    print(_table(result, paper))
    _drop_checkpoints(out)
    print(f"wrote {out}")
    return 0


def _cmd_infer(args) -> int:
    import jax

    from . import io
    from .config import TrainConfig
    from .inverse import as_list, inverse_problem
    from .methods import get_method
    from .problems import get_problem

    from .checkpoint import CheckpointError

    if ":" in args.problem and "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        if args.resume:
            problem, method, config, key, out = _resumed(args, "infer")
            args.seed, args.noise = key, problem.observations.noise
        else:
            forward = get_problem(args.problem)
            problem = inverse_problem(forward, unknowns=as_list(args.unknowns), n_obs=args.n_obs, noise=args.noise,
                                      key=args.seed if args.obs_seed is None else args.obs_seed,
                                      obs_weight=args.obs_weight)
            method = get_method(args.method)
            config = TrainConfig.preset(args.preset, **config_kwargs(args))
            key = args.seed
            out = Path(args.out) if args.out else Path("runs") / f"{problem.name}-{method.name}-infer-{time.strftime('%Y%m%d-%H%M%S')}"
        cache_text = _compile_cache(args)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as e:
        print(f"cgmpinn-jax: error: {e}", file=sys.stderr)
        return 2
    print(f"cgmpinn-jax infer{' (resumed)' if args.resume else ''}: {problem.name} / {method.name}, unknowns "
          f"{', '.join(problem.unknown_names)}, {len(problem.observations)} observations, noise {args.noise:g}"
          + ("" if problem.obs_weight == 1.0 else f", observation weight {problem.obs_weight:g}")
          + f", seed {args.seed}, {config.precision}, "
          f"second stage {config.second_stage}, backend {jax.default_backend()}, {cache_text}; output -> {out}")
    result = _train_and_save(args, problem, method, config, out, key, "infer")
    if isinstance(result, int):
        return result
    (out / "observations.json").write_text(json.dumps(io.to_jsonable({**problem.observations.to_dict(),
                                                                       "obs_weight": problem.obs_weight})))
    print()
    print(f"{problem.name} / {method.name} (seed {args.seed}), inverse: {len(problem.observations)} observations, "
          f"noise {args.noise:g}")
    print(result.unknowns.table())
    print(_table(result, None))
    _drop_checkpoints(out)
    print(f"wrote {out}")
    return 0


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless the text already states it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return text + " (default: off)"
        return text + " (default: %(default)s)"


def _problem_defaults_text(attr: str) -> str:
    """``"5000; fisher_kpp 8000"``: the registry problems' default for one setting."""
    from .problems import PROBLEMS

    values = {name: getattr(cls.defaults, attr) for name, cls in PROBLEMS.items()}
    common = max(set(values.values()), key=list(values.values()).count)
    others = [f"{n} {v}" for n, v in values.items() if v != common]
    return "; ".join([str(common)] + others)


def _add_optimizer_options(r: argparse.ArgumentParser) -> None:
    """``run``'s precision, second-stage and ReLoBRaLo options."""
    from .config import PRESETS

    r.add_argument("--preset", choices=tuple(PRESETS), default="faithful",
                   help="named settings: 'faithful' = the paper's float32 run; 'accurate' = the most accurate measured "
                        f"setting ({', '.join(f'{k}={v}' for k, v in PRESETS['accurate'].items())}); 'accurate_lbfgs' = "
                        f"the float64 L-BFGS setting ({', '.join(f'{k}={v}' for k, v in PRESETS['accurate_lbfgs'].items())}); "
                        "other options override it "
                        "(default: %(default)s)")
    r.add_argument("--precision", choices=("float32", "float64", "mixed"), default=None,
                   help="float32 (the paper's), float64, or mixed (Adam float32, second stage float64); jax's global "
                        "configuration is left as it is (default: the preset's, float32)")
    r.add_argument("--x64", action="store_true", help="alias of --precision float64")
    r.add_argument("--second-stage", choices=("optax", "jaxopt", "bfgs", "ssbfgs", "ssbroyden", "gauss_newton"),
                   default=None,
                   help="the optimizer after Adam: L-BFGS (optax or jaxopt), dense BFGS / self-scaled BFGS / self-scaled "
                        "Broyden for networks up to 20k parameters, or gauss_newton (Levenberg-Marquardt on the "
                        "residuals) (default: the preset's: faithful optax, accurate gauss_newton)")
    r.add_argument("--lbfgs-backend", choices=("optax", "jaxopt"), default=None,
                   help="older spelling of --second-stage optax|jaxopt")
    r.add_argument("--relobralo", choices=tuple(RELOBRALO_MODES), default=None,
                   help="loss balancing: " + "; ".join(f"{m} = {t}" for m, (_, t) in RELOBRALO_MODES.items())
                        + " (default: the method's; see `cgmpinn-jax list`)")
    r.add_argument("--relobralo-lbfgs", choices=("iteration", "refresh"), default=None,
                   help="when ReLoBRaLo's lambdas enter the L-BFGS objective: every iteration (as released) or "
                        "at each weight refresh (about half the evaluations per iteration; in float32 measured less "
                        "accurate, benchmarks/results/headline.md; in float64 more, benchmarks/results/precision.md) "
                        "(default: the preset's: faithful iteration, accurate refresh)")


def build_parser() -> argparse.ArgumentParser:
    from .methods import METHODS
    from .problems import PROBLEMS

    p = argparse.ArgumentParser(prog="cgmpinn-jax", description="CGMPINN in JAX: train and compare PINNs",
                                formatter_class=_HelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "run", formatter_class=_HelpFormatter,
        help="train one method on one problem (default: the paper's 1D Poisson CGMPINN run)",
        description="Train one method on one problem, print its metrics beside the paper's, and write "
                    "metrics.json, history.json, the model and plots into --out.",
        epilog="examples:\n"
               "  cgmpinn-jax run                                   # the paper's headline run\n"
               "  cgmpinn-jax run heat --method pinn --adam-steps 2000 --lbfgs-steps 1000\n"
               "  cgmpinn-jax run cgmpinn_jax.examples:ViscousBurgers --width 32 --depth 3\n"
               "  cgmpinn-jax run mypde:MyProblem                   # ./mypde.py, class MyProblem",
    )
    r.add_argument("problem", nargs="?", default="poisson1d", metavar="PROBLEM",
                   help=f"a registry problem ({', '.join(PROBLEMS)}) or your own Problem subclass as "
                        "package.module:ClassName (the current directory is importable)")
    r.add_argument("--method", default="cgmpinn", metavar="NAME",
                   help=f"the method: {', '.join(METHODS)}")
    r.add_argument("--adam-steps", type=int, default=None, metavar="N",
                   help=f"Adam steps (default: the problem's: {_problem_defaults_text('adam_steps')})")
    r.add_argument("--lbfgs-steps", type=int, default=None, metavar="N",
                   help="second-stage iterations (L-BFGS, or Gauss-Newton with --preset accurate) (default: the preset's: "
                        f"accurate 1500; else the problem's: {_problem_defaults_text('lbfgs_steps')})")
    r.add_argument("--k-upd", type=int, default=None, metavar="N",
                   help="steps between refreshes of the per-point weights (default: the method's on this problem: "
                        f"{_problem_defaults_text('k_upd')}; Fisher-KPP CGMPINN 100)")
    r.add_argument("--width", type=int, default=None, metavar="N",
                   help=f"hidden width of the network (default: the problem's: {_problem_defaults_text('width')})")
    r.add_argument("--depth", type=int, default=None, metavar="N",
                   help=f"number of hidden layers (default: the problem's: {_problem_defaults_text('depth')})")
    r.add_argument("--lbfgs-lr", type=float, default=None, metavar="STEP",
                   help="the L-BFGS line search's initial (and largest) step (default: 1.0)")
    r.add_argument("--seed", type=int, default=1224, metavar="S",
                   help="integer seed of the training points, the network's initialisation and ReLoBRaLo")
    _add_optimizer_options(r)
    r.add_argument("--out", default=None, metavar="DIR",
                   help="output folder; checkpoints go to DIR/checkpoints while the run lasts (removed when it "
                        "finishes) (default: runs/<problem>-<method>-<time>)")
    r.add_argument("--resume", default=None, metavar="DIR",
                   help="continue the run checkpointed in DIR (its --out) with the settings it recorded; the result "
                        "is bit-identical to an uninterrupted run on the same machine")
    r.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="at most one checkpoint every SECONDS, at a chunk boundary (0: at every chunk boundary). "
                        "Ctrl-C writes one at the next chunk boundary, saves the best model so far and exits with "
                        f"status {EXIT_INTERRUPTED} (default: %(default)s)")
    r.add_argument("--no-plots", action="store_true", help="do not write the PNG figures")
    r.add_argument("--quiet", action="store_true",
                   help="no progress output while training (else: progress bars on a terminal, plain lines otherwise)")
    r.add_argument("--compile-cache", default=None, metavar="DIR|off",
                   help="keep XLA's compiled chunks in DIR so that a later run of the same setup skips most of its "
                        "compile time; 'off' disables it (default: $CGMPINN_JAX_COMPILE_CACHE, else "
                        "~/.cache/cgmpinn-jax/xla)")
    r.add_argument("--background-compile", choices=("on", "off"), default="on",
                   help="compile the second stage's programs in a background thread while Adam trains (same "
                        "programs, same results; 'off': compile each when first needed)")
    r.set_defaults(func=_cmd_run)
    _add_infer_parser(sub, r)
    l = sub.add_parser("list", formatter_class=_HelpFormatter,
                       help="list the problems, the methods and the ReLoBRaLo modes")
    l.set_defaults(func=_cmd_list)
    return p


def _add_infer_parser(sub, run_parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``infer``: the options of ``run`` (the same Action objects) plus the inverse ones."""
    from .inverse import INVERSE_BENCHMARKS

    i = sub.add_parser(
        "infer", formatter_class=_HelpFormatter,
        help="identify unknown PDE coefficients from noisy observations (an inverse problem)",
        description="Train the network and the problem's unknown coefficients together from synthetic noisy "
                    "observations of the exact solution; print each coefficient's estimate, true value and relative "
                    "error, and write metrics.json (unknowns.<name>.estimate/.true/.rel_error), history.json, "
                    "observations.json, the model and plots (unknowns.png: the coefficients' trajectories) into --out.",
        epilog="examples:\n"
               "  cgmpinn-jax infer heat --n-obs 200 --noise 0.01 --adam-steps 3000 --lbfgs-steps 3000\n"
               "  cgmpinn-jax infer fisher_kpp --unknowns D,r --noise 0.05 --method pinn\n"
               "  cgmpinn-jax infer advection_diffusion --unknowns nu --seed 2",
    )
    i.add_argument("problem", nargs="?", default="heat", metavar="PROBLEM",
                   help=f"a problem that declares unknown coefficients ({', '.join(INVERSE_BENCHMARKS)}), or your own "
                        "Problem subclass as package.module:ClassName")
    for action in run_parser._actions:
        if action.dest not in ("help", "problem"):
            i._add_action(action)
    i.add_argument("--unknowns", default=None, metavar="NAMES",
                   help="comma-separated coefficients to identify, e.g. D,r (default: all the problem declares: heat "
                        "kappa; fisher_kpp D,r; advection_diffusion a,nu)")
    i.add_argument("--n-obs", type=int, default=200, metavar="M",
                   help="number of observations, uniform inside the domain")
    i.add_argument("--noise", type=float, default=0.01, metavar="LEVEL",
                   help="relative noise: Gaussian with standard deviation LEVEL x std of the exact values at the "
                        "observation points")
    i.add_argument("--obs-seed", type=int, default=None, metavar="S",
                   help="seed of the observations' points and noise (default: --seed)")
    i.add_argument("--obs-weight", type=float, default=1.0, metavar="W",
                   help="fixed factor on the observation term (default 1); below 1 the network fits noisy data less")
    i.set_defaults(func=_cmd_infer)
    return i


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
