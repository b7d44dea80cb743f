"""The host side of a run: [`train`][cgmpinn_jax.train] (validate, resolve the settings, build
the initial state, run the stages, assemble the [`TrainResult`][cgmpinn_jax.TrainResult]).

The loop over stages and chunks is `run_stages`; the
compiled programs come from a [`CompileCache`][cgmpinn_jax.CompileCache].
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import metrics as metrics_lib
from ..config import Hyper, TrainConfig
from ..methods import Method, build_model, get_method
from ..problems import Problem, get_problem, validate_problem
from ..problems.hard import HardConstrained
from . import _checkpoint as ckpt_lib
from ._compile import COMPILE_CACHE, CompileCache
from ._engine import Engine, State, gn_form_note
from ._loop import CALL_SECONDS, Interrupted, RunOutput, reset_stage, run_stages
from ._objective import Trainable, init_coeffs
from ._precision import cast_floats, precision_scope
from ._recorder import ErrorTracker, Progress, member_history
from ._records import StageStatus, TrainResult
from ._network import network_choice
from ._schedule import Setup, resolve

__all__ = ["train", "init_state", "as_key"]


def as_key(key) -> tuple[jax.Array, int | None]:
    """``(PRNG key, seed or None)`` from an int seed or a JAX key; anything else is an error."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return jax.random.key(int(key)), int(key)
    if isinstance(key, jax.Array) and (
        jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        or (key.dtype == jnp.uint32 and key.shape == (2,))
    ):
        return key, None
    raise TypeError(
        "key must be an int seed or a JAX PRNG key (jax.random.key(...)), "
        f"got {type(key).__name__} {key!r}"
    )


def init_state(setup: Setup, eng: Engine, key: jax.Array) -> tuple[State, Any]:
    """Training points and the initial state from one key (pure; vmappable over keys)."""
    k_pts, k_net, k_bal = jax.random.split(key, 3)
    batch = setup.problem.sample(k_pts)
    model = build_model(
        setup.problem,
        setup.method,
        k_net,
        width=setup.width,
        depth=setup.depth,
        network=setup.network,
    )
    dtype = jnp.zeros(()).dtype
    log_vars = jnp.zeros(setup.n_terms, dtype) if setup.method.loss.learnable_balance else None
    params, _ = eqx.partition(
        Trainable(model, log_vars, init_coeffs(setup.problem, dtype)), eqx.is_array
    )
    state = State(
        params=params,
        opt=eng.adam_init(params),
        wstate=eng.weighting_init(batch["pde"][0].shape[0]),
        bstate=eng.balancing.init(k_bal),
        lambdas=jnp.ones(setup.n_terms, dtype),
        best_params=params,
        best_raw=jnp.asarray(jnp.inf, dtype),
        status=jnp.int32(0),
        stall=jnp.int32(0),
    )
    return state, batch


def _start_from(state: State, init, eng: Engine) -> State:
    """``state`` with its network replaced by ``init``'s (a `TrainResult` or a model), cast to
    the run's dtypes; a network of another architecture is an error naming the difference."""
    model = init.model if isinstance(init, TrainResult) else init
    if not isinstance(model, eqx.Module):
        raise TypeError(
            "train: init must be a TrainResult or its model (an equinox Module), "
            f"got {type(init).__name__}"
        )
    new, old = eqx.partition(model, eqx.is_array)[0], state.params.model
    # PyTreeDef's != is unknown to mypy (jaxlib's stub)
    if jax.tree_util.tree_structure(new) != jax.tree_util.tree_structure(old) or any(  # type: ignore[operator]
        np.shape(a) != np.shape(b)
        for a, b in zip(jax.tree_util.tree_leaves(old), jax.tree_util.tree_leaves(new))
    ):
        shapes = lambda t: [tuple(np.shape(a)) for a in jax.tree_util.tree_leaves(t)]  # noqa: E731
        raise ValueError(
            f"train: init's network is not this run's: parameter shapes {shapes(new)}, "
            f"expected {shapes(old)} (same problem, method, width and depth)"
        )
    new = jax.tree_util.tree_map(lambda a, b: jnp.asarray(b, a.dtype), old, new)
    params = eqx.tree_at(lambda t: t.model, state.params, new)
    return eqx.tree_at(
        lambda s: (s.params, s.opt, s.best_params), state, (params, eng.adam_init(params), params)
    )


