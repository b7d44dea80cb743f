"""The ``cgmpinn-jax`` command line's parser: ``run``, ``infer`` and ``list`` with every option
and its default (the commands themselves are in `cgmpinn_jax.cli._main`)."""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["build_parser", "build_config", "RELOBRALO_MODES", "EXIT_INTERRUPTED", "STAGE_FLAGS"]

RELOBRALO_MODES = {
    "on": (
        "both",
        "ReLoBRaLo rebalances the loss terms in both stages (Adam and the second stage)",
    ),
    "adam": (
        "adam",
        "ReLoBRaLo rebalances during Adam only; the second stage keeps the last Adam lambdas fixed",
    ),
    "off": ("none", "no balancing: every loss term has weight 1"),
}

#: a stage's name on the command line -> its name in cgmpinn_jax.stages (and in results)
STAGE_FLAGS = {
    "adam": "adam",
    "lbfgs": "lbfgs",
    "gauss-newton": "gauss_newton",
    "bfgs": "bfgs",
    "ssbfgs": "ssbfgs",
    "ssbroyden": "ssbroyden",
}

#: exit status after Ctrl-C with a checkpoint written (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless the text already states it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (
            "default" in text
            or action.default is argparse.SUPPRESS
            or isinstance(action, argparse._HelpAction)
        ):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return text + " (default: off)"
        return text + " (default: %(default)s)"


def _problem_defaults_text(attr: str) -> str:
    """``"5000; fisher_kpp 8000"``: the registry problems' default for one setting."""
    from ..problems import PROBLEMS

    values = {name: getattr(cls.defaults, attr) for name, cls in PROBLEMS.items()}
    common = max(set(values.values()), key=list(values.values()).count)
    others = [f"{n} {v}" for n, v in values.items() if v != common]
    return "; ".join([str(common)] + others)


def _preset_text(settings: dict) -> str:
    """``"precision=float64, stages=adam,gauss-newton(1500)"``: a preset's settings, a group's as
    dotted names."""

    def stages(v):
        return ",".join(_flag(st.name) + ("" if st.steps is None else f"({st.steps})") for st in v)

    return ", ".join(
        f"{k}.{o}={v}" if isinstance(g, dict) else f"{k}={stages(g) if k == 'stages' else g}"
        for k, g in settings.items()
        for o, v in (g.items() if isinstance(g, dict) else [(None, g)])
    )


def _flag(name: str) -> str:
    """A stage's name as the command line spells it (``gauss_newton`` -> ``gauss-newton``)."""
    return name.replace("_", "-")


def _add_optimizer_options(r: argparse.ArgumentParser) -> None:
    """``run``'s precision, second-stage and ReLoBRaLo options."""
    from ..config import PRESETS

    r.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        default="faithful",
        help="named settings: 'faithful' = the paper's float32 run; 'accurate' = the most accurate "
        f"measured setting ({_preset_text(PRESETS['accurate'])}); 'accurate_lbfgs' = the float64 "
        f"L-BFGS setting ({_preset_text(PRESETS['accurate_lbfgs'])}); other options override it "
        "(default: %(default)s)",
    )
    r.add_argument(
        "--precision",
        choices=("float32", "float64", "mixed"),
        default=None,
        help="float32 (the paper's), float64, or mixed (Adam float32, second stage float64); jax's "
        "global configuration is left as it is (default: the preset's, float32)",
    )
    r.add_argument("--x64", action="store_true", help="alias of --precision float64")
    later = tuple(f for f in STAGE_FLAGS if f != "adam")
    r.add_argument(
        "--second",
        choices=later,
        default=None,
        help="the stage after Adam: lbfgs (L-BFGS), gauss-newton (Levenberg-Marquardt on the "
        "residuals), or dense BFGS / self-scaled BFGS / self-scaled Broyden for networks up to 20k "
        "parameters (default: the preset's: faithful lbfgs, accurate gauss-newton)",
    )
    r.add_argument(
        "--stages",
        default=None,
        metavar="NAMES",
        help="the run's stages, comma-separated, e.g. adam,lbfgs,gauss-newton (adam first if at "
        f"all; each at most once; names: {', '.join(STAGE_FLAGS)}) (default: adam, then --second)",
    )
    r.add_argument(
        "--lbfgs-backend",
        choices=("optax", "jaxopt"),
        default=None,
        help="the L-BFGS stage's implementation (default: optax)",
    )
    r.add_argument(
        "--relobralo",
        choices=tuple(RELOBRALO_MODES),
        default=None,
        help="loss balancing: "
        + "; ".join(f"{m} = {t}" for m, (_, t) in RELOBRALO_MODES.items())
        + " (default: the method's; see `cgmpinn-jax list`)",
    )
    r.add_argument(
        "--relobralo-second",
        choices=("iteration", "refresh"),
        default=None,
        help="when ReLoBRaLo's lambdas enter the objective of a stage after Adam (L-BFGS or "
        "Gauss-Newton): every iteration (as released) or at each weight refresh (about half the "
        "L-BFGS evaluations per iteration; in float32 measured less accurate, "
        "benchmarks/results/headline.md; in float64 more, benchmarks/results/precision.md) "
        "(default: the preset's: faithful iteration, accurate refresh)",
    )


