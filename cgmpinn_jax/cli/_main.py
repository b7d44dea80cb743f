"""The ``cgmpinn-jax`` command.

    cgmpinn-jax run [PROBLEM] [--method cgmpinn] [--adam-steps N] [--second-steps N]
                    [--k-upd N] [--width N] [--depth N] [--lbfgs-lr STEP] [--seed S]
                    [--preset faithful|accurate|accurate_lbfgs] [--precision float32|float64|mixed]
                    [--x64] [--second lbfgs|gauss-newton|bfgs|ssbfgs|ssbroyden]
                    [--lbfgs-backend optax|jaxopt] [--relobralo on|off|adam]
                    [--relobralo-second iteration|refresh] [--stages NAMES]
                    [--out DIR] [--no-plots] [--quiet] [--compile-cache DIR|off]
                    [--background-compile on|off]
    cgmpinn-jax infer [PROBLEM] [--unknowns D,r] [--n-obs 200] [--noise 0.01] [--obs-seed S]
                      [--obs-weight W] [every option of run]
    cgmpinn-jax list

``infer`` trains the inverse version of a problem (`cgmpinn_jax.inverse`): its unknown
coefficients (default: all it declares) are trained with the network from ``--n-obs``
synthetic observations with relative noise ``--noise``; it prints each coefficient's
estimate, true value and relative error and writes them into ``metrics.json``
(``unknowns.<name>.estimate``, ``.true``, ``.rel_error``) beside the solution metrics, with
the usual plots plus ``unknowns.png`` (each coefficient's trajectory).

``PROBLEM`` is a registry name or ``package.module:ClassName`` of a user's Problem subclass
(the current directory is importable). ``cgmpinn-jax run --help`` shows every option with
its default; ``cgmpinn-jax list`` lists the problems, the methods and the ReLoBRaLo modes.

Both commands keep XLA's compiled programs on disk (`cgmpinn_jax.training.enable_compile_cache`;
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
(default ``runs/<problem>-<method>-<time>``). ``--adam-steps 15000 --second-steps 0`` and
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
from ._parser import EXIT_INTERRUPTED, RELOBRALO_MODES, build_config
from ._progress import _Bars

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


def paper_row(
    problem: str, method: str, adam_steps: int, second_steps: int, second: str = "lbfgs"
) -> dict | None:
    """The paper's numbers for a run of Adam then ``second`` (the paper's Adam + L-BFGS, or its
    optimizer study's Adam only or L-BFGS only), if it reports them (method, optimizer or
    ablation tables)."""
    tables = paper_tables()
    label = PAPER_METHOD_NAMES.get(method, method)
    if adam_steps and second_steps:
        row = tables.get("methods", {}).get(problem, {}).get(label)
        if row is None:
            row = tables.get("ablation", {}).get(problem, {}).get(label)
        return row
    if method == "cgmpinn" and (second_steps == 0 or second == "lbfgs"):
        opt = "Adam" if second_steps == 0 else "L-BFGS"
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
    keys = {
        "e_loss": "e_loss",
        "e2 (RMS)": "e2_rms",
        "relative e2": "rel_e2",
        "e_inf": "e_inf",
        "seconds": "cpu_s",
    }
    # the "paper" column only where the paper has a number for this problem, method and budget
    lines = [f"{'metric':<14}{'cgmpinn-jax':>14}" + (f"{'paper':>14}" if paper else "")]
    for name, v in ours.items():
        lines.append(
            f"{name:<14}{_fmt(v):>14}" + (f"{_fmt(paper.get(keys[name])):>14}" if paper else "")
        )
    for field, m in result.metrics.per_field:  # a system: each field's own relative error
        lines.append(f"{'rel e2 ' + field:<14}{_fmt(m.rel_e2):>14}")
    if result.metrics.against != "exact":
        lines.append(
            result.metrics.describe()
            if result.metrics.against == "none"
            else f"(errors against the {result.metrics.against}"
            + ("; relative e2 pools every field and point)" if result.metrics.per_field else ")")
        )
    lines.append(
        f"(seconds: ours = compile {s['compile_seconds']:.1f} s + run {s['run_seconds']:.1f} s "
        "on this machine"
        + ("; paper = one PyTorch CPU run, hardware not stated)" if paper else ")")
    )
    lines += result.stage_lines()
    for st in (st for st in result.stages if st.name != "adam"):
        if st.iterations:
            per = (
                "damping trials per iteration "
                "(one Jacobian per iteration, one forward evaluation per trial)"
                if st.label == "Gauss-Newton"
                else "loss+gradient evaluations per iteration"
            )
            lines.append(f"{st.label}: {st.evaluations / st.iterations:.2f} {per}")
    lines.append(f"ReLoBRaLo: {s['relobralo']}")
    return "\n".join(lines)


def _list_pinnacle() -> None:
    """The `list` section of PINNacle's problems: dimension, coordinates and what errors are
    measured against."""
    from ..problems import PINNACLE

    print("PINNacle's problems (Hao et al. 2024; cgmpinn_jax/problems/pinnacle.py):")
    for name, cls in PINNACLE.items():
        p = cls()
        against = "the closed form" if p.has_exact else f"reference {p.reference_data().source}"
        print(f"  {name:<22} d={p.dim} coords={','.join(cls.coords):<17} against {against}")


def _cmd_list(_args) -> int:
    from ..methods import METHODS
    from ..problems import PROBLEMS, WORKED

    print("problems (or your own Problem subclass: cgmpinn-jax run package.module:ClassName):")
    for name, cls in PROBLEMS.items():
        d = cls.defaults
        print(
            f"  {name:<22} coords={','.join(cls.coords):<5} "
            f"Adam {d.adam_steps} + L-BFGS {d.second_steps}, width {d.width}"
        )
    print(
        "worked examples (no closed form: errors against reference data; "
        "docs/problems-from-data.md):"
    )
    for name, cls in WORKED.items():
        p = cls()
        print(
            f"  {name:<22} coords={','.join(cls.coords):<5} fields={','.join(cls.fields)} "
            f"against {p.reference_data().source}"
        )
    _list_pinnacle()
    print("methods (relobralo = the method's default --relobralo mode, on the heat problem):")
    internal = {v[0]: k for k, v in RELOBRALO_MODES.items()}
    probe = PROBLEMS["heat"]()

    def short(f, suffix):
        return getattr(f, "__name__", str(f)).removesuffix(suffix)

    for name, m in METHODS.items():
        relo = internal.get(m.settings(probe).relobralo, m.settings(probe).relobralo)
        print(
            f"  {name:<22} {m.label or name:<10} network={short(m.network, '_network')}, "
            f"weighting={short(m.weighting, '_weights')}, relobralo={relo}"
        )
    print("ReLoBRaLo modes (--relobralo MODE; internal names in parentheses):")
    for mode, (internal_mode, text) in RELOBRALO_MODES.items():
        print(f"  {mode:<5} ({internal_mode}): {text}")
    return 0


def _train_with_progress(args, problem, method, config, out: Path, key):
    """``train`` with progress bars on a terminal, plain lines elsewhere, nothing with --quiet;
    checkpoints into ``out`` (``--resume``: continues from them)."""
    from ..training import train

    bars = _Bars(config) if _Bars.wanted(args) else None
    try:
        return train(
            problem,
            method,
            config,
            key=key,
            quiet=args.quiet or bars is not None,
            prefetch_compile=args.background_compile == "on",
            progress=bars,
            checkpoint_dir=out,
            checkpoint_every=args.checkpoint_every,
            resume=out if args.resume else None,
            call_seconds=args.call_seconds,
        )
    finally:
        if bars is not None:
            bars.close()


def _resumed(args, command: str):
    """``(problem, method, config, key, out)`` recorded in the checkpoint of ``--resume DIR``
    (``--time-limit``: the run's new limit); an error if other run options were given with it."""
    from ..training import recorded_run

    defaults = build_parser().parse_args([command])
    given = [
        f"--{k.replace('_', '-')}"
        for k, v in vars(args).items()
        if k
        not in (
            "resume",
            "func",
            "quiet",
            "no_plots",
            "compile_cache",
            "background_compile",
            "checkpoint_every",
            "command",
            "time_limit",
            "call_seconds",
        )
        and getattr(defaults, k, v) != v
    ]
    if given:
        raise ValueError(
            f"--resume continues the run with the settings it recorded; drop {', '.join(given)}"
        )
    run = recorded_run(args.resume)
    config = (
        run["config"]
        if args.time_limit is None
        else run["config"].replace(time_limit=args.time_limit)
    )
    return run["problem"], run["method"], config, run["key"], Path(args.resume)


def _train_and_save(args, problem, method, config, out: Path, key, command: str):
    """Train (checkpointing into ``out``), then write the model, history.json and the plots;
    the result, or the exit status after Ctrl-C or a checkpoint that cannot be resumed."""
    from .. import io
    from ..training import CheckpointError, TrainingInterrupted

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

    from ..training import CHECKPOINT_SUBDIR as SUBDIR

    shutil.rmtree(out / SUBDIR, ignore_errors=True)


def _interrupted(stop, out: Path, command: str) -> int:
    from .. import io

    print()
    if stop.result is not None:
        io.save_result(stop.result, out)
        print(
            f"interrupted: the best model so far (rel e2 {stop.result.metrics.rel_e2:.3e}) "
            f"saved in {out}"
        )
    print(
        f"checkpoint in {stop.checkpoint_dir}; continue with: cgmpinn-jax {command} --resume {out}"
    )
    return EXIT_INTERRUPTED


def _compile_cache(args) -> str:
    """Turn on XLA's persistent compilation cache as ``--compile-cache`` says (the command may
    change jax's global configuration; the library does not): a description for the header."""
    from ..training import compile_cache_folder, enable_compile_cache

    path = compile_cache_folder(args.compile_cache)
    if path is None:
        return "compile cache off"
    return f"compile cache {enable_compile_cache(path)}"


def _prepared(args, kind: str, build):
    """``(problem, method, config, key, out, compile-cache text)`` of a new run (``build()``
    gives the first five) or of the resumed one (``--resume``), or None after printing why
    not (bad input: exit status 2)."""
    from ..training import CheckpointError

    user_module = ":" in args.problem or ":" in (getattr(args, "network", None) or "")
    if user_module and "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(
            0, str(Path.cwd())
        )  # a user's module in the current directory, as `python -m` would
    try:
        if not args.call_seconds > 0 or args.call_seconds == float("inf"):
            raise ValueError(
                f"--call-seconds must be a number of seconds > 0, got {args.call_seconds!r}"
            )
        problem, method, config, key, out = _resumed(args, kind) if args.resume else build()
        return problem, method, config, key, out, _compile_cache(args)
    except (ValueError, TypeError, FileNotFoundError, CheckpointError) as e:
        print(f"cgmpinn-jax: error: {e}", file=sys.stderr)
        return None


