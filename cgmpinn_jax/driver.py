"""The host side: :func:`train`, the loop over chunks, and an explicit compile cache.

The host is touched once per chunk (k_upd steps): it calls the chunk's compiled programs
(the weight refresh, the second stage's re-basing, the stage's loop), collects its
:class:`~cgmpinn_jax.records.ChunkHistory` and prints progress. :class:`CompileCache` holds
the engines and the ahead-of-time compiled programs keyed by the run's :class:`Setup` and the
arguments' shapes, dtypes and shardings, so repeated runs (seeds, tests, benchmarks, sweeps)
reuse compilations; :data:`COMPILE_CACHE` is the one :func:`train` and
:func:`~cgmpinn_jax.sweep` use unless given another.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import checkpoint as ckpt_lib
from . import metrics as metrics_lib
from . import taylor
from .config import Hyper, TrainConfig
from .engine import Engine, State, restore_best
from .methods import Method, build_model, get_method
from .objective import Trainable, init_coeffs
from .precision import cast_floats, precision_scope
from .problems import Problem, get_problem, validate_problem
from .records import ChunkHistory, History, StageStatus, TrainResult
from .schedule import Setup, resolve

__all__ = ["train", "CompileCache", "COMPILE_CACHE", "RunOutput", "Progress", "init_state", "run_stages", "member_history",
           "to_host", "as_key"]


class CompileCache:
    """Engines and AOT-compiled chunk functions, with the seconds spent compiling.

    >>> cache = CompileCache(max_entries=8)
    >>> len(cache)
    0
    """

    def __init__(self, max_entries: int = 64):
        self.max_entries = max_entries
        self._engines: dict = {}
        self._compiled: dict = {}
        self._pending: dict = {}  # key -> Future of (compiled, seconds), from prefetch()
        self._executor = None
        #: seconds the background compilation took, when the last :meth:`compiled` call
        #: waited for a :meth:`prefetch` (else None)
        self.last_background_seconds: float | None = None
        #: ``(chunk name, seconds tracing and lowering, seconds in XLA's compiler)`` of every
        #: compilation, in order (``benchmarks/compile_time.py`` reads it)
        self.timings: list[tuple[str, float, float]] = []

    def __len__(self) -> int:
        return len(self._compiled)

    def clear(self) -> None:
        for f in self._pending.values():
            f.result()  # let a background compilation finish rather than orphan it
        self._pending.clear()
        self._engines.clear()
        self._compiled.clear()
        self.timings.clear()

    def engine(self, setup: Setup) -> tuple[Any, Engine]:
        """``(static, engine)``: the non-array part of the trainable (the same for every key)
        and the engine of ``setup``."""
        if setup not in self._engines:
            if len(self._engines) >= self.max_entries:
                self.clear()
            model = jax.eval_shape(lambda k: build_model(setup.problem, setup.method, k, width=setup.width, depth=setup.depth),
                                   jax.random.key(0))
            log_vars = jnp.zeros(setup.n_terms) if setup.method.loss.learnable_balance else None
            trainable = Trainable(model, log_vars, init_coeffs(setup.problem))
            _, static = eqx.partition(trainable, eqx.is_array)
            # the model comes from eval_shape: its parameters are ShapeDtypeStructs
            shaped = [x for x in jax.tree_util.tree_leaves(trainable) if isinstance(x, (jax.Array, jax.ShapeDtypeStruct))]
            n_params = sum(int(np.prod(x.shape)) for x in shaped)
            self._engines[setup] = (static, Engine(setup, static, n_params))
        return self._engines[setup]

    @staticmethod
    def _key(setup: Setup, name: str, args: tuple, batched: bool) -> tuple:
        leaves, tree = jax.tree_util.tree_flatten(args)
        sig = tuple((np.shape(x), jnp.result_type(x), str(getattr(x, "sharding", None))) for x in leaves)
        # the derivative fast path is chosen at trace time: its switches key the cache too
        return (setup, name, batched, tree, sig, bool(jax.config.jax_enable_x64), taylor.fast_path_enabled(),
                taylor.stacking())

    def _compile(self, name: str, fn: Callable, args: tuple):
        t0 = time.perf_counter()
        lowered = jax.jit(fn).lower(*args)
        t1 = time.perf_counter()
        exe = lowered.compile()
        t2 = time.perf_counter()
        self.timings.append((name, t1 - t0, t2 - t1))
        return exe, t2 - t0

    def compiled(self, setup: Setup, name: str, fn: Callable, args: tuple, *, batched: bool) -> tuple[Callable, float]:
        """``(compiled fn, seconds the caller waited for it)``, compiled once per signature
        (a compilation started by :meth:`prefetch` is waited for, not repeated)."""
        key = self._key(setup, name, args, batched)
        if key in self._compiled:
            self.last_background_seconds = None  # nothing was compiled or waited for by this call
            return self._compiled[key], 0.0
        pending = self._pending.pop(key, None)
        if pending is not None:
            t0 = time.perf_counter()
            exe, background = pending.result()
            self._compiled[key] = exe
            self.last_background_seconds = background
            return exe, time.perf_counter() - t0
        exe, seconds = self._compile(name, fn, args)
        self._compiled[key] = exe
        self.last_background_seconds = None
        return exe, seconds

    def prefetch(self, setup: Setup, name: str, fn: Callable, args: tuple, *, batched: bool) -> None:
        """Start compiling ``fn`` for ``args`` in a background thread; a later
        :meth:`compiled` call with the same signature waits for it. XLA's compiler releases
        the GIL, so the compilation overlaps whatever the caller runs meanwhile (the Adam
        stage, in :func:`train`). The thread re-enters the caller's jax precision settings
        (``jax_enable_x64``, the default matmul precision: thread-local in jax) and its
        context variables (the derivative fast-path switches), so it traces the same program
        the caller would; ``tests/test_train.py`` checks the results are bit-identical."""
        import concurrent.futures
        import contextlib
        import contextvars

        key = self._key(setup, name, args, batched)
        if key in self._compiled or key in self._pending:
            return
        x64, matmul = bool(jax.config.jax_enable_x64), jax.config.jax_default_matmul_precision
        ctx = contextvars.copy_context()

        def work():
            mm = contextlib.nullcontext() if matmul is None else jax.default_matmul_precision(matmul)
            with jax.enable_x64(x64), mm:
                return ctx.run(self._compile, name, fn, args)

        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgmpinn-compile")
        self._pending[key] = self._executor.submit(work)


COMPILE_CACHE = CompileCache()


def as_key(key) -> tuple[jax.Array, int | None]:
    """``(PRNG key, seed or None)`` from an int seed or a JAX key; anything else is an error."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return jax.random.key(int(key)), int(key)
    if isinstance(key, jax.Array) and (jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
                                       or (key.dtype == jnp.uint32 and key.shape == (2,))):
        return key, None
    raise TypeError(f"key must be an int seed or a JAX PRNG key (jax.random.key(...)), got {type(key).__name__} {key!r}")