def build_parser(commands: dict[str, Callable]) -> argparse.ArgumentParser:
    """The parser of ``run``, ``infer`` and ``list``; ``commands``: name -> the function it
    calls."""
    from ..methods import METHODS
    from ..problems import PROBLEMS

    p = argparse.ArgumentParser(
        prog="cgmpinn-jax",
        description="CGMPINN in JAX: train and compare PINNs",
        formatter_class=_HelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "run",
        formatter_class=_HelpFormatter,
        help="train one method on one problem (default: the paper's 1D Poisson CGMPINN run)",
        description="Train one method on one problem, print its metrics beside the paper's, and "
        "write metrics.json, history.json, the model and plots into --out.",
        epilog="examples:\n"
        "  cgmpinn-jax run                                   # the paper's headline run\n"
        "  cgmpinn-jax run heat --method pinn --adam-steps 2000 --second-steps 1000\n"
        "  cgmpinn-jax run cgmpinn_jax.examples:ViscousBurgers --width 32 --depth 3\n"
        "  cgmpinn-jax run mypde:MyProblem                   # ./mypde.py, class MyProblem",
    )
    r.add_argument(
        "problem",
        nargs="?",
        default="poisson1d",
        metavar="PROBLEM",
        help=f"a registry problem ({', '.join(PROBLEMS)}) or your own Problem subclass as "
        "package.module:ClassName (the current directory is importable)",
    )
    r.add_argument(
        "--method", default="cgmpinn", metavar="NAME", help=f"the method: {', '.join(METHODS)}"
    )
    r.add_argument(
        "--adam-steps",
        type=int,
        default=None,
        metavar="N",
        help=f"Adam steps (default: the problem's: {_problem_defaults_text('adam_steps')})",
    )
    r.add_argument(
        "--second-steps",
        type=int,
        default=None,
        metavar="N",
        help="iterations of each stage after Adam (L-BFGS, or Gauss-Newton with --preset accurate) "
        "(default: the preset's: accurate 1500; else the problem's: "
        f"{_problem_defaults_text('second_steps')})",
    )
    r.add_argument(
        "--k-upd",
        type=int,
        default=None,
        metavar="N",
        help="steps between refreshes of the per-point weights (default: the method's on this "
        f"problem: {_problem_defaults_text('k_upd')}; Fisher-KPP CGMPINN 100)",
    )
    r.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="N",
        help="hidden width of the network (default: the problem's: "
        f"{_problem_defaults_text('width')})",
    )
    r.add_argument(
        "--depth",
        type=int,
        default=None,
        metavar="N",
        help=f"number of hidden layers (default: the problem's: {_problem_defaults_text('depth')})",
    )
    r.add_argument(
        "--network",
        default=None,
        metavar="NAME",
        help="the network, when not the method's MLP: a built-in choice (fourier, siren, periodic, "
        "laaf, gaaf, mlp_activation) or package.module:factory, a function (key, in_dim, out_dim) "
        "-> equinox module (default: the method's own)",
    )
    r.add_argument(
        "--network-option",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="an option of --network's factory (a Python literal: sigma=2.0, periods=((0,2.0),)); "
        "repeat for several",
    )
    r.add_argument(
        "--lbfgs-lr",
        type=float,
        default=None,
        metavar="STEP",
        help="the L-BFGS line search's initial (and largest) step (default: 1.0)",
    )
    r.add_argument(
        "--seed",
        type=int,
        default=1224,
        metavar="S",
        help="integer seed of the training points, the network's initialisation and ReLoBRaLo",
    )
    _add_optimizer_options(r)
    r.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output folder; checkpoints go to DIR/checkpoints while the run lasts (removed when "
        "it finishes) (default: runs/<problem>-<method>-<time>)",
    )
    r.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue the run checkpointed in DIR (its --out) with the settings it recorded; the "
        "result is bit-identical to an uninterrupted run on the same machine",
    )
    r.add_argument(
        "--checkpoint-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="at most one checkpoint every SECONDS, at a call boundary (0: at every call "
        "boundary). Ctrl-C writes one at the next call boundary, saves the best model so far and "
        f"exits with status {EXIT_INTERRUPTED} (default: %(default)s)",
    )
    r.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wall-clock seconds for the whole run, compilation included: at the next call "
        "boundary after it the run writes a checkpoint, its stage ends with TIME_LIMIT (best point "
        "kept), the model is saved and the checkpoints are kept; --resume DIR --time-limit LARGER "
        "continues it. With --resume it replaces the recorded limit (default: no limit)",
    )
    r.add_argument(
        "--call-seconds",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="each compiled call of a stage lasts about SECONDS (sized from the stage's measured "
        "pace), so progress lines, checkpoints, Ctrl-C and the time limit wait at most that long, "
        "however slow an iteration; the same steps bit for bit whatever it is (default: "
        "%(default)s)",
    )
    r.add_argument("--no-plots", action="store_true", help="do not write the PNG figures")
    r.add_argument(
        "--quiet",
        action="store_true",
        help="no progress output while training (else: progress bars on a terminal, plain lines "
        "otherwise)",
    )
    r.add_argument(
        "--compile-cache",
        default=None,
        metavar="DIR|off",
        help="keep XLA's compiled chunks in DIR so that a later run of the same setup skips most "
        "of its compile time; 'off' disables it (default: $CGMPINN_JAX_COMPILE_CACHE, else "
        "~/.cache/cgmpinn-jax/xla)",
    )
    r.add_argument(
        "--background-compile",
        choices=("on", "off"),
        default="on",
        help="compile the second stage's programs in a background thread while Adam trains (same "
        "programs, same results; 'off': compile each when first needed)",
    )
    r.set_defaults(func=commands["run"])
    _add_infer_parser(sub, r).set_defaults(func=commands["infer"])
    list_parser = sub.add_parser(
        "list",
        formatter_class=_HelpFormatter,
        help="list the problems, the methods and the ReLoBRaLo modes",
    )
    list_parser.set_defaults(func=commands["list"])
    return p