def _unknowns_result(problem, raw):
    from ..inverse import unknowns_result

    return unknowns_result(problem, raw)


def train(
    problem: Problem | str,
    method: Method | str = "cgmpinn",
    config: TrainConfig | None = None,
    *,
    key: jax.Array | int = 1224,
    quiet: bool = False,
    snapshot_refreshes: int = 4,
    print_fn: Callable[[str], None] | None = None,
    cache: CompileCache = COMPILE_CACHE,
    prefetch_compile: bool = False,
    track_error_every: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: float = 60.0,
    resume: str | Path | None = None,
    init: Any = None,
    call_seconds: float | None = CALL_SECONDS,
    network: Any = None,
) -> TrainResult:
    """Train ``method`` on ``problem`` with Adam, then the second stage (or the stages
    ``config.stages`` names).

    The training points and the initial network are drawn from ``key``; each stage runs as a
    loop of compiled calls, with a refresh of the per-point weights every ``k_upd`` steps, and
    the result holds the trained network, its errors on the problem's test grid and the
    per-step histories.

    Args:
        problem: a [`Problem`][cgmpinn_jax.Problem] or a registry name (a key of
            [`PROBLEMS`][cgmpinn_jax.PROBLEMS], e.g. ``"poisson1d"``).
        method: a [`Method`][cgmpinn_jax.Method] or a registry name (a key of
            [`METHODS`][cgmpinn_jax.METHODS], e.g. ``"cgmpinn"``, ``"pinn"``).
        config: options ([`TrainConfig`][cgmpinn_jax.TrainConfig]); ``None``: the defaults,
            the reference's settings.
        key: an int seed or a JAX PRNG key; split into (points, network, ReLoBRaLo) keys.
        quiet: no progress output.
        snapshot_refreshes: keep the per-point weights of this many refreshes (evenly
            spaced) in the history, for plots.
        print_fn: where progress lines go (default: stderr).
        cache: the [`CompileCache`][cgmpinn_jax.CompileCache] to use.
        prefetch_compile: compile the second stage's programs in a background thread while
            the Adam stage runs (results are the same either way; ``compile_seconds`` then
            counts only the time spent waiting for them). Off by default in the library (no
            thread is started unasked); the ``cgmpinn-jax`` command turns it on. The run
            waits less for compilation and takes no longer as a whole (measured in
            ``benchmarks/results/compile_time.md``).
        track_error_every: record the relative e2 on the problem's test grid, with the
            seconds since the run started, in ``history.error_k`` / ``error_seconds`` /
            ``error_rel_e2``: ``0`` at every chunk end (weight refresh), ``n > 0`` also every
            ``n`` steps inside a chunk (the same steps, one host round-trip per piece; the
            evaluations' own time is in the seconds). ``None`` (default): not recorded.
        progress: called with a [`Progress`][cgmpinn_jax.training.Progress] after every chunk
            (stage, steps done of the budget, loss, seconds, an inverse run's coefficients);
            the command line draws its progress bars from it.
        checkpoint_dir: write checkpoints of the run into ``checkpoint_dir/checkpoints/``
            at call boundaries (each one a folder ``ckpt-<n>`` with the arrays, the histories
            and a ``meta.json``; the newest two are kept), and stop cleanly on Ctrl-C: a
            checkpoint at the next call boundary, then
            [`TrainingInterrupted`][cgmpinn_jax.TrainingInterrupted] (with the best model so
            far in ``.result``) instead of a bare KeyboardInterrupt (a process that ignores
            SIGINT is left as it is). A run that reaches its time limit
            (``config.time_limit``) writes one there, from which a resume with a larger
            limit continues.
        checkpoint_every: at most one checkpoint every this many seconds (``0``: at every
            call boundary).
        resume: a folder written with ``checkpoint_dir``: continue that run from its last
            good checkpoint; the result is bit-identical to an uninterrupted run on the same
            machine. The problem, method, config and key must be the run's (a checkpoint of
            another run is refused, naming the differences; [`resume`][cgmpinn_jax.resume]
            rebuilds them from the checkpoint). Checkpoints continue into the same folder
            unless ``checkpoint_dir`` says otherwise.
        init: start from this network instead of a fresh one: a
            [`TrainResult`][cgmpinn_jax.TrainResult] or its
            ``model``, of the same architecture (problem, method, width, depth). Everything
            else starts afresh (Adam's moments, the weights, the balancing), with the points
            the key draws. With ``stages=(LBFGS(),)`` (or an Adam stage of 0 steps) it runs
            only L-BFGS, e.g. on more points than the Adam stage saw
            (docs/problems-from-data.md). Not with ``resume``.
        network: the network, when not the method's own (it replaces the MLP of the methods
            that have one): a built-in choice's name (a key of
            [`NETWORKS`][cgmpinn_jax.nn.NETWORKS]), ``"package.module:factory"``, a
            [`NetworkOptions`][cgmpinn_jax.NetworkOptions], a factory
            ``(key, in_dim, out_dim) -> equinox.Module`` or an equinox module (used as it
            is; every seed then starts from it). A name, or a factory importable by its
            module and name, goes into ``config.network`` and is saved with the model; any
            other factory or module is not, and ``load_model`` and ``resume`` then need it
            again (``network=``). Same as setting ``config.network``.
        call_seconds: each compiled call of a stage's loop lasts about this many seconds
            (30), sized from the measured time of the stage's first calls; progress lines,
            checkpoints, Ctrl-C and the time limits are served between calls, so none waits
            for a chunk (``k_upd`` steps) of slow iterations. The same steps bit for bit
            whatever it is; ``None``: one call per chunk.

    Returns:
        The run's [`TrainResult`][cgmpinn_jax.TrainResult]: the trained model, the metrics on
            the test grid, e_loss, the per-step histories, the stage statuses, and the compile
            and run seconds.

    Raises:
        TypeError: ``config`` is not a [`TrainConfig`][cgmpinn_jax.TrainConfig], ``key`` is
            neither an int nor a PRNG key, or ``init`` is not a network.
        ValueError: an invalid problem or argument (the message names it), ``init`` of another
            architecture, or ``init`` and ``resume`` together.
        CheckpointError: ``resume`` holds no usable checkpoint of this run.
        TrainingInterrupted: Ctrl-C during a run with ``checkpoint_dir``.

    Examples:
        >>> import cgmpinn_jax as cj
        >>> cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=0)))
        >>> res = cj.train("poisson1d", "pinn", cfg, quiet=True)
        >>> res.metrics.rel_e2 > 0
        True
    """
    problem = get_problem(problem)
    validate_problem(problem)  # before anything is compiled
    method = get_method(method)
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    config, net_object = network_choice(network, config)
    setup = resolve(problem, method, config, network_object=net_object)
    if track_error_every is not None and (
        not isinstance(track_error_every, (int, np.integer))
        or isinstance(track_error_every, bool)
        or track_error_every < 0
    ):
        raise ValueError(
            f"track_error_every must be None or an int >= 0, got {track_error_every!r}"
        )
    _check_call_seconds(call_seconds)
    t_call = time.perf_counter()
    emit = (
        (lambda s: None)
        if quiet
        else (print_fn or (lambda s: print(s, file=sys.stderr, flush=True)))
    )
    key, seed = as_key(key)
    if init is not None and resume is not None:
        raise ValueError(
            "train: give init (a network to start from) or resume (a checkpoint), not both"
        )
    if checkpoint_dir is None and resume is not None:
        checkpoint_dir = resume
    ident: dict | None = None
    checkpointer: ckpt_lib.Checkpointer | None = None
    if checkpoint_dir is not None:
        ident = ckpt_lib.identity(problem, method, config, key)
        checkpointer = ckpt_lib.Checkpointer(checkpoint_dir, ident, checkpoint_every, seed)
    with jax.default_matmul_precision("highest"), precision_scope(config.precision, "adam"):
        static, eng = cache.engine(setup)
        state, batch = init_state(setup, eng, key)
        if init is not None:
            state = _start_from(state, init, eng)
        for note in _start_notes(setup, eng, batch, state.params):
            emit(note)
        hyper = Hyper.from_config(config)
        snap = None
        if resume is not None:
            snap = ckpt_lib.load(
                resume,
                cast(dict, ident),  # resume sets checkpoint_dir, hence ident
                _templates(setup, eng, state, batch, hyper),
                scope=lambda stage, handed: precision_scope(
                    config.precision, setup.precision_part(stage, handed)
                ),
            )
            emit(
                f"[{problem.name}/{method.name}] resuming from {resume}: {snap.stage}, "
                f"chunk {snap.chunk}, {snap.done} steps of the stage done"
            )
        tracker = None if track_error_every is None else ErrorTracker(problem, static, t_call)
        try:
            with ckpt_lib.sigint_flag(checkpointer is not None) as interrupted:
                out = run_stages(
                    setup,
                    eng,
                    state,
                    batch,
                    hyper,
                    emit,
                    batched=False,
                    snapshot_refreshes=snapshot_refreshes,
                    cache=cache,
                    prefetch=prefetch_compile,
                    track=tracker,
                    track_every=int(track_error_every or 0),
                    progress=progress,
                    checkpoint=checkpointer,
                    resume=snap,
                    interrupted=interrupted,
                    call_seconds=call_seconds,
                )
        except Interrupted as stop:
            out = stop.out._replace(state=_best_so_far(stop.out.state))
            result = _result(problem, method, config, setup, static, eng, out, tracker, seed)
            emit(
                f"[{problem.name}/{method.name}] interrupted: checkpoint {stop.path}; best so far "
                f"rel_e2={result.metrics.rel_e2:.3e}; "
                f"resume with cj.resume({str(checkpoint_dir)!r})"
            )
            # Interrupted comes only from a checkpointer, hence a checkpoint_dir
            folder = cast("str | Path", checkpoint_dir)
            raise ckpt_lib.TrainingInterrupted(Path(folder), result) from None
    result = _result(problem, method, config, setup, static, eng, out, tracker, seed)
    if checkpointer is not None and checkpointer.written:
        emit(
            f"[{problem.name}/{method.name}] {checkpointer.written} checkpoint(s) in "
            f"{checkpointer.seconds:.2f}s -> {checkpointer.root}"
        )
    result.checkpoint_seconds = None if checkpointer is None else checkpointer.seconds
    result.time_limited = out.run_limit_hit
    if out.run_limit_hit:
        _emit_time_limit(emit, result, checkpointer, checkpoint_dir)
    _emit_done(emit, result, out)
    return result


