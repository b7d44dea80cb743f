"""The host loop over a run's stages and chunks (`run_stages`).

A run is a sequence of stages (``Setup.stage_names``, from ``TrainConfig.stages``: by default
Adam then L-BFGS); each is a list of
chunks from the run's schedule, one chunk per weight refresh. A chunk is up to three compiled
programs called one after the other: the weight refresh (`Engine.begin_chunk`, one
program for every stage), for a stage whose solver stores its point the re-basing of that
point (`Engine.rebase`), and the stage's loop (`Engine.stage_steps`, the same
loop for every stage). Between chunks the host records the chunk's history, reports progress,
checks the stage's status and writes a checkpoint when one is due.

The stage's loop is called in pieces that last about ``call_seconds`` each (`_CallSizer`,
from the measured time of the stage's calls so far): a piece runs the same iterations bit for
bit as the whole chunk would (the loop continues from the history the last piece returned),
so the weight refresh keeps its cadence and no result changes. Between pieces the host prints
a progress line when one is due, writes a checkpoint when one is due or after Ctrl-C, and
checks the time limits, so that none of them waits for a chunk whose iterations are slow.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..config import Hyper
from . import _checkpoint as ckpt_lib
from ._compile import COMPILE_CACHE, CompileCache
from ._engine import Engine, State, gn_shape, restore_best
from ._precision import cast_floats, precision_scope
from ._records import StageStatus
from ._recorder import ErrorTracker, Progress, Recorder, format_seconds, progress_line
from ._schedule import Setup

__all__ = ["RunOutput", "Interrupted", "run_stages", "reset_stage", "to_host", "CALL_SECONDS"]

#: the default length of one call of a stage's loop, in seconds (``train(..., call_seconds=...)``)
CALL_SECONDS = 30.0
#: without a time limit, a stage whose measured pace says it needs more than this many seconds
#: gets one line with the estimate and what cuts it
LONG_STAGE_SECONDS = 3600.0


def _program(kind: str, stage: str) -> str:
    """The compile cache's name of a stage's program (``kind``: "rebase", "init", "restore")."""
    return f"{kind}_{stage}"


def _label(name: str, stages: tuple) -> str | None:
    """How the progress lines name a program when it compiles (None: not named); ``stages``:
    the run's stage names."""
    if name == "refresh":
        return "the weight refresh"
    if name.startswith("rebase_"):
        return f"the {name[7:]} stage's re-basing"
    return f"the {name} chunk" if name in stages else None


class RunOutput(NamedTuple):
    state: State
    w: jax.Array
    batch: Any  # the training points (cast to the second stage's dtype in a mixed run)
    history: dict  # arrays with a leading member axis
    statuses: dict  # stage -> (B,) int array
    compile_seconds: float
    run_seconds: float
    stage_seconds: dict  # stage -> wall seconds without compilation (stages run in this call)
    run_limit_hit: bool = False  # the run stopped on its time limit (TrainConfig.time_limit)


class Interrupted(Exception):
    """Ctrl-C at a chunk boundary: the checkpoint written and the run's output so far."""

    def __init__(self, path, out: RunOutput):
        super().__init__(str(path))
        self.path, self.out = path, out


