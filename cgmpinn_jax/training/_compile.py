"""An explicit compile cache: the engines and the ahead-of-time compiled chunk programs of a
run, keyed by its `Setup` and the arguments' shapes, dtypes and shardings, so repeated runs
(seeds, tests, benchmarks, sweeps) reuse compilations; `COMPILE_CACHE` is the one
[`train`][cgmpinn_jax.train] and [`sweep`][cgmpinn_jax.sweep] use unless given another."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..methods import build_model
from .. import nn
from ._engine import Engine
from ._objective import Trainable, init_coeffs
from ._schedule import Setup

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["CompileCache", "COMPILE_CACHE"]


class CompileCache:
    """The compiled programs of training runs, kept in memory for the next run of the same
    setup, with the seconds spent compiling.

    A run's programs (the weight refresh, each stage's loop, ...) are compiled ahead of time
    once per setup (problem, method, resolved settings) and argument signature (shapes,
    dtypes, shardings, precision), so a second run that differs only in its seed reuses them.
    [`train`][cgmpinn_jax.train] and [`sweep`][cgmpinn_jax.sweep] share
    [`COMPILE_CACHE`][cgmpinn_jax.training.COMPILE_CACHE] unless given another one (``cache=``),
    e.g. a fresh one to measure compile times. The cache is in memory only;
    [`enable_compile_cache`][cgmpinn_jax.training.enable_compile_cache] keeps XLA's executables
    on disk across processes.

    Args:
        max_entries: at most this many setups are kept; adding one more empties the cache (64).

    Attributes:
        timings: ``(program name, seconds tracing and lowering, seconds in XLA's compiler)``
            of every compilation, in order.
        last_background_seconds: the seconds a background compilation took, when the last
            [`compiled`][cgmpinn_jax.CompileCache.compiled] call waited for one started by
            [`prefetch`][cgmpinn_jax.CompileCache.prefetch] (else ``None``).

    Examples:
        >>> cache = CompileCache(max_entries=8)
        >>> len(cache)
        0
    """

    def __init__(self, max_entries: int = 64):
        self.max_entries = max_entries
        self._engines: dict = {}
        self._compiled: dict = {}
        self._pending: dict = {}  # key -> Future of (compiled, seconds), from prefetch()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        #: seconds the background compilation took, when the last `compiled` call
        #: waited for a `prefetch` (else None)
        self.last_background_seconds: float | None = None
        #: ``(chunk name, seconds tracing and lowering, seconds in XLA's compiler)`` of every
        #: compilation, in order (the compile-time study read it;
        #: ``benchmarks/results/compile_time.md``)
        self.timings: list[tuple[str, float, float]] = []

    def __len__(self) -> int:
        return len(self._compiled)

    def clear(self) -> None:
        """Drop every engine and compiled program (a background compilation in flight is
        waited for first)."""
        for f in self._pending.values():
            f.result()  # let a background compilation finish rather than orphan it
        self._pending.clear()
        self._engines.clear()
        self._compiled.clear()
        self.timings.clear()

    def engine(self, setup: Setup) -> tuple[Any, Engine]:
        """``(static, engine)``: the non-array part of the trainable (the same for every key)
        and the engine of ``setup``, built once per setup.

        Args:
            setup: a run's resolved settings (problem, method, budgets, sizes).
        """
        if setup not in self._engines:
            if len(self._engines) >= self.max_entries:
                self.clear()
            model = eqx.filter_eval_shape(
                lambda k: build_model(
                    setup.problem,
                    setup.method,
                    k,
                    width=setup.width,
                    depth=setup.depth,
                    network=setup.network,
                ),
                jax.random.key(0),
            )
            log_vars = jnp.zeros(setup.n_terms) if setup.method.loss.learnable_balance else None
            trainable = Trainable(model, log_vars, init_coeffs(setup.problem))
            _, static = eqx.partition(trainable, eqx.is_array)
            # the model comes from eval_shape: its parameters are ShapeDtypeStructs
            shaped = [
                x
                for x in jax.tree_util.tree_leaves(trainable)
                if isinstance(x, (jax.Array, jax.ShapeDtypeStruct))
            ]
            n_params = sum(int(np.prod(x.shape)) for x in shaped)
            self._engines[setup] = (static, Engine(setup, static, n_params))
        return self._engines[setup]

    @staticmethod
    def _key(setup: Setup, name: str, args: tuple, batched: bool) -> tuple:
        leaves, tree = jax.tree_util.tree_flatten(args)
        sig = tuple(
            (np.shape(x), jnp.result_type(x), str(getattr(x, "sharding", None))) for x in leaves
        )
        # the derivative fast path is chosen at trace time: its switches key the cache too
        return (
            setup,
            name,
            batched,
            tree,
            sig,
            bool(jax.config.jax_enable_x64),  # type: ignore[attr-defined]
            nn.fast_path_enabled(),
            nn.stacking(),
        )

    def _compile(self, name: str, fn: Callable, args: tuple):
        t0 = time.perf_counter()
        lowered = jax.jit(fn).lower(*args)
        t1 = time.perf_counter()
        exe = lowered.compile()
        t2 = time.perf_counter()
        self.timings.append((name, t1 - t0, t2 - t1))
        return exe, t2 - t0

    def compiled(
        self, setup: Setup, name: str, fn: Callable, args: tuple, *, batched: bool
    ) -> tuple[Callable, float]:
        """``fn`` compiled for ``args``, once per signature (a compilation started by
        [`prefetch`][cgmpinn_jax.CompileCache.prefetch] is waited for, not repeated).

        Args:
            setup: the run's resolved settings (part of the key).
            name: the program's name (part of the key, and of `timings`).
            fn: the function to compile with ``jax.jit``.
            args: example arguments: their structure, shapes, dtypes and shardings key the
                compilation.
            batched: whether the program is a sweep's (vmapped over members).

        Returns:
            ``(compiled function, seconds the caller waited for it)``.
        """
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

    def prefetch(
        self, setup: Setup, name: str, fn: Callable, args: tuple, *, batched: bool
    ) -> None:
        """Start compiling ``fn`` for ``args`` in a background thread; a later
        [`compiled`][cgmpinn_jax.CompileCache.compiled] call with the same signature waits for
        it.

        XLA's compiler releases the GIL, so the compilation overlaps whatever the caller runs
        meanwhile (the Adam stage, in [`train`][cgmpinn_jax.train]). The thread re-enters the
        caller's jax precision settings (``jax_enable_x64``, the default matmul precision:
        thread-local in jax) and its context variables (the derivative fast-path switches), so
        it traces the same program the caller would; ``tests/test_train.py`` checks the
        results are bit-identical.

        Args:
            setup: as for [`compiled`][cgmpinn_jax.CompileCache.compiled].
            name: as for ``compiled``.
            fn: as for ``compiled``.
            args: as for ``compiled``.
            batched: as for ``compiled``.
        """
        import concurrent.futures
        import contextlib
        import contextvars

        key = self._key(setup, name, args, batched)
        if key in self._compiled or key in self._pending:
            return
        # jax.config's flags are attributes set at run time, unknown to its stub
        x64 = bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]
        matmul = jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
        ctx = contextvars.copy_context()

        def work():
            mm = (
                contextlib.nullcontext() if matmul is None else jax.default_matmul_precision(matmul)
            )
            with jax.enable_x64(x64), mm:
                return ctx.run(self._compile, name, fn, args)

        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="cgmpinn-compile"
            )
        self._pending[key] = self._executor.submit(work)


COMPILE_CACHE = CompileCache()
"""The process-wide [`CompileCache`][cgmpinn_jax.CompileCache] that [`train`][cgmpinn_jax.train],
[`sweep`][cgmpinn_jax.sweep] and [`resume`][cgmpinn_jax.resume] use unless given ``cache=``;
``COMPILE_CACHE.clear()`` frees its programs."""