def _add_infer_parser(sub, run_parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``infer``: the options of ``run`` (the same Action objects) plus the inverse ones."""
    from ..inverse import INVERSE_BENCHMARKS

    i = sub.add_parser(
        "infer",
        formatter_class=_HelpFormatter,
        help="identify unknown PDE coefficients from noisy observations (an inverse problem)",
        description="Train the network and the problem's unknown coefficients together from "
        "synthetic noisy observations of the exact solution; print each coefficient's estimate, "
        "true value and relative error, and write metrics.json "
        "(unknowns.<name>.estimate/.true/.rel_error), history.json, observations.json, the model "
        "and plots (unknowns.png: the coefficients' trajectories) into --out.",
        epilog="examples:\n"
        "  cgmpinn-jax infer heat --n-obs 200 --noise 0.01 --adam-steps 3000 --second-steps 3000\n"
        "  cgmpinn-jax infer fisher_kpp --unknowns D,r --noise 0.05 --method pinn\n"
        "  cgmpinn-jax infer advection_diffusion --unknowns nu --seed 2",
    )
    i.add_argument(
        "problem",
        nargs="?",
        default="heat",
        metavar="PROBLEM",
        help=f"a problem that declares unknown coefficients ({', '.join(INVERSE_BENCHMARKS)}), or "
        "your own Problem subclass as package.module:ClassName",
    )
    for action in run_parser._actions:
        if action.dest not in ("help", "problem"):
            i._add_action(action)
    i.add_argument(
        "--unknowns",
        default=None,
        metavar="NAMES",
        help="comma-separated coefficients to identify, e.g. D,r (default: all the problem "
        "declares: heat kappa; fisher_kpp D,r; advection_diffusion a,nu)",
    )
    i.add_argument(
        "--n-obs",
        type=int,
        default=200,
        metavar="M",
        help="number of observations, uniform inside the domain",
    )
    i.add_argument(
        "--noise",
        type=float,
        default=0.01,
        metavar="LEVEL",
        help="relative noise: Gaussian with standard deviation LEVEL x std of the exact values at "
        "the observation points",
    )
    i.add_argument(
        "--obs-seed",
        type=int,
        default=None,
        metavar="S",
        help="seed of the observations' points and noise (default: --seed)",
    )
    i.add_argument(
        "--obs-weight",
        type=float,
        default=1.0,
        metavar="W",
        help="fixed factor on the observation term (default 1); below 1 the network fits noisy "
        "data less",
    )
    return i


def build_config(args: argparse.Namespace):
    """The [`TrainConfig`][cgmpinn_jax.TrainConfig] of the ``run`` options: the preset's, with the
    options given on top (options left at their default keep the preset's)."""
    from ..config import TrainConfig
    from ..stages import STAGES, Adam

    base = TrainConfig.preset(args.preset)
    names = None
    if args.stages is not None:
        names = []
        for x in (x.strip() for x in args.stages.split(",")):
            if x not in STAGE_FLAGS:
                raise ValueError(
                    f"--stages: {x!r} is not a stage; the stages: {', '.join(STAGE_FLAGS)}"
                )
            names.append(STAGE_FLAGS[x])
        if args.second is not None:
            raise ValueError("give --stages or --second, not both")
    elif args.second is not None:
        names = ["adam", STAGE_FLAGS[args.second]]
    stages = list(base.stages)
    if names is not None:
        own = {st.name: st for st in base.stages}
        stages = [own.get(n) or STAGES[n]() for n in names]
    changes = {
        "adam": {"steps": args.adam_steps},
        "later": {"steps": args.second_steps},
        "lbfgs": {"lr": args.lbfgs_lr, "backend": args.lbfgs_backend},
    }
    if any(v is not None for v in changes["lbfgs"].values()) and "lbfgs" not in [
        st.name for st in stages
    ]:
        raise ValueError(
            "--lbfgs-lr / --lbfgs-backend set an L-BFGS stage's options, and the run has none "
            "(use --second lbfgs)"
        )
    for i, st in enumerate(stages):
        for group in ("adam" if st.name == "adam" else "later",) + (
            ("lbfgs",) if st.name == "lbfgs" else ()
        ):
            given = {k: v for k, v in changes[group].items() if v is not None}
            if given:
                stages[i] = st = st.replace(**given)
    if not any(isinstance(st, Adam) for st in stages) and args.adam_steps is not None:
        raise ValueError("--adam-steps: the run has no Adam stage")
    kw = {
        "stages": tuple(stages),
        "width": args.width,
        "depth": args.depth,
        "precision": args.precision or ("float64" if args.x64 else None),
        "time_limit": getattr(args, "time_limit", None),
        "network": _network(getattr(args, "network", None), getattr(args, "network_option", None)),
        "cgm": {k: v for k, v in {"k_upd": args.k_upd}.items() if v is not None} or None,
        "balancing": {
            k: v
            for k, v in {
                "stages": RELOBRALO_MODES[args.relobralo][0] if args.relobralo else None,
                "second_stage_apply": args.relobralo_second,
            }.items()
            if v is not None
        }
        or None,
    }
    return base.replace(**{k: v for k, v in kw.items() if v is not None})


def _network(name, options):
    """``--network`` and its ``--network-option NAME=VALUE`` as a network option group's dict."""
    import ast

    if name is None:
        if options:
            raise SystemExit("cgmpinn-jax: --network-option needs --network")
        return None
    opts = {}
    for text in options or ():
        key, sep, value = text.partition("=")
        if not sep or not key.strip().isidentifier():
            raise SystemExit(f"cgmpinn-jax: --network-option {text!r}: expected NAME=VALUE")
        try:
            opts[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            opts[key.strip()] = value.strip()  # a plain word: a string
    return {"name": name, "options": opts}