def to_host(x) -> np.ndarray:
    """The whole of ``x`` as a numpy array, also when its shards live in other processes
    (multi-host sweeps: gathered with ``process_allgather``; every process must call this)."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def reset_stage(state: State) -> State:
    """The guards of a new stage: status and stall counter zero, no best point yet."""
    return eqx.tree_at(
        lambda s: (s.status, s.stall, s.best_raw, s.best_params),
        state,
        (
            jnp.zeros_like(state.status),
            jnp.zeros_like(state.stall),
            jnp.full_like(state.best_raw, jnp.inf),
            state.params,
        ),
    )


class _Loop:
    """One run's host loop: the compiled programs, the run's arrays and its bookkeeping.

    The arrays ``(state, batch, hyper, w)`` live on the instance between chunks so that a
    checkpoint can be written at any chunk boundary."""

    def __init__(
        self,
        setup: Setup,
        eng: Engine,
        emit,
        *,
        batched: bool,
        cache: CompileCache,
        track,
        track_every: int,
        progress,
        checkpoint,
        interrupted,
        snapshot_refreshes: int,
        call_seconds: float | None = CALL_SECONDS,
    ):
        self.setup, self.eng, self.emit, self.batched, self.cache = setup, eng, emit, batched, cache
        self.track, self.track_every, self.progress = track, track_every, progress
        self.checkpoint, self.interrupted, self.snapshot_refreshes = (
            checkpoint,
            interrupted,
            snapshot_refreshes,
        )
        self.call_seconds = call_seconds
        self.precision = setup.config.precision
        vm = (lambda f, axes: jax.vmap(f, in_axes=axes)) if batched else (lambda f, axes: f)
        self.vm = vm
        self.lead = to_host if batched else (lambda x: np.asarray(x)[None])
        self.compile_s = 0.0
        self.tag = f"[{setup.problem.name}/{setup.method.name}]"
        self.stages = setup.stage_names
        self.begin = vm(eng.begin_chunk, (0, 0, 0, 0, None))
        self.rebase = {
            st: vm(functools.partial(eng.rebase, stage=st), 0) for st in self.stages if st != "adam"
        }
        self.loop = {
            st: vm(functools.partial(eng.stage_steps, st), (0, 0, 0, 0, 0, None))
            for st in self.stages
        }
        self.rec = Recorder(self.lead)
        self.statuses: dict[str, np.ndarray] = {}
        self.stage_seconds: dict[str, float] = {}
        self.t_start = time.perf_counter()
        self.last_line = self.t_start  # when the last progress line (or callback) went out
        self.sizer, self.stage_t0, self.estimated = _CallSizer(call_seconds), self.t_start, False
        # the run's time limit was reached: no later stage, no later checkpoint
        self.run_limit_hit = False
        # a Gauss-Newton stage's (rows, parameters, form), for the estimate's line
        self._shape = None

    # -- compiled programs ------------------------------------------------------------------

    def call(self, name, fn, *args):
        compiled, seconds = self.cache.compiled(self.setup, name, fn, args, batched=self.batched)
        self.compile_s += seconds
        background = self.cache.last_background_seconds
        label = _label(name, self.stages)
        if label and background is not None:
            self.emit(
                f"{self.tag} compiled {label} in the background in {background:.1f}s "
                f"(waited {seconds:.1f}s)"
            )
        elif seconds > 0.0 and label:  # compile time is real time: say where it went
            self.emit(f"{self.tag} compiled {label} in {seconds:.1f}s")
        return compiled(*args)

    def chunk_programs(self, stage, state, batch, hyper, w, tau_k, n_steps):
        """``[(name, fn, args)]`` of one chunk, with ``w`` and the history of the refresh's
        shapes (for compiling in the background; the values do not matter)."""
        h0 = jax.tree_util.tree_map(
            lambda x: jnp.zeros(x.shape, x.dtype),
            jax.eval_shape(self.begin, state.params, state.wstate, batch, hyper, tau_k)[2],
        )
        out = [("refresh", self.begin, (state.params, state.wstate, batch, hyper, tau_k))]
        if self.eng.rebases_in(stage):
            out.append(
                (
                    _program("rebase", stage),
                    self.rebase[stage],
                    (state.params, state.opt, w, state.lambdas, batch),
                )
            )
        return out + [(stage, self.loop[stage], (state, batch, hyper, w, h0, n_steps))]

    def run_chunk(self, stage, ci, chunk, arrays, done0, total, clock, piece=None):
        """Chunk ``ci`` of ``stage``: the refresh (and re-basing), then the stage's loop in
        calls of about ``call_seconds`` (`_CallSizer`) and at the error tracker's steps; between
        calls, `boundary` (progress, checkpoint, Ctrl-C, time limits). ``piece``: a resumed
        chunk's history so far (its refresh was done before the checkpoint; ``arrays`` holds
        its weights). Returns ``(state, w, history)``."""
        state, batch, hyper, w = arrays
        if piece is None:
            wstate, w, h = self.call(
                "refresh",
                self.begin,
                state.params,
                state.wstate,
                batch,
                hyper,
                jnp.int32(chunk.tau_k),
            )
            state = eqx.tree_at(lambda s: s.wstate, state, wstate)
            if self.eng.rebases_in(stage):
                opt = self.call(
                    _program("rebase", stage),
                    self.rebase[stage],
                    state.params,
                    state.opt,
                    w,
                    state.lambdas,
                    batch,
                )
                state = eqx.tree_at(lambda s: s.opt, state, opt)
            end = 0
        else:
            where = (
                w.sharding if self.batched and isinstance(w, jax.Array) else None
            )  # a sweep's member axis
            h = jax.tree_util.tree_map(
                lambda x: jnp.asarray(x) if where is None else jax.device_put(x, where), piece
            )
            end = int(np.max(self.lead(h.n_done)))
        loop, n_total = self.loop[stage], int(chunk.n_steps)
        tracking = self.track is not None and self.track_every > 0
        while end < n_total:
            nxt = min(n_total, end + self.sizer.size(n_total - end))
            if tracking:
                nxt = min(nxt, (end // self.track_every + 1) * self.track_every)
            t0, c0 = time.perf_counter(), self.compile_s
            state, w, h = self.call(stage, loop, state, batch, hyper, w, h, jnp.int32(nxt))
            jax.block_until_ready(h.n_done)
            self.sizer.update(nxt - end, time.perf_counter() - t0 - (self.compile_s - c0))
            end = nxt
            if end >= n_total or np.all(self.lead(state.status) != StageStatus.COMPLETED):
                break  # the chunk's end, or every member stopped inside this piece
            if tracking and end % self.track_every == 0:
                self.track(chunk.first_k + end - 1, state.params)
            self.report_piece(stage, chunk, h, done0 + end, total, clock)
            arrays = self.boundary(
                (state, batch, hyper, w), stage, ci, done0 + end, piece=h, chunk=chunk
            )
            state = arrays[0]
            if np.all(self.lead(state.status) != StageStatus.COMPLETED):
                break  # a time limit
        return state, w, h

    def hand_off(self, stage, state, batch, hyper, w):
        """The stage's starting point, inside its precision scope: a mixed run's casts (at the
        first stage after Adam), the guards reset, and for a stage after Adam its lambdas and
        its solver's state."""
        if self.precision == "mixed" and self.setup.precision_part(
            stage, handed=False
        ) != self.setup.precision_part(stage):
            state, batch, hyper, w = cast_floats((state, batch, hyper, w), jnp.zeros(()).dtype)
        state = reset_stage(state)
        if stage != "adam":
            if not self.setup.uses_relobralo(stage):
                state = eqx.tree_at(lambda s: s.lambdas, state, jnp.ones_like(state.lambdas))
            opt = self.call(
                _program("init", stage),
                self.vm(self.eng.init_stage(stage), 0),
                state.params,
                w,
                state.lambdas,
                batch,
            )
            state = eqx.tree_at(lambda s: s.opt, state, opt)
        return state, batch, hyper, w

    def prefetch(self, state, batch, hyper, w):
        """Compile the second stage's programs in a background thread while Adam runs: the
        hand-off maps the initial state to arguments of the shapes, dtypes and placements the
        second stage will get."""
        second = self.eng.second_name
        with precision_scope(self.precision, "second"):
            s2, b2, h2, w2 = self.hand_off(second, state, batch, hyper, w)
            for name, fn, args in self.chunk_programs(
                second, s2, b2, h2, w2, jnp.int32(0), jnp.int32(0)
            ):
                self.cache.prefetch(self.setup, name, fn, args, batched=False)
            del s2, b2, h2, w2, args

    # -- bookkeeping between chunks -----------------------------------------------------------

    def output(self, arrays, statuses) -> RunOutput:
        state, batch, _, w = arrays
        history = self.rec.history(
            self.lead(state.status).shape[0], self.setup.n_terms, self.snapshot_refreshes
        )
        return RunOutput(
            state,
            w,
            batch,
            history,
            statuses,
            self.compile_s,
            time.perf_counter() - self.t_start - self.compile_s,
            dict(self.stage_seconds),
            self.run_limit_hit,
        )

    def write_checkpoint(self, arrays, stage, chunk, handed, done, piece=None):
        state = arrays[0]
        jax.block_until_ready(state)
        now = time.perf_counter()
        return self.checkpoint.write(
            ckpt_lib.Snapshot(
                arrays=arrays,
                history=ckpt_lib.recorder_arrays(self.rec, getattr(self.track, "rows", None)),
                stage=stage,
                chunk=chunk,
                handed=handed,
                done=done,
                statuses=self.statuses,
                compile_seconds=self.compile_s,
                elapsed=now - self.t_start,
                piece=piece,
                stage_elapsed=now - self.stage_t0 if handed else 0.0,
            )
        )

    def save_point(self, arrays, stage, chunk, handed, done, piece=None, partial=None):
        """A checkpoint before chunk ``chunk`` of ``stage`` (``piece``: inside it, with its
        history so far) when due or after Ctrl-C; then, after Ctrl-C, stop (raise
        `Interrupted`; ``partial``: the chunk whose steps so far go into its history)."""
        checkpoint = self.checkpoint
        stop = checkpoint is not None and self.interrupted()
        if checkpoint is None or not (stop or checkpoint.due()):
            return
        path = self.write_checkpoint(arrays, stage, chunk, handed, done, piece)
        if stop:
            state = arrays[0]
            if partial is not None:
                self.rec.add(partial, piece, arrays[3])
            cut = np.full(self.lead(state.status).shape, int(StageStatus.INTERRUPTED))
            st = {
                s: self.statuses[s] if s in self.statuses and s != stage else cut
                for s in self.stages
            }
            raise Interrupted(path, self.output(arrays, st))

    def limit_reached(self, stage) -> str | None:
        """``"run"`` or ``"stage"`` when that time limit has been reached, else None."""
        cfg, now = self.setup.config, time.perf_counter()
        if cfg.time_limit is not None and now - self.t_start >= cfg.time_limit:
            return "run"
        own = self.setup.spec(stage).time_limit
        return "stage" if own is not None and now - self.stage_t0 >= own else None

    def boundary(self, arrays, stage, ci, done, piece=None, chunk=None):
        """Between two calls of ``stage`` (before chunk ``ci``, or inside it with ``piece``):
        the time limits, then a checkpoint when due or after Ctrl-C. A time limit marks the
        members still running ``TIME_LIMIT``; the run's limit first writes a checkpoint of
        the unmarked state, from which a resume with a larger limit continues bit for bit."""
        which = self.limit_reached(stage)
        if which is None:
            self.save_point(arrays, stage, ci, True, done, piece=piece, partial=chunk)
            return arrays
        if which == "run":
            self.run_limit_hit = True
            if self.checkpoint is not None:
                self.write_checkpoint(arrays, stage, ci, True, done, piece)
        state = arrays[0]
        status = jnp.where(
            state.status == StageStatus.COMPLETED, jnp.int32(StageStatus.TIME_LIMIT), state.status
        )
        return (eqx.tree_at(lambda s: s.status, state, status.astype(state.status.dtype)),) + tuple(
            arrays[1:]
        )

    def estimate(self, stage, done, total) -> None:
        """Once per stage, after its first calls: when the measured pace says the stage needs
        more than its time limit leaves (or, without one, more than an hour), one line with
        the pace, the estimate and what cuts it."""
        if self.estimated or self.sizer.calls < 2 or total <= done:
            return
        self.estimated = True
        cfg, now = self.setup.config, time.perf_counter()
        need = self.sizer.rate * (total - done)
        lefts = [
            lim - (now - t0)
            for lim, t0 in (
                (cfg.time_limit, self.t_start),
                (self.setup.spec(stage).time_limit, self.stage_t0),
            )
            if lim is not None
        ]
        left = min(lefts) if lefts else None
        if need <= (LONG_STAGE_SECONDS if left is None else left):
            return
        beyond = (
            "more than an hour"
            if left is None
            else f"more than the {format_seconds(left)} its time limit leaves"
        )
        self.emit(
            f"{self.tag} {stage}: {self.sizer.rate:.3g} s an iteration measured; its "
            f"{total - done} iterations left need ~{format_seconds(need)}, {beyond}. "
            f"{self.knobs(stage)}"
        )

    def knobs(self, stage) -> str:
        """What cuts a stage's time, for the estimate's line."""
        limit = "or a time limit (time_limit, --time-limit)"
        steps = (
            "Adam(steps=...), --adam-steps"
            if stage == "adam"
            else (f"{type(self.setup.spec(stage)).__name__}(steps=...), --second-steps")
        )
        if stage == "gauss_newton" and self._shape is not None:
            rows, n_params, form = self._shape
            cost = {
                "kernel": "rows^2 x parameters",
                "gramian": "rows x parameters^2",
                "svd": "rows x parameters x min(rows, parameters)",
            }.get(
                form,
                "rows x parameters a CG iteration, plus a factorization every few iterations"
                if form == "pcg"
                else "rows x parameters a CG iteration",
            )
            return (
                f"What cuts it: {rows} residual rows x {n_params} parameters in the {form} form, "
                f"whose iteration costs ~{cost}: fewer collocation points or a smaller network cut "
                f"every iteration; fewer iterations ({steps}) {limit} cut the stage."
            )
        return (
            "What cuts it: fewer collocation points or a smaller network cut every iteration; "
            f"fewer steps ({steps}) {limit} cut the stage."
        )

    def report(self, stage, chunk, n, state, pace_clock, done, total):
        """After a chunk: the progress line (with the time left from the stage's pace) and
        the ``progress`` callback."""
        now = time.perf_counter()
        elapsed = now - pace_clock.t_stage
        left = pace_clock.left(now, self.compile_s, done, total, n)
        where = (
            f" [{stage} {done}/{total}, {format_seconds(elapsed)}, ~{format_seconds(left)} left]"
        )
        setup, rec = self.setup, self.rec
        if n:
            progress_line(
                self.emit,
                self.tag,
                stage,
                chunk.first_k + n - 1,
                float(rec.refresh["tau"][-1][0]),
                rec,
                setup.problem.loss_terms,
                self.batched,
                setup.method.weights_points,
                where,
            )
        self.last_line = now
        if self.progress is not None:
            self.progress(
                Progress(
                    stage,
                    done,
                    total,
                    float(np.nanmedian(rec.rows["loss"][-1][:, -1])) if n else float("nan"),
                    elapsed,
                    self._coeffs(state),
                )
            )

    def _coeffs(self, state):
        if getattr(state.params, "coeffs", None) is None or self.batched:
            return None
        problem = self.setup.problem
        return dict(
            zip(
                problem.unknown_names,
                np.asarray(problem.coefficient_array(state.params.coeffs)).tolist(),
            )
        )

    def report_piece(self, stage, chunk, h, done, total, clock):
        """Inside a chunk, after a call: the progress line and the ``progress`` callback when
        half a ``call_seconds`` has passed since the last (a fast chunk prints as before: one
        line at its end); and, once, the stage's estimate."""
        now = time.perf_counter()
        self.estimate(stage, done, total)
        if self.call_seconds is None or now - self.last_line < 0.5 * self.call_seconds:
            return
        self.last_line = now
        n = int(np.max(self.lead(h.n_done)))
        loss = self.lead(h.loss)[:, n - 1]
        elapsed = now - clock.t_stage
        left = clock.left(now, self.compile_s, done, total, n)
        where = (
            f" [{stage} {done}/{total}, {format_seconds(elapsed)}, ~{format_seconds(left)} left]"
        )
        if self.batched:
            self.emit(
                f"{self.tag} {stage:5s} k={chunk.first_k + n - 1:6d} median loss over "
                f"{loss.shape[0]} runs={np.nanmedian(loss):.3e}{where}"
            )
        else:
            raw = self.lead(h.raw)[0, n - 1]
            terms = " ".join(
                f"{name}={float(v):.3e}" for name, v in zip(self.setup.problem.loss_terms, raw)
            )
            self.emit(
                f"{self.tag} {stage:5s} k={chunk.first_k + n - 1:6d} "
                f"loss={float(loss[0]):.3e} {terms}{where}"
            )
        if self.progress is not None:
            self.progress(Progress(stage, done, total, float(np.nanmedian(loss)), elapsed, None))

    # -- one stage ------------------------------------------------------------------------------

    def run_stage(self, stage, chunks, arrays, here):
        """Run ``stage``'s chunks from the start or from checkpoint ``here``; returns the
        arrays after the stage, its best parameters restored."""
        t0, c0 = time.perf_counter(), self.compile_s
        resumed_in = here is not None and here.handed
        self.stage_t0 = t0 - (here.stage_elapsed if resumed_in else 0.0)
        self.sizer, self.estimated = _CallSizer(self.call_seconds), False
        with precision_scope(self.precision, "adam" if stage == "adam" else "second"):
            if not resumed_in:
                arrays = self.hand_off(stage, *arrays)
            if stage == "gauss_newton" and self.eng.lsq is not None:
                self._shape = gn_shape(
                    self.setup, self.eng.lsq, arrays[1], arrays[0].params, batched=self.batched
                )
            else:
                self._shape = None
            total = sum(c.n_steps for c in chunks)
            done = 0 if here is None else here.done
            clock = _Pace(time.perf_counter(), self.compile_s, done)
            piece = here.piece if resumed_in else None
            for ci in range(0 if here is None else here.chunk, len(chunks)):
                chunk = chunks[ci]
                start = done - (
                    0 if piece is None else int(np.max(piece.n_done))
                )  # steps before this chunk
                state, w, h = self.run_chunk(stage, ci, chunk, arrays, start, total, clock, piece)
                piece = None
                arrays = (state, arrays[1], arrays[2], w)
                n, _ = self.rec.add(chunk, h, w)
                if n and self.track is not None:
                    self.track(chunk.first_k + n - 1, state.params)
                if n:
                    self.rec.add_coeffs(self.setup.problem, chunk.first_k + n - 1, state.params)
                done = start + n
                self.report(stage, chunk, n, state, clock, done, total)
                self.estimate(stage, done, total)
                if ci + 1 < len(chunks) and np.any(
                    self.lead(state.status) == StageStatus.COMPLETED
                ):
                    arrays = self.boundary(arrays, stage, ci + 1, done)
                    state = arrays[0]
                st = self.lead(state.status)
                if np.all(st != StageStatus.COMPLETED):
                    if not self.batched:
                        self.emit(
                            f"{self.tag} {stage} stage stopped at k={chunk.first_k + n - 1}: "
                            f"{StageStatus(int(st[0])).name}"
                        )
                    break
            state = arrays[0]
            self.statuses[stage] = self.lead(state.status).astype(np.int64)
            state = self.call(_program("restore", stage), self.vm(restore_best, 0), state)
            jax.block_until_ready(state.params)
        if here is None:  # a resumed stage's time before the checkpoint is not known
            self.stage_seconds[stage] = time.perf_counter() - t0 - (self.compile_s - c0)
        return (state,) + tuple(arrays[1:])