def _start_notes(setup, eng, batch, params) -> list[str]:
    """The lines a run prints before training: the Gauss-Newton form's, and a hard constraint's."""
    notes = [gn_form_note(setup, eng.lsq, batch, params)]
    if isinstance(setup.problem, HardConstrained):
        notes.append(setup.problem.note)
    return [n for n in notes if n is not None]


def _check_call_seconds(call_seconds) -> None:
    if call_seconds is not None and (
        isinstance(call_seconds, bool)
        or not isinstance(call_seconds, (int, float))
        or not np.isfinite(call_seconds)
        or not call_seconds > 0
    ):
        raise ValueError(
            f"call_seconds must be None or a number of seconds > 0, got {call_seconds!r}"
        )


def _emit_time_limit(emit, result: TrainResult, checkpointer, checkpoint_dir) -> None:
    """The line of a run that stopped on its time limit: where its checkpoint is, how to go on."""
    where = (
        f"; checkpoint in {checkpointer.root}: "
        f"cj.resume({str(checkpoint_dir)!r}, time_limit=...) with a larger limit continues"
        if checkpointer is not None
        else ""
    )
    emit(
        f"[{result.problem.name}/{result.method.name}] time limit "
        f"{result.config.time_limit:g} s reached{where}"
    )


def _emit_done(emit, result: TrainResult, out: RunOutput) -> None:
    """The run's closing lines: its errors, and an inverse run's unknowns."""
    metrics, tag = result.metrics, f"[{result.problem.name}/{result.method.name}]"
    errors = (
        f"rel_e2={metrics.rel_e2:.3e} e2={metrics.e2:.3e} e_inf={metrics.e_inf:.3e}"
        if metrics.against == "exact" and not metrics.per_field
        else metrics.describe()
    )
    emit(
        f"{tag} done: {errors} e_loss={result.e_loss:.3e} "
        f"(compile {out.compile_seconds:.1f}s, run {out.run_seconds:.1f}s)"
    )
    if result.unknowns is not None:
        emit(
            f"{tag} unknowns: "
            + ", ".join(
                f"{n}={d['estimate']:.6g} (true {d['true']:.6g}, rel. error {d['rel_error']:.2e})"
                for n, d in result.unknowns.as_dict().items()
            )
        )


