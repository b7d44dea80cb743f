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

Both commands keep XLA's compiled programs on disk (:mod:`cgmpinn_jax.training._disk_cache`;
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


from . import _parser
from ._parser import EXIT_INTERRUPTED, RELOBRALO_MODES

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
    lines += result.stage_lines()
    for st in (st for st in result.stages if st.name != "adam"):
        if st.iterations:
            per = ("damping trials per iteration (one Jacobian per iteration, one forward evaluation per trial)"
                   if st.label == "Gauss-Newton" else "loss+gradient evaluations per iteration")
            lines.append(f"{st.label}: {st.evaluations / st.iterations:.2f} {per}")
    lines.append(f"ReLoBRaLo: {s['relobralo']}")
    return "\n".join(lines)


def _cmd_list(_args) -> int:
    from ..methods import METHODS
    from ..problems import PROBLEMS

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
        "stages": _names(args.stages),
        "stage_steps": _budgets(args.stage_steps),
    }
    return {k: v for k, v in kw.items() if v is not None}


def _names(text):
    return None if text is None else tuple(x.strip() for x in text.split(","))


def _budgets(text):
    if text is None:
        return None
    out = []
    for x in (x.strip() for x in text.split(",")):
        if x in ("", "-"):
            out.append(None)
        elif x.isdigit():
            out.append(int(x))
        else:
            raise ValueError(f"--stage-steps: {x!r} is not a non-negative int (or empty / - for the default)")
    return tuple(out)


def stage_label(config, stage: str) -> str:
    """A stage as the progress bars name it: "Adam", "L-BFGS", "Gauss-Newton", ..."""
    from ..training._records import second_stage_label

    return "Adam" if stage == "adam" else second_stage_label(config.second_stage if stage == "lbfgs" else stage)


class _Bars:
    """Progress bars for the command line: one ``tqdm`` bar per stage (steps done / budget,
    elapsed, time left, the loss; an inverse run's coefficients), on a terminal only; the
    library's plain progress lines elsewhere (a log file, CI)."""

    def __init__(self, config):
        self.config, self.bar, self.stage = config, None, None

    @staticmethod
    def wanted(args) -> bool:
        return not args.quiet and sys.stderr.isatty()

    def __call__(self, p) -> None:
        from tqdm import tqdm

        if p.stage != self.stage:
            self.close()
            self.stage = p.stage
            name = stage_label(self.config, p.stage)
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
    from ..training._driver import train

    bars = _Bars(config) if _Bars.wanted(args) else None
    try:
        return train(problem, method, config, key=key, quiet=args.quiet or bars is not None,
                     prefetch_compile=args.background_compile == "on", progress=bars, checkpoint_dir=out,
                     checkpoint_every=args.checkpoint_every, resume=out if args.resume else None)
    finally:
        if bars is not None:
            bars.close()


def _resumed(args, command: str):
    """``(problem, method, config, key, out)`` recorded in the checkpoint of ``--resume DIR``;
    an error if other run options were given with it."""
    from ..training._resuming import recorded_run

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
    from .. import io
    from ..training._checkpoint import CheckpointError, TrainingInterrupted

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
            from ..plots import plot_result

            plot_result(result, out)
        except ImportError as e:
            print(f"(no plots: {e})", file=sys.stderr)
    return result


def _drop_checkpoints(out: Path) -> None:
    """A finished run's checkpoints are of no further use (a longer run is another config)."""
    import shutil

    from ..training._checkpoint import SUBDIR

    shutil.rmtree(out / SUBDIR, ignore_errors=True)


def _interrupted(stop, out: Path, command: str) -> int:
    from .. import io

    print()
    if stop.result is not None:
        io.save_result(stop.result, out)
        print(f"interrupted: the best model so far (rel e2 {stop.result.metrics.rel_e2:.3e}) saved in {out}")
    print(f"checkpoint in {stop.checkpoint_dir}; continue with: cgmpinn-jax {command} --resume {out}")
    return EXIT_INTERRUPTED


def _compile_cache(args) -> str:
    """Turn on XLA's persistent compilation cache as ``--compile-cache`` says (the command may
    change jax's global configuration; the library does not): a description for the header."""
    from ..training import _disk_cache as disk_cache

    path = disk_cache.resolve(args.compile_cache)
    if path is None:
        return "compile cache off"
    return f"compile cache {disk_cache.enable(path)}"


def _cmd_run(args) -> int:
    import jax

    from ..config import TrainConfig
    from ..methods import get_method
    from ..problems import get_problem, validate_problem

    from ..training._checkpoint import CheckpointError

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

    from .. import io
    from ..config import TrainConfig
    from ..inverse._inverse import as_list, inverse_problem
    from ..methods import get_method
    from ..problems import get_problem

    from ..training._checkpoint import CheckpointError

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


def build_parser() -> argparse.ArgumentParser:
    """The ``cgmpinn-jax`` parser, each command bound to its function."""
    return _parser.build_parser({"run": _cmd_run, "infer": _cmd_infer, "list": _cmd_list})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