def init_state(setup: Setup, eng: Engine, key: jax.Array) -> tuple[State, Any]:
    """Training points and the initial state from one key (pure; vmappable over keys)."""
    k_pts, k_net, k_bal = jax.random.split(key, 3)
    batch = setup.problem.sample(k_pts)
    model = build_model(setup.problem, setup.method, k_net, width=setup.width, depth=setup.depth)
    dtype = jnp.zeros(()).dtype
    log_vars = jnp.zeros(setup.n_terms, dtype) if setup.method.loss.learnable_balance else None
    params, _ = eqx.partition(Trainable(model, log_vars, init_coeffs(setup.problem, dtype)), eqx.is_array)
    state = State(
        params=params, opt=eng.adam_init(params), wstate=eng.weighting_init(batch["pde"][0].shape[0]),
        bstate=eng.balancing.init(k_bal), lambdas=jnp.ones(setup.n_terms, dtype), best_params=params,
        best_raw=jnp.asarray(jnp.inf, dtype), status=jnp.int32(0), stall=jnp.int32(0),
    )
    return state, batch


def to_host(x) -> np.ndarray:
    """The whole of ``x`` as a numpy array, also when its shards live in other processes
    (multi-host sweeps: gathered with ``process_allgather``; every process must call this)."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


#: the programs of a chunk, as the progress lines name them when they compile
_PROGRAMS = {"refresh": "the weight refresh", "rebase": "the second stage's re-basing",
             "adam": "the adam chunk", "lbfgs": "the lbfgs chunk"}


STAGES = ("adam", "lbfgs")


class _Interrupted(Exception):
    """Ctrl-C at a chunk boundary: the checkpoint written and the run's output so far."""

    def __init__(self, path, out: "RunOutput"):
        super().__init__(str(path))
        self.path, self.out = path, out


class RunOutput(NamedTuple):
    state: State
    w: jax.Array
    batch: Any  # the training points (cast to the second stage's dtype in a mixed run)
    history: dict  # arrays with a leading member axis
    statuses: dict  # stage -> (B,) int array
    compile_seconds: float
    run_seconds: float