class _CallSizer:
    """How many iterations the next call of a stage's loop runs, so that a call lasts about
    ``seconds``: from the measured seconds per iteration of the stage's last call; the first
    call runs one iteration and each call at most `GROWTH` times the last one's. ``seconds``
    None: the whole chunk in one call."""

    GROWTH = 4

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.rate: float | None = None
        self.last, self.calls = 0, 0

    def size(self, left: int) -> int:
        if self.seconds is None:
            return left
        if self.rate is None:
            return min(left, 1)
        want = int(self.seconds / max(self.rate, 1e-12))
        return max(1, min(left, want, self.GROWTH * self.last))

    def update(self, n: int, seconds: float) -> None:
        if n > 0:
            self.rate, self.last, self.calls = max(seconds, 0.0) / n, n, self.calls + 1


class _Pace:
    """The time left in a stage from its pace so far, compilation not counted; from the
    second chunk on, the first (one-off costs: hand-off, first call) is left out."""

    def __init__(self, t_stage: float, compile_at_start: float, done: int):
        self.t_stage, self.start = t_stage, (t_stage, compile_at_start, done)
        self.base: tuple[float, float, int] | None = None

    def left(self, now: float, compile_s: float, done: int, total: int, n: int) -> float:
        t0, c0, d0 = self.base if self.base is not None and done > self.base[2] else self.start
        pace = (now - t0 - (compile_s - c0)) / max(done - d0, 1)
        if self.base is None and n:
            self.base = (now, compile_s, done)
        return pace * (total - done)