def _default_out(args, problem, method, tag: str = "") -> Path:
    if args.out:
        return Path(args.out)
    return Path("runs") / f"{problem.name}-{method.name}{tag}-{time.strftime('%Y%m%d-%H%M%S')}"


def _stages_text(config) -> str:
    """The run's stages by name: ``"stages Adam, Gauss-Newton"`` (``"L-BFGS (jaxopt)"`` for the
    jaxopt backend)."""
    return "stages " + ", ".join(
        st.label + (" (jaxopt)" if getattr(st, "backend", "optax") == "jaxopt" else "")
        for st in config.stages
    )


def _finish(out: Path, result, command: str) -> int:
    """A finished run drops its checkpoints; one that stopped on its time limit keeps them."""
    if result.time_limited:
        print(
            f"wrote {out}; the run stopped on its time limit ({result.config.time_limit:g} s): "
            "continue with "
            f"cgmpinn-jax {command} --resume {out} --time-limit LARGER"
        )
        return 0
    _drop_checkpoints(out)
    print(f"wrote {out}")
    return 0


def _cmd_run(args) -> int:
    import jax

    from ..methods import get_method
    from ..problems import get_problem, validate_problem

    def build():
        problem = validate_problem(get_problem(args.problem))
        method = get_method(args.method)
        return (problem, method, build_config(args), args.seed, _default_out(args, problem, method))

    ready = _prepared(args, "run", build)
    if ready is None:
        return 2
    problem, method, config, key, out, cache_text = ready
    args.seed = key
    print(
        f"cgmpinn-jax run{' (resumed)' if args.resume else ''}: {problem.name} / {method.name}, "
        f"seed {args.seed}, "
        f"{config.precision}, {_stages_text(config)}, backend {jax.default_backend()}, "
        f"{cache_text}; "
        f"output -> {out}"
    )
    result = _train_and_save(args, problem, method, config, out, key, "run")
    if isinstance(result, int):
        return result
    names = config.stage_names  # the paper's numbers are for Adam + one later stage
    budgets = result.budgets
    paper = (
        paper_row(problem.name, method.name, budgets["adam"], budgets[names[1]], names[1])
        if len(names) == 2 and names[0] == "adam"
        else None
    )
    print()
    print(f"{problem.name} / {method.name} (seed {args.seed}):")
    print(_table(result, paper))
    return _finish(out, result, "run")


