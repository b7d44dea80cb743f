"""The host loop over a run's stages and chunks (`run_stages`).

A run is a sequence of stages (``Setup.stage_names``: by default `STAGES`, Adam then
the second stage, whichever member; ``TrainConfig.stages`` names more); each is a list of
chunks from the run's schedule, one chunk per weight refresh. A chunk is up to three compiled
programs called one after the other: the weight refresh (`Engine.begin_chunk`, one
program for every stage), for a stage whose solver stores its point the re-basing of that
point (`Engine.rebase`), and the stage's loop (`Engine.stage_steps`, the same
loop for every stage). Between chunks the host records the chunk's history, reports progress,
checks the stage's status and writes a checkpoint when one is due.
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
from ._engine import Engine, State, restore_best
from ._precision import cast_floats, precision_scope
from ._records import StageStatus
from ._recorder import Progress, Recorder, format_seconds, progress_line
from ._schedule import Setup

__all__ = ["STAGES", "RunOutput", "Interrupted", "run_stages", "reset_stage", "to_host"]

#: the stages of a default run, in order ("lbfgs": the second stage, whichever member)
STAGES = ("adam", "lbfgs")


def _program(kind: str, stage: str) -> str:
    """The compile cache's name of a stage's program (``kind``: "rebase", "init", "restore";
    the second stage keeps the names it always had)."""
    if stage == "lbfgs" and kind in ("rebase", "init"):
        return {"rebase": "rebase", "init": "second_init"}[kind]
    return f"{kind}_{stage}"


def _shown(member: str) -> str:
    """How the progress lines name a stage: its solver (``"adam"``, ``"lbfgs"`` for either
    L-BFGS backend, ``"gauss_newton"``, a dense member's name), not its key: the second stage's
    key is ``"lbfgs"`` whichever member runs it."""
    return "lbfgs" if member in ("optax", "jaxopt") else member


def _label(name: str, shown: dict) -> str | None:
    """How the progress lines name a program when it compiles (None: not named); ``shown``:
    stage key -> its name in the progress lines."""
    if name == "refresh":
        return "the weight refresh"
    if name == "rebase":
        return "the second stage's re-basing"
    if name.startswith("rebase_"):
        return f"the {shown.get(name[7:], name[7:])} stage's re-basing"
    return f"the {shown[name]} chunk" if name in shown else None


class RunOutput(NamedTuple):
    state: State
    w: jax.Array
    batch: Any  # the training points (cast to the second stage's dtype in a mixed run)
    history: dict  # arrays with a leading member axis
    statuses: dict  # stage -> (B,) int array
    compile_seconds: float
    run_seconds: float
    stage_seconds: dict  # stage -> wall seconds without compilation (stages run in this call)


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
        lambda s: (s.status, s.stall, s.best_raw, s.best_params), state,
        (jnp.zeros_like(state.status), jnp.zeros_like(state.stall), jnp.full_like(state.best_raw, jnp.inf), state.params),
    )


class _Loop:
    """One run's host loop: the compiled programs, the run's arrays and its bookkeeping.

    The arrays ``(state, batch, hyper, w)`` live on the instance between chunks so that a
    checkpoint can be written at any chunk boundary."""

    def __init__(self, setup: Setup, eng: Engine, emit, *, batched: bool, cache: CompileCache, track, track_every: int,
                 progress, checkpoint, interrupted, snapshot_refreshes: int):
        self.setup, self.eng, self.emit, self.batched, self.cache = setup, eng, emit, batched, cache
        self.track, self.track_every, self.progress = track, track_every, progress
        self.checkpoint, self.interrupted, self.snapshot_refreshes = checkpoint, interrupted, snapshot_refreshes
        self.precision = setup.config.precision
        vm = (lambda f, axes: jax.vmap(f, in_axes=axes)) if batched else (lambda f, axes: f)
        self.vm = vm
        self.lead = to_host if batched else (lambda x: np.asarray(x)[None])
        self.compile_s = 0.0
        self.tag = f"[{setup.problem.name}/{setup.method.name}]"
        self.stages = setup.stage_names
        self.shown = {st: _shown(setup.member(st)) for st in self.stages}
        self.begin = vm(eng.begin_chunk, (0, 0, 0, 0, None))
        self.rebase = {st: vm(functools.partial(eng.rebase, stage=st), 0) for st in self.stages if st != "adam"}
        self.loop = {st: vm(functools.partial(eng.stage_steps, st), (0, 0, 0, 0, 0, None)) for st in self.stages}
        self.rec, self.statuses, self.stage_seconds = Recorder(self.lead), {}, {}
        self.t_start = time.perf_counter()

    # -- compiled programs ------------------------------------------------------------------

    def call(self, name, fn, *args):
        compiled, seconds = self.cache.compiled(self.setup, name, fn, args, batched=self.batched)
        self.compile_s += seconds
        background = self.cache.last_background_seconds
        label = _label(name, self.shown)
        if label and background is not None:
            self.emit(f"{self.tag} compiled {label} in the background in {background:.1f}s (waited {seconds:.1f}s)")
        elif seconds > 0.0 and label:  # compile time is real time: say where it went
            self.emit(f"{self.tag} compiled {label} in {seconds:.1f}s")
        return compiled(*args)

    def chunk_programs(self, stage, state, batch, hyper, w, tau_k, n_steps):
        """``[(name, fn, args)]`` of one chunk, with ``w`` and the history of the refresh's
        shapes (for compiling in the background; the values do not matter)."""
        h0 = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(
            self.begin, state.params, state.wstate, batch, hyper, tau_k)[2])
        out = [("refresh", self.begin, (state.params, state.wstate, batch, hyper, tau_k))]
        if self.eng.rebases_in(stage):
            out.append((_program("rebase", stage), self.rebase[stage], (state.params, state.opt, w, state.lambdas, batch)))
        return out + [(stage, self.loop[stage], (state, batch, hyper, w, h0, n_steps))]

    def run_chunk(self, stage, state, batch, hyper, tau_k, n_steps, first_k):
        wstate, w, h0 = self.call("refresh", self.begin, state.params, state.wstate, batch, hyper, tau_k)
        state = eqx.tree_at(lambda s: s.wstate, state, wstate)
        if self.eng.rebases_in(stage):
            opt = self.call(_program("rebase", stage), self.rebase[stage], state.params, state.opt, w, state.lambdas, batch)
            state = eqx.tree_at(lambda s: s.opt, state, opt)
        loop = self.loop[stage]
        if self.track is None or self.track_every <= 0:
            return self.call(stage, loop, state, batch, hyper, w, h0, n_steps)
        h, n_total = h0, int(n_steps)
        for end in list(range(self.track_every, n_total, self.track_every)) + [n_total]:
            state, w, h = self.call(stage, loop, state, batch, hyper, w, h, jnp.int32(end))
            if int(h.n_done) < end:  # the stage stopped inside this piece
                break
            if end < n_total:
                self.track(first_k + end - 1, state.params)
        return state, w, h

    def hand_off(self, stage, state, batch, hyper, w):
        """The stage's starting point, inside its precision scope: a mixed run's casts (at the
        first stage after Adam), the guards reset, and for a stage after Adam its lambdas and
        its solver's state."""
        if self.precision == "mixed" and self.setup.precision_part(stage, handed=False) != self.setup.precision_part(stage):
            state, batch, hyper, w = cast_floats((state, batch, hyper, w), jnp.zeros(()).dtype)
        state = reset_stage(state)
        if stage != "adam":
            if not self.setup.uses_relobralo(stage):
                state = eqx.tree_at(lambda s: s.lambdas, state, jnp.ones_like(state.lambdas))
            opt = self.call(_program("init", stage), self.vm(self.eng.init_stage(stage), 0), state.params, w,
                            state.lambdas, batch)
            state = eqx.tree_at(lambda s: s.opt, state, opt)
        return state, batch, hyper, w

    def prefetch(self, state, batch, hyper, w):
        """Compile the second stage's programs in a background thread while Adam runs: the
        hand-off maps the initial state to arguments of the shapes, dtypes and placements the
        second stage will get."""
        second = self.eng.second_name
        with precision_scope(self.precision, "second"):
            s2, b2, h2, w2 = self.hand_off(second, state, batch, hyper, w)
            for name, fn, args in self.chunk_programs(second, s2, b2, h2, w2, jnp.int32(0), jnp.int32(0)):
                self.cache.prefetch(self.setup, name, fn, args, batched=False)
            del s2, b2, h2, w2, args

    # -- bookkeeping between chunks -----------------------------------------------------------

    def output(self, arrays, statuses) -> RunOutput:
        state, batch, _, w = arrays
        history = self.rec.history(self.lead(state.status).shape[0], self.setup.n_terms, self.snapshot_refreshes)
        return RunOutput(state, w, batch, history, statuses, self.compile_s,
                         time.perf_counter() - self.t_start - self.compile_s, dict(self.stage_seconds))

    def save_point(self, arrays, stage, chunk, handed, done):
        """A checkpoint before chunk ``chunk`` of ``stage`` when due or after Ctrl-C; then,
        after Ctrl-C, stop (raise `Interrupted`)."""
        checkpoint = self.checkpoint
        stop = checkpoint is not None and self.interrupted()
        if checkpoint is None or not (stop or checkpoint.due()):
            return
        state = arrays[0]
        jax.block_until_ready(state)
        path = checkpoint.write(ckpt_lib.Snapshot(
            arrays=arrays, history=ckpt_lib.recorder_arrays(self.rec, getattr(self.track, "rows", None)),
            stage=stage, chunk=chunk, handed=handed, done=done, statuses=self.statuses, compile_seconds=self.compile_s,
            elapsed=time.perf_counter() - self.t_start))
        if stop:
            cut = np.full(self.lead(state.status).shape, int(StageStatus.INTERRUPTED))
            st = {s: self.statuses[s] if s in self.statuses and s != stage else cut for s in self.stages}
            raise Interrupted(path, self.output(arrays, st))

    def report(self, stage, chunk, n, state, pace_clock, done, total):
        """After a chunk: the progress line (with the time left from the stage's pace) and
        the ``progress`` callback."""
        now = time.perf_counter()
        elapsed = now - pace_clock.t_stage
        left = pace_clock.left(now, self.compile_s, done, total, n)
        shown = self.shown[stage]
        where = f" [{shown} {done}/{total}, {format_seconds(elapsed)}, ~{format_seconds(left)} left]"
        setup, rec = self.setup, self.rec
        if n:
            progress_line(self.emit, self.tag, shown, chunk.first_k + n - 1, float(rec.refresh["tau"][-1][0]), rec,
                          setup.problem.loss_terms, self.batched, setup.method.weights_points, where)
        if self.progress is not None:
            coeffs = None
            if getattr(state.params, "coeffs", None) is not None and not self.batched:
                coeffs = dict(zip(setup.problem.unknown_names,
                                  np.asarray(setup.problem.coefficient_array(state.params.coeffs)).tolist()))
            self.progress(Progress(stage, done, total, float(np.nanmedian(rec.rows["loss"][-1][:, -1])) if n
                                   else float("nan"), elapsed, coeffs))

    # -- one stage ------------------------------------------------------------------------------

    def run_stage(self, stage, chunks, arrays, here):
        """Run ``stage``'s chunks from the start or from checkpoint ``here``; returns the
        arrays after the stage, its best parameters restored."""
        t0, c0 = time.perf_counter(), self.compile_s
        with precision_scope(self.precision, "adam" if stage == "adam" else "second"):
            if here is None or not here.handed:
                arrays = self.hand_off(stage, *arrays)
            total = sum(c.n_steps for c in chunks)
            done = 0 if here is None else here.done
            clock = _Pace(time.perf_counter(), self.compile_s, done)
            for ci in range(0 if here is None else here.chunk, len(chunks)):
                chunk = chunks[ci]
                state, batch, hyper, _ = arrays
                state, w, h = self.run_chunk(stage, state, batch, hyper, jnp.int32(chunk.tau_k),
                                             jnp.int32(chunk.n_steps), chunk.first_k)
                arrays = (state, batch, hyper, w)
                n, _ = self.rec.add(chunk, h, w)
                if n and self.track is not None:
                    self.track(chunk.first_k + n - 1, state.params)
                if n:
                    self.rec.add_coeffs(self.setup.problem, chunk.first_k + n - 1, state.params)
                done += n
                self.report(stage, chunk, n, state, clock, done, total)
                st = self.lead(state.status)
                if np.all(st != StageStatus.COMPLETED):
                    if not self.batched:
                        self.emit(f"{self.tag} {self.shown[stage]} stage stopped at k={chunk.first_k + n - 1}: "
                                  f"{StageStatus(int(st[0])).name}")
                    break
                if ci + 1 < len(chunks):
                    self.save_point(arrays, stage, ci + 1, True, done)
            state = arrays[0]
            self.statuses[stage] = self.lead(state.status).astype(np.int64)
            state = self.call(_program("restore", stage), self.vm(restore_best, 0), state)
            jax.block_until_ready(state.params)
        if here is None:  # a resumed stage's time before the checkpoint is not known
            self.stage_seconds[stage] = time.perf_counter() - t0 - (self.compile_s - c0)
        return (state,) + tuple(arrays[1:])


class _Pace:
    """The time left in a stage from its pace so far, compilation not counted; from the
    second chunk on, the first (one-off costs: hand-off, first call) is left out."""

    def __init__(self, t_stage: float, compile_at_start: float, done: int):
        self.t_stage, self.start, self.base = t_stage, (t_stage, compile_at_start, done), None

    def left(self, now: float, compile_s: float, done: int, total: int, n: int) -> float:
        t0, c0, d0 = self.base if self.base is not None and done > self.base[2] else self.start
        pace = (now - t0 - (compile_s - c0)) / max(done - d0, 1)
        if self.base is None and n:
            self.base = (now, compile_s, done)
        return pace * (total - done)


def run_stages(setup: Setup, eng: Engine, state: State, batch, hyper: Hyper, emit, *, batched: bool,
               snapshot_refreshes: int = 4, cache: CompileCache = COMPILE_CACHE, prefetch: bool = False,
               track: Callable[[int, Any], None] | None = None, track_every: int = 0,
               progress: Callable[[Progress], None] | None = None, checkpoint: "ckpt_lib.Checkpointer | None" = None,
               resume: "ckpt_lib.Snapshot | None" = None, interrupted: Callable[[], bool] = lambda: False) -> RunOutput:
    """The host loop over stages and chunks. ``batched``: state, batch and hyper have a
    leading member axis and every chunk is vmapped over it (a sweep); otherwise one run. Each
    stage runs in its precision scope (`cgmpinn_jax.training._precision`); a mixed run
    casts at the hand-off.

    ``prefetch`` (single runs with both stages): the second stage's programs compile in a
    background thread while the Adam stage runs
    ([`CompileCache.prefetch`][cgmpinn_jax.CompileCache.prefetch]); it changes
    no result.

    ``track(k, params)`` (single runs) is called at every chunk end and, with
    ``track_every > 0``, every ``track_every`` steps inside a chunk: the stage's loop is then
    called in pieces (the same steps bit for bit; one host round-trip per piece).

    ``progress(Progress)`` is called after every chunk (a command-line progress bar).

    ``checkpoint`` (a `Checkpointer`) writes a
    checkpoint at a chunk boundary when it is due or when ``interrupted()`` (Ctrl-C) turned
    true, and then raises `Interrupted`; ``resume`` (a
    `Snapshot`) continues a run from one, bit for bit
    (the state, batch, hyper and ``w`` arguments are then replaced by the snapshot's)."""
    run = _Loop(setup, eng, emit, batched=batched, cache=cache, track=track, track_every=track_every,
                progress=progress, checkpoint=checkpoint, interrupted=interrupted,
                snapshot_refreshes=snapshot_refreshes)
    w = eng.initial_w(state.lambdas.shape[:-1], batch["pde"][0].shape[-2], state.lambdas.dtype)
    if resume is None:
        run.rec.add_coeffs(setup.problem, 0, state.params)
    else:
        state, batch, hyper, w = resume.arrays
        rows = ckpt_lib.restore_recorder(run.rec, resume.history)
        if track is not None and rows is not None:
            track.rows[:] = rows
            if rows and hasattr(track, "t0"):  # the error trace's seconds go on from the checkpoint's
                track.t0 = time.perf_counter() - float(rows[-1][1])
        run.statuses = dict(resume.statuses)
        run.compile_s, run.t_start = resume.compile_seconds, time.perf_counter() - resume.elapsed
    arrays = (state, batch, hyper, w)
    stages = setup.stage_names
    plan = {stage: [c for c in setup.schedule() if c.stage == stage] for stage in stages}
    if (prefetch and resume is None and not batched and plan.get("adam") and eng.second_name is not None
            and plan[eng.second_name]):
        run.prefetch(*arrays)
    first = 0 if resume is None else stages.index(resume.stage)
    for si, stage in enumerate(stages):
        if si < first:
            continue
        if not plan[stage]:
            run.statuses[stage] = np.full(run.lead(arrays[0].status).shape, int(StageStatus.SKIPPED))
            continue
        arrays = run.run_stage(stage, plan[stage], arrays, resume if resume is not None and si == first else None)
        later = [s for s in stages[si + 1:] if plan[s]]
        if later:
            run.save_point(arrays, later[0], 0, False, 0)
    return run.output(arrays, run.statuses)