def run_stages(
    setup: Setup,
    eng: Engine,
    state: State,
    batch,
    hyper: Hyper,
    emit,
    *,
    batched: bool,
    snapshot_refreshes: int = 4,
    cache: CompileCache = COMPILE_CACHE,
    prefetch: bool = False,
    track: ErrorTracker | None = None,
    track_every: int = 0,
    progress: Callable[[Progress], None] | None = None,
    checkpoint: "ckpt_lib.Checkpointer | None" = None,
    resume: "ckpt_lib.Snapshot | None" = None,
    interrupted: Callable[[], bool] = lambda: False,
    call_seconds: float | None = CALL_SECONDS,
) -> RunOutput:
    """The host loop over stages and chunks. ``batched``: state, batch and hyper have a
    leading member axis and every chunk is vmapped over it (a sweep); otherwise one run. Each
    stage runs in its precision scope (`cgmpinn_jax.training._precision`); a mixed run
    casts at the hand-off.

    ``prefetch`` (single runs with both stages): the second stage's programs compile in a
    background thread while the Adam stage runs
    ([`CompileCache.prefetch`][cgmpinn_jax.CompileCache.prefetch]); it changes
    no result.

    ``call_seconds``: each call of a stage's loop lasts about this long (`_CallSizer`; None:
    one call per chunk); the same steps bit for bit, whatever it is.

    ``track(k, params)`` (single runs) is called at every chunk end and, with
    ``track_every > 0``, every ``track_every`` steps inside a chunk: the stage's loop is then
    called in pieces (the same steps bit for bit; one host round-trip per piece).

    ``progress(Progress)`` is called after every chunk and, in a chunk of slow iterations,
    between calls at least every ``call_seconds`` (a command-line progress bar).

    ``checkpoint`` (a `Checkpointer`) writes a
    checkpoint at a call boundary when it is due or when ``interrupted()`` (Ctrl-C) turned
    true, and then raises `Interrupted`; ``resume`` (a
    `Snapshot`) continues a run from one, bit for bit
    (the state, batch, hyper and ``w`` arguments are then replaced by the snapshot's).

    Time limits (``setup.config.time_limit`` for the run, ``adam.time_limit`` and
    ``second.time_limit`` per stage) are checked at every call boundary; see `TrainConfig`."""
    run = _Loop(
        setup,
        eng,
        emit,
        batched=batched,
        cache=cache,
        track=track,
        track_every=track_every,
        progress=progress,
        checkpoint=checkpoint,
        interrupted=interrupted,
        snapshot_refreshes=snapshot_refreshes,
        call_seconds=call_seconds,
    )
    w = eng.initial_w(state.lambdas.shape[:-1], batch["pde"][0].shape[-2], state.lambdas.dtype)
    if resume is None:
        run.rec.add_coeffs(setup.problem, 0, state.params)
    else:
        state, batch, hyper, w = resume.arrays
        rows = ckpt_lib.restore_recorder(run.rec, resume.history)
        if track is not None and rows is not None:
            track.rows[:] = rows
            if rows and hasattr(
                track, "t0"
            ):  # the error trace's seconds go on from the checkpoint's
                track.t0 = time.perf_counter() - float(rows[-1][1])
        run.statuses = dict(resume.statuses)
        run.compile_s, run.t_start = resume.compile_seconds, time.perf_counter() - resume.elapsed
    arrays = (state, batch, hyper, w)
    stages = setup.stage_names
    plan = {stage: [c for c in setup.schedule() if c.stage == stage] for stage in stages}
    if (
        prefetch
        and resume is None
        and not batched
        and plan.get("adam")
        and eng.second_name is not None
        and plan[eng.second_name]
    ):
        run.prefetch(*arrays)
    first = 0 if resume is None else stages.index(resume.stage)
    for si, stage in enumerate(stages):
        if si < first:
            continue
        lead = run.lead(arrays[0].status).shape
        if not plan[stage]:
            run.statuses[stage] = np.full(lead, int(StageStatus.SKIPPED))
            continue
        here = resume if resume is not None and si == first else None
        if (
            run.run_limit_hit
            or (here is None or not here.handed)
            and run.limit_reached(stage) == "run"
        ):
            if (
                not run.run_limit_hit and run.checkpoint is not None
            ):  # resumable with a larger limit
                run.write_checkpoint(arrays, stage, 0, False, 0)
            run.run_limit_hit = True
            run.statuses[stage] = np.full(lead, int(StageStatus.TIME_LIMIT))
            continue
        arrays = run.run_stage(stage, plan[stage], arrays, here)
        later = [s for s in stages[si + 1 :] if plan[s]]
        if later and not run.run_limit_hit:
            run.save_point(arrays, later[0], 0, False, 0)
    return run.output(arrays, run.statuses)