def _templates(setup: Setup, eng: Engine, state: State, batch, hyper: Hyper, batched: bool = False):
    """``template(stage, handed)``: the structure, shapes and dtypes of ``(state, batch,
    hyper, w)`` at a checkpoint's position (for reading it back); ``batched``: a sweep's,
    with a leading member axis."""
    w = eng.initial_w(state.lambdas.shape[:-1], batch["pde"][0].shape[-2], state.lambdas.dtype)
    initial = (state, batch, hyper, w)
    names = setup.stage_names

    def template(stage: str, handed: bool):
        i = names.index(stage)
        if not handed:  # the arrays as the stage before left them
            return initial if i == 0 else template(names[i - 1], True)
        if stage == "adam":
            return initial
        s, b, h, w2 = initial
        if setup.config.precision == "mixed":
            s, b, h, w2 = cast_floats((s, b, h, w2), jnp.zeros(()).dtype)
        init = jax.vmap(eng.init_stage(stage)) if batched else eng.init_stage(stage)
        opt = jax.eval_shape(init, s.params, w2, s.lambdas, b)
        return eqx.tree_at(lambda x: x.opt, reset_stage(s), opt), b, h, w2

    return template


def _best_so_far(state: State) -> State:
    """The interrupted stage's best parameters (by the unweighted loss), when it has any."""
    ok = jnp.isfinite(state.best_raw)
    params = jax.tree_util.tree_map(
        lambda b, p: jnp.where(ok, b, p), state.best_params, state.params
    )
    return eqx.tree_at(lambda s: s.params, state, params)


def _result(
    problem, method, config, setup, static, eng, out: RunOutput, tracker, seed
) -> TrainResult:
    with jax.default_matmul_precision("highest"), precision_scope(config.precision, "second"):
        trained = eqx.combine(out.state.params, static)
        metrics = metrics_lib.evaluate(problem, trained.model)
        e_loss = float(
            jax.jit(eng.objective)(out.state.params, out.w, out.state.lambdas, out.batch)[0]
        )
    result = TrainResult(
        problem=problem,
        method=method,
        config=config,
        model=trained.model,
        log_vars=None if trained.log_vars is None else np.asarray(trained.log_vars),
        metrics=metrics,
        e_loss=e_loss,
        history=member_history(out.history, 0, None if tracker is None else tracker.arrays()),
        statuses={name: StageStatus(int(out.statuses[name][0])) for name in setup.stage_names},
        compile_seconds=out.compile_seconds,
        run_seconds=out.run_seconds,
        k_upd=setup.k_upd,
        plan=setup.stages,
        relobralo=setup.relobralo_stages,
        seed=seed,
        batch=out.batch,
        unknowns=None if trained.coeffs is None else _unknowns_result(problem, trained.coeffs),
        stage_seconds=out.stage_seconds,
    )
    return result