class _Recorder:
    """Collects chunk histories (leading member axis) into the arrays of :class:`History`."""

    def __init__(self, lead):
        self.lead = lead
        self.rows: dict = {k: [] for k in ("k", "loss", "terms", "raw", "lambdas", "evals")}
        self.refresh: dict = {k: [] for k in ("k", "tau", "spread", "status")}
        self.weights: list = []
        self.coeffs: list = []  # inverse problems: (k, (B, U) coefficient values) at chunk ends

    def add_coeffs(self, problem, k: int, params) -> None:
        """The unknown coefficients' values after step ``k`` (inverse problems only)."""
        if getattr(params, "coeffs", None) is not None:
            self.coeffs.append((k, self.lead(problem.coefficient_array(params.coeffs))))

    def add(self, chunk, h: ChunkHistory, w) -> tuple[int, np.ndarray]:
        n_done = self.lead(h.n_done).reshape(-1)
        n = int(n_done.max())
        past = np.arange(n)[None, :] >= n_done[:, None]  # steps a stopped member did not take
        self.rows["k"].append(np.arange(chunk.first_k, chunk.first_k + n))
        for name in ("loss", "terms", "raw", "lambdas"):
            arr = self.lead(getattr(h, name))[:, :n].astype(float)
            arr[past] = np.nan
            self.rows[name].append(arr)
        evals = self.lead(h.evals)[:, :n].astype(np.int64)
        evals[past] = 0
        self.rows["evals"].append(evals)
        self.refresh["k"].append(chunk.tau_k)
        for name, field in (("tau", "tau"), ("spread", "spread"), ("status", "weighting_status")):
            self.refresh[name].append(self.lead(getattr(h, field)).reshape(-1))
        self.weights.append(self.lead(w))
        return n, n_done

    def history(self, B: int, C: int, snapshot_refreshes: int) -> dict:
        cat = lambda xs, axis, shape: np.concatenate(xs, axis=axis) if xs else np.zeros(shape)
        stack = lambda xs, dt=float: np.stack(xs, 1).astype(dt) if xs else np.zeros((B, 0), dt)
        n_snap = len(self.weights)
        idx = sorted(set(np.linspace(0, n_snap - 1, min(snapshot_refreshes, n_snap)).round().astype(int).tolist())) if n_snap else []
        coeffs = {} if not self.coeffs else dict(
            coeff_k=np.asarray([k for k, _ in self.coeffs], np.int64),
            coeffs=np.stack([v.reshape(B, -1) for _, v in self.coeffs], 1).astype(float))
        return dict(
            **coeffs,
            k=cat(self.rows["k"], 0, (0,)).astype(np.int64),
            loss=cat(self.rows["loss"], 1, (B, 0)),
            terms=cat(self.rows["terms"], 1, (B, 0, C)),
            raw=cat(self.rows["raw"], 1, (B, 0, C)),
            lambdas=cat(self.rows["lambdas"], 1, (B, 0, C)),
            evals=cat(self.rows["evals"], 1, (B, 0)).astype(np.int64),
            refresh_k=np.asarray(self.refresh["k"], np.int64),
            refresh_tau=stack(self.refresh["tau"]),
            refresh_spread=stack(self.refresh["spread"]),
            refresh_status=stack(self.refresh["status"], np.int64),
            snapshots={i: self.weights[i] for i in idx},
        )


def _reset_stage(state: State) -> State:
    return eqx.tree_at(
        lambda s: (s.status, s.stall, s.best_raw, s.best_params), state,
        (jnp.zeros_like(state.status), jnp.zeros_like(state.stall), jnp.full_like(state.best_raw, jnp.inf), state.params),
    )


class Progress(NamedTuple):
    """Where a run is, after a chunk: for progress bars (``train(progress=...)``)."""

    stage: str  # "adam" or "lbfgs" (the second stage, whichever member)
    done: int  # steps of this stage run so far
    total: int  # the stage's budget
    loss: float  # the objective at the last step (median over members in a sweep)
    elapsed: float  # seconds in this stage so far
    coeffs: dict | None = None  # inverse problems: the unknown coefficients' current values