def _cmd_infer(args) -> int:
    import jax

    from .. import io
    from ..inverse import as_list, inverse_problem
    from ..methods import get_method
    from ..problems import get_problem

    def build():
        problem = inverse_problem(
            get_problem(args.problem),
            unknowns=as_list(args.unknowns),
            n_obs=args.n_obs,
            noise=args.noise,
            key=args.seed if args.obs_seed is None else args.obs_seed,
            obs_weight=args.obs_weight,
        )
        method = get_method(args.method)
        return (
            problem,
            method,
            build_config(args),
            args.seed,
            _default_out(args, problem, method, "-infer"),
        )

    ready = _prepared(args, "infer", build)
    if ready is None:
        return 2
    problem, method, config, key, out, cache_text = ready
    args.seed, args.noise = key, problem.observations.noise
    print(
        f"cgmpinn-jax infer{' (resumed)' if args.resume else ''}: {problem.name} / {method.name}, "
        f"unknowns {', '.join(problem.unknown_names)}, {len(problem.observations)} observations, "
        f"noise {args.noise:g}"
        + ("" if problem.obs_weight == 1.0 else f", observation weight {problem.obs_weight:g}")
        + f", seed {args.seed}, {config.precision}, "
        f"{_stages_text(config)}, backend {jax.default_backend()}, {cache_text}; output -> {out}"
    )
    result = _train_and_save(args, problem, method, config, out, key, "infer")
    if isinstance(result, int):
        return result
    (out / "observations.json").write_text(
        json.dumps(
            io.to_jsonable({**problem.observations.to_dict(), "obs_weight": problem.obs_weight})
        )
    )
    print()
    print(
        f"{problem.name} / {method.name} (seed {args.seed}), inverse: "
        f"{len(problem.observations)} observations, noise {args.noise:g}"
    )
    print(result.unknowns.table())
    print(_table(result, None))
    return _finish(out, result, "infer")


def build_parser() -> argparse.ArgumentParser:
    """The ``cgmpinn-jax`` parser, each command bound to its function."""
    return _parser.build_parser({"run": _cmd_run, "infer": _cmd_infer, "list": _cmd_list})


def main(argv: list[str] | None = None) -> int:
    """The ``cgmpinn-jax`` command: ``run`` (train a method on a problem and write the
    metrics, the model and plots into a folder), ``infer`` (the same for the inverse version of
    a problem: the unknown coefficients with the network) and ``list`` (the problems, the
    methods and the ReLoBRaLo modes). ``cgmpinn-jax run --help`` lists every option with its
    default; docs/cli.md describes them.

    Args:
        argv: the command's arguments without the program name, e.g.
            ``["run", "poisson1d", "--method", "pinn"]`` (``None``: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success; 2 when a run cannot start or resume (argparse's own
            usage errors raise ``SystemExit(2)``); 130 after Ctrl-C, once the run's checkpoint
            is written (``--resume`` continues it).

    Examples:
        ```console
        $ cgmpinn-jax run poisson1d --method cgmpinn --adam-steps 2000 --second-steps 1000
        $ python -m cgmpinn_jax.cli list
        ```
    """
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