def format_seconds(s: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def _progress(emit, tag, stage, k, tau, rec: _Recorder, names, batched, weighted=True, where: str = ""):
    """One progress line; tau and the weights' spread only for a method that weights its points."""
    cur = f" tau={tau:.3f}" if weighted else ""
    if batched:
        emit(f"{tag} {stage:5s} k={k:6d}{cur} median loss over {rec.rows['loss'][-1].shape[0]} runs="
             f"{np.nanmedian(rec.rows['loss'][-1][:, -1]):.3e}{where}")
    else:
        terms = " ".join(f"{n}={float(v):.3e}" for n, v in zip(names, rec.rows["raw"][-1][0, -1]))
        spread = f" w_spread={rec.refresh['spread'][-1][0]:.2f}" if weighted else ""
        emit(f"{tag} {stage:5s} k={k:6d}{cur} loss={rec.rows['loss'][-1][0, -1]:.3e} {terms}{spread}{where}")


def run_stages(setup: Setup, eng: Engine, state: State, batch, hyper: Hyper, emit, *, batched: bool,
               snapshot_refreshes: int = 4, cache: CompileCache = COMPILE_CACHE, prefetch: bool = False,
               track: Callable[[int, Any], None] | None = None, track_every: int = 0,
               progress: Callable[["Progress"], None] | None = None, checkpoint: "ckpt_lib.Checkpointer | None" = None,
               resume: "ckpt_lib.Snapshot | None" = None, interrupted: Callable[[], bool] = lambda: False) -> RunOutput:
    """The host loop over chunks. ``batched``: state, batch and hyper have a leading member
    axis and every chunk is vmapped over it (a sweep); otherwise one run. Each stage runs in
    its precision scope (:mod:`cgmpinn_jax.precision`); a mixed run casts at the hand-off.

    A chunk is up to three compiled programs called one after the other: the weight refresh
    (:meth:`Engine.begin_chunk`, one program for both stages: compiled once, not inside
    each stage's program), for the second stage the re-basing of its stored point
    (:meth:`Engine.rebase`), and the stage's loop. ``prefetch`` (single runs with both
    stages): the second stage's programs compile in a background thread while the Adam
    stage runs (:meth:`CompileCache.prefetch`); it changes no result.

    ``track(k, params)`` (single runs) is called at every chunk end and, with
    ``track_every > 0``, every ``track_every`` steps inside a chunk: the stage's loop is then
    called in pieces (the same steps bit for bit; one host round-trip per piece).

    ``progress(Progress)`` is called after every chunk (a command-line progress bar).

    ``checkpoint`` (a :class:`~cgmpinn_jax.checkpoint.Checkpointer`) writes a checkpoint at a
    chunk boundary when it is due or when ``interrupted()`` (Ctrl-C) turned true, and then
    raises :class:`_Interrupted`; ``resume`` (a :class:`~cgmpinn_jax.checkpoint.Snapshot`)
    continues a run from one, bit for bit (the state, batch, hyper and ``w`` arguments are
    then replaced by the snapshot's)."""
    precision = setup.config.precision
    vm = (lambda f, axes: jax.vmap(f, in_axes=axes)) if batched else (lambda f, axes: f)
    lead = to_host if batched else (lambda x: np.asarray(x)[None])
    compile_s = 0.0

    def call(name, fn, *args):
        nonlocal compile_s
        compiled, seconds = cache.compiled(setup, name, fn, args, batched=batched)
        compile_s += seconds
        background = cache.last_background_seconds
        label = _PROGRAMS.get(name)
        if label and background is not None:
            emit(f"{tag} compiled {label} in the background in {background:.1f}s (waited {seconds:.1f}s)")
        elif seconds > 0.0 and label:  # compile time is real time: say where it went
            emit(f"{tag} compiled {label} in {seconds:.1f}s")
        return compiled(*args)

    begin = vm(eng.begin_chunk, (0, 0, 0, 0, None))
    rebase = vm(eng.rebase, 0)
    loop = {"adam": vm(eng.adam_steps, (0, 0, 0, 0, 0, None)), "lbfgs": vm(eng.second_steps, (0, 0, 0, 0, 0, None))}

    def chunk_programs(stage, state, batch, hyper, w, tau_k, n_steps):
        """``[(name, fn, args)]`` of one chunk, with ``w`` and the history of the refresh's
        shapes (for compiling in the background; the values do not matter)."""
        h0 = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(
            begin, state.params, state.wstate, batch, hyper, tau_k)[2])
        out = [("refresh", begin, (state.params, state.wstate, batch, hyper, tau_k))]
        if stage == "lbfgs" and eng.rebases:
            out.append(("rebase", rebase, (state.params, state.opt, w, state.lambdas, batch)))
        return out + [(stage, loop[stage], (state, batch, hyper, w, h0, n_steps))]

    def run_chunk(stage, state, batch, hyper, tau_k, n_steps, first_k):
        wstate, w, h0 = call("refresh", begin, state.params, state.wstate, batch, hyper, tau_k)
        state = eqx.tree_at(lambda s: s.wstate, state, wstate)
        if stage == "lbfgs" and eng.rebases:
            opt = call("rebase", rebase, state.params, state.opt, w, state.lambdas, batch)
            state = eqx.tree_at(lambda s: s.opt, state, opt)
        if track is None or track_every <= 0:
            return call(stage, loop[stage], state, batch, hyper, w, h0, n_steps)
        h, n_total = h0, int(n_steps)
        for end in list(range(track_every, n_total, track_every)) + [n_total]:
            state, w, h = call(stage, loop[stage], state, batch, hyper, w, h, jnp.int32(end))
            if int(h.n_done) < end:  # the stage stopped inside this piece
                break
            if end < n_total:
                track(first_k + end - 1, state.params)
        return state, w, h

    def hand_off(stage, state, batch, hyper, w):
        """The stage's starting point, inside its precision scope: a mixed run's casts, the
        guards reset, and for the second stage its lambdas and optimizer state."""
        if stage == "lbfgs" and precision == "mixed":
            state, batch, hyper, w = cast_floats((state, batch, hyper, w), jnp.zeros(()).dtype)
        state = _reset_stage(state)
        if stage == "lbfgs":
            if not setup.uses_relobralo("lbfgs"):
                state = eqx.tree_at(lambda s: s.lambdas, state, jnp.ones_like(state.lambdas))
            opt = call("second_init", vm(eng.init_second, 0), state.params, w, state.lambdas, batch)
            state = eqx.tree_at(lambda s: s.opt, state, opt)
        return state, batch, hyper, w

    rec, statuses = _Recorder(lead), {}
    tag = f"[{setup.problem.name}/{setup.method.name}]"
    t_start = time.perf_counter()
    w = jnp.ones(state.lambdas.shape[:-1] + (batch["pde"][0].shape[-2],), state.lambdas.dtype)
    if resume is None:
        rec.add_coeffs(setup.problem, 0, state.params)
    else:
        state, batch, hyper, w = resume.arrays
        rows = ckpt_lib.restore_recorder(rec, resume.history)
        if track is not None and rows is not None:
            track.rows[:] = rows
        statuses = dict(resume.statuses)
        compile_s, t_start = resume.compile_seconds, time.perf_counter() - resume.elapsed
    plan = {stage: [c for c in setup.schedule() if c.stage == stage] for stage in STAGES}

    def save_point(stage, chunk, handed, done):
        """A checkpoint before chunk ``chunk`` of ``stage`` when due or after Ctrl-C; then,
        after Ctrl-C, stop (raise :class:`_Interrupted`)."""
        stop = checkpoint is not None and interrupted()
        if checkpoint is None or not (stop or checkpoint.due()):
            return
        jax.block_until_ready(state)
        path = checkpoint.write(ckpt_lib.Snapshot(
            arrays=(state, batch, hyper, w), history=ckpt_lib.recorder_arrays(rec, getattr(track, "rows", None)),
            stage=stage, chunk=chunk, handed=handed, done=done, statuses=statuses, compile_seconds=compile_s,
            elapsed=time.perf_counter() - t_start))
        if stop:
            cut = np.full(lead(state.status).shape, int(StageStatus.INTERRUPTED))
            st = {s: statuses[s] if s in statuses and s != stage else cut for s in STAGES}
            raise _Interrupted(path, RunOutput(state, w, batch, rec.history(lead(state.status).shape[0], setup.n_terms,
                                                                            snapshot_refreshes), st, compile_s,
                                               time.perf_counter() - t_start - compile_s))

    if prefetch and resume is None and not batched and plan["adam"] and plan["lbfgs"]:
        # the hand-off maps the initial state to arguments of the shapes, dtypes and
        # placements the second stage will get, so its programs can compile while Adam runs
        with precision_scope(precision, "second"):
            s2, b2, h2, w2 = hand_off("lbfgs", state, batch, hyper, w)
            for name, fn, args in chunk_programs("lbfgs", s2, b2, h2, w2, jnp.int32(0), jnp.int32(0)):
                cache.prefetch(setup, name, fn, args, batched=False)
            del s2, b2, h2, w2, args
    first = 0 if resume is None else STAGES.index(resume.stage)
    for si, stage in enumerate(STAGES):
        chunks = plan[stage]
        if si < first:
            continue
        if not chunks:
            statuses[stage] = np.full(lead(state.status).shape, int(StageStatus.SKIPPED))
            continue
        here = resume if resume is not None and si == first else None
        with precision_scope(precision, "adam" if stage == "adam" else "second"):
            if here is None or not here.handed:
                state, batch, hyper, w = hand_off(stage, state, batch, hyper, w)
            total = sum(c.n_steps for c in chunks)
            t_stage, compile_at_start, done = time.perf_counter(), compile_s, 0 if here is None else here.done
            base = None  # (time, compile seconds, steps) after the stage's first chunk
            d_start = done
            for ci in range(0 if here is None else here.chunk, len(chunks)):
                chunk = chunks[ci]
                state, w, h = run_chunk(stage, state, batch, hyper, jnp.int32(chunk.tau_k), jnp.int32(chunk.n_steps),
                                        chunk.first_k)
                n, _ = rec.add(chunk, h, w)
                if n and track is not None:
                    track(chunk.first_k + n - 1, state.params)
                if n:
                    rec.add_coeffs(setup.problem, chunk.first_k + n - 1, state.params)
                done += n
                # time left in the stage from its pace so far, compilation not counted; from
                # the second chunk on, the first (one-off costs: hand-off, first call) is left out
                now = time.perf_counter()
                elapsed = now - t_stage
                t0, c0, d0 = base if base is not None and done > base[2] else (t_stage, compile_at_start, d_start)
                pace = (now - t0 - (compile_s - c0)) / max(done - d0, 1)
                if base is None and n:
                    base = (now, compile_s, done)
                where = (f" [{stage} {done}/{total}, {format_seconds(elapsed)},"
                         f" ~{format_seconds(pace * (total - done))} left]")
                if n:
                    _progress(emit, tag, stage, chunk.first_k + n - 1, float(rec.refresh["tau"][-1][0]), rec,
                              setup.problem.loss_terms, batched, setup.method.weights_points, where)
                if progress is not None:
                    coeffs = None
                    if getattr(state.params, "coeffs", None) is not None and not batched:
                        coeffs = dict(zip(setup.problem.unknown_names,
                                          np.asarray(setup.problem.coefficient_array(state.params.coeffs)).tolist()))
                    progress(Progress(stage, done, total, float(np.nanmedian(rec.rows["loss"][-1][:, -1])) if n
                                      else float("nan"), elapsed, coeffs))
                st = lead(state.status)
                if np.all(st != StageStatus.COMPLETED):
                    if not batched:
                        emit(f"{tag} {stage} stage stopped at k={chunk.first_k + n - 1}: {StageStatus(int(st[0])).name}")
                    break
                if ci + 1 < len(chunks):
                    save_point(stage, ci + 1, True, done)
            statuses[stage] = lead(state.status).astype(np.int64)
            state = call("restore_" + stage, vm(restore_best, 0), state)
            jax.block_until_ready(state.params)
        later = [s for s in STAGES[si + 1:] if plan[s]]
        if later:
            save_point(later[0], 0, False, 0)
    run_s = time.perf_counter() - t_start - compile_s
    history = rec.history(lead(state.status).shape[0], setup.n_terms, snapshot_refreshes)
    return RunOutput(state, w, batch, history, statuses, compile_s, run_s)


def _unknowns_result(problem, raw):
    from .inverse import unknowns_result

    return unknowns_result(problem, raw)


def member_history(h: dict, b: int, errors: dict | None = None) -> History:
    """Member ``b``'s :class:`History` from a run's history arrays (``errors``: the
    ``error_*`` arrays of a single run's :class:`_ErrorTracker`)."""
    per = {k: (v if k in ("k", "refresh_k", "coeff_k") else v[b]) for k, v in h.items() if k != "snapshots"}
    return History(**per, **(errors or {}), snapshots={i: v[b] for i, v in h["snapshots"].items()})


class _ErrorTracker:
    """``tracker(k, params)``: the relative e2 on the test grid after step ``k`` and the
    seconds since ``t0`` (one jitted forward pass of the test grid per call)."""

    def __init__(self, problem: Problem, static, t0: float):
        self.t0, self.rows = t0, []
        grid = problem.test_grid().points
        self._fns: dict = {}
        self._grid, self._problem, self._static = grid, problem, static

    def _fn(self):
        dtype = jnp.zeros(()).dtype  # the stage's precision scope
        if dtype not in self._fns:
            pts = jnp.asarray(self._grid, dtype)
            exact = self._problem.exact_on(pts)

            def rel(params):
                pred = jax.vmap(eqx.combine(params, self._static).model)(pts)
                return jnp.sqrt(jnp.mean((pred - exact) ** 2) / jnp.mean(exact**2))

            self._fns[dtype] = jax.jit(rel)
        return self._fns[dtype]

    def __call__(self, k: int, params) -> None:
        e = float(self._fn()(params))
        self.rows.append((k, time.perf_counter() - self.t0, e))

    def arrays(self) -> dict:
        a = np.asarray(self.rows, float).reshape(-1, 3)
        return {"error_k": a[:, 0].astype(np.int64), "error_seconds": a[:, 1], "error_rel_e2": a[:, 2]}


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
) -> TrainResult:
    """Train ``method`` on ``problem`` with Adam, then the second stage.

    Args:
        problem: a :class:`~cgmpinn_jax.problems.Problem` or a registry name.
        method: a :class:`~cgmpinn_jax.methods.Method` or a registry name.
        config: options (:class:`~cgmpinn_jax.config.TrainConfig`); defaults are the
            reference's settings.
        key: an int seed or a JAX PRNG key; split into (points, network, ReLoBRaLo) keys.
        quiet: no progress output.
        snapshot_refreshes: keep the per-point weights of this many refreshes (evenly
            spaced) in the history, for plots.
        print_fn: where progress lines go (default: stderr).
        cache: the :class:`CompileCache` to use.
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
        progress: called with a :class:`Progress` after every chunk (stage, steps done of
            the budget, loss, seconds, an inverse run's coefficients); the command line
            draws its progress bars from it.
        checkpoint_dir: write checkpoints of the run into ``checkpoint_dir/checkpoints/``
            at chunk boundaries (:mod:`cgmpinn_jax.checkpoint`), and stop cleanly on Ctrl-C:
            a checkpoint at the next chunk boundary, then :class:`TrainingInterrupted`
            (with the best model so far in ``.result``) instead of a bare KeyboardInterrupt.
        checkpoint_every: at most one checkpoint every this many seconds (``0``: at every
            chunk boundary).
        resume: a folder written with ``checkpoint_dir``: continue that run from its last
            good checkpoint; the result is bit-identical to an uninterrupted run on the same
            machine. The problem, method, config and key must be the run's (a checkpoint of
            another run is refused, naming the differences; :func:`resume` rebuilds them
            from the checkpoint). Checkpoints continue into the same folder unless
            ``checkpoint_dir`` says otherwise.

    Returns:
        :class:`~cgmpinn_jax.records.TrainResult` with the trained model, metrics on the test
        grid, e_loss, per-step histories, stage statuses, and compile / run seconds.

    Example:
        >>> import cgmpinn_jax as cj
        >>> res = cj.train("poisson1d", "pinn", cj.TrainConfig(adam_steps=20, lbfgs_steps=0), quiet=True)
        >>> res.metrics.rel_e2 > 0
        True
    """
    problem = get_problem(problem)
    validate_problem(problem)  # before anything is compiled
    method = get_method(method)
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    setup = resolve(problem, method, config)
    if track_error_every is not None and (not isinstance(track_error_every, (int, np.integer))
                                          or isinstance(track_error_every, bool) or track_error_every < 0):
        raise ValueError(f"track_error_every must be None or an int >= 0, got {track_error_every!r}")
    t_call = time.perf_counter()
    emit = (lambda s: None) if quiet else (print_fn or (lambda s: print(s, file=sys.stderr, flush=True)))
    key, seed = as_key(key)
    if checkpoint_dir is None and resume is not None:
        checkpoint_dir = resume
    ident = None if checkpoint_dir is None else ckpt_lib.identity(problem, method, config, key)
    checkpointer = None if checkpoint_dir is None else ckpt_lib.Checkpointer(checkpoint_dir, ident, checkpoint_every, seed)
    with jax.default_matmul_precision("highest"), precision_scope(config.precision, "adam"):
        static, eng = cache.engine(setup)
        state, batch = init_state(setup, eng, key)
        hyper = Hyper.from_config(config)
        snap = None
        if resume is not None:
            snap = ckpt_lib.load(resume, ident, _templates(setup, eng, state, batch, hyper),
                                 scope=lambda stage, handed: precision_scope(
                                     config.precision, "second" if stage == "lbfgs" and handed else "adam"))
            emit(f"[{problem.name}/{method.name}] resuming from {resume}: {snap.stage}, chunk {snap.chunk}, "
                 f"{snap.done} steps of the stage done")
        tracker = None if track_error_every is None else _ErrorTracker(problem, static, t_call)
        try:
            with ckpt_lib.sigint_flag(checkpointer is not None) as interrupted:
                out = run_stages(setup, eng, state, batch, hyper, emit, batched=False,
                                 snapshot_refreshes=snapshot_refreshes, cache=cache, prefetch=prefetch_compile,
                                 track=tracker, track_every=int(track_error_every or 0), progress=progress,
                                 checkpoint=checkpointer, resume=snap, interrupted=interrupted)
        except _Interrupted as stop:
            out = stop.out._replace(state=_best_so_far(stop.out.state))
            result = _result(problem, method, config, setup, static, eng, out, tracker, seed)
            emit(f"[{problem.name}/{method.name}] interrupted: checkpoint {stop.path}; best so far "
                 f"rel_e2={result.metrics.rel_e2:.3e}; resume with cj.resume({str(checkpoint_dir)!r})")
            raise ckpt_lib.TrainingInterrupted(Path(checkpoint_dir), result) from None
    result = _result(problem, method, config, setup, static, eng, out, tracker, seed)
    if checkpointer is not None and checkpointer.written:
        emit(f"[{problem.name}/{method.name}] {checkpointer.written} checkpoint(s) in {checkpointer.seconds:.2f}s "
             f"-> {checkpointer.root}")
    result.checkpoint_seconds = None if checkpointer is None else checkpointer.seconds
    metrics, e_loss = result.metrics, result.e_loss
    emit(f"[{problem.name}/{method.name}] done: rel_e2={metrics.rel_e2:.3e} e2={metrics.e2:.3e} e_inf={metrics.e_inf:.3e} "
         f"e_loss={e_loss:.3e} (compile {out.compile_seconds:.1f}s, run {out.run_seconds:.1f}s)")
    if result.unknowns is not None:
        emit(f"[{problem.name}/{method.name}] unknowns: " + ", ".join(
            f"{n}={d['estimate']:.6g} (true {d['true']:.6g}, rel. error {d['rel_error']:.2e})"
            for n, d in result.unknowns.as_dict().items()))
    return result


def _templates(setup: Setup, eng: Engine, state: State, batch, hyper: Hyper, batched: bool = False):
    """``template(stage, handed)``: the structure, shapes and dtypes of ``(state, batch,
    hyper, w)`` at a checkpoint's position (for reading it back); ``batched``: a sweep's,
    with a leading member axis."""
    w = jnp.ones(state.lambdas.shape[:-1] + (batch["pde"][0].shape[-2],), state.lambdas.dtype)
    init_second = jax.vmap(eng.init_second) if batched else eng.init_second
    initial = (state, batch, hyper, w)

    def template(stage: str, handed: bool):
        if not (stage == "lbfgs" and handed):
            return initial
        s, b, h, w2 = initial
        if setup.config.precision == "mixed":
            s, b, h, w2 = cast_floats((s, b, h, w2), jnp.zeros(()).dtype)
        opt = jax.eval_shape(init_second, s.params, w2, s.lambdas, b)
        return eqx.tree_at(lambda x: x.opt, _reset_stage(s), opt), b, h, w2

    return template


def _best_so_far(state: State) -> State:
    """The interrupted stage's best parameters (by the unweighted loss), when it has any."""
    ok = jnp.isfinite(state.best_raw)
    params = jax.tree_util.tree_map(lambda b, p: jnp.where(ok, b, p), state.best_params, state.params)
    return eqx.tree_at(lambda s: s.params, state, params)


def _result(problem, method, config, setup, static, eng, out: RunOutput, tracker, seed) -> TrainResult:
    with jax.default_matmul_precision("highest"), precision_scope(config.precision, "second"):
        trained = eqx.combine(out.state.params, static)
        metrics = metrics_lib.evaluate(problem, trained.model)
        e_loss = float(jax.jit(eng.objective)(out.state.params, out.w, out.state.lambdas, out.batch)[0])
    result = TrainResult(
        problem=problem, method=method, config=config, model=trained.model,
        log_vars=None if trained.log_vars is None else np.asarray(trained.log_vars), metrics=metrics, e_loss=e_loss,
        history=member_history(out.history, 0, None if tracker is None else tracker.arrays()), adam_status=StageStatus(int(out.statuses["adam"][0])),
        lbfgs_status=StageStatus(int(out.statuses["lbfgs"][0])), compile_seconds=out.compile_seconds,
        run_seconds=out.run_seconds, adam_steps=setup.adam_steps, lbfgs_steps=setup.lbfgs_steps, k_upd=setup.k_upd,
        relobralo=setup.relobralo_stages, seed=seed, batch=out.batch,
        unknowns=None if trained.coeffs is None else _unknowns_result(problem, trained.coeffs),
    )
    return result
