"""Sweeps: many training runs (seeds x hyperparameters) in the same compiled, vmapped calls.

The public entry point is [`cgmpinn_jax.sweep`][cgmpinn_jax.sweep]; its docstring describes the
sharding over devices, multi-host runs and how members stop.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .. import metrics as metrics_lib
from ..methods import Method, get_method
from ..problems import Problem, get_problem, validate_problem
from ..config import Hyper, TrainConfig
from . import _checkpoint as ckpt_lib
from ._compile import COMPILE_CACHE, CompileCache
from ._driver import _templates, init_state
from ._loop import Interrupted, run_stages, to_host
from ._network import network_choice
from ._recorder import member_history
from ._precision import precision_scope
from ._records import StageStatus
from ._schedule import resolve

__all__ = ["sweep", "SweepResult", "SWEEPABLE"]

SWEEPABLE = Hyper._fields  # ("beta", "eps", "c_sat", "adam_lr")
"""The hyperparameters [`sweep`][cgmpinn_jax.sweep] can vary inside one compiled call, the keys its
``grid`` accepts: ``("beta", "eps", "c_sat", "adam_lr")`` (``cgm.beta``, ``cgm.eps``, ``cgm.c_sat``
and ``adam.lr``; see [`HYPER_OPTIONS`][cgmpinn_jax.config.HYPER_OPTIONS]). Any other setting is
static: loop over its values outside ``sweep``."""


@dataclasses.dataclass
class SweepResult:
    """The outcome of [`sweep`][cgmpinn_jax.sweep]: the metrics of every member, on labelled
    axes ``("seed", *grid)``. Every array has the shape ``shape``, one entry per member:
    ``(len(seeds), *map(len, grid.values()))``.

    Attributes:
        problem: the problem's name.
        method: the method's name.
        axes: axis name -> its values, in order: ``"seed"`` first, then the grid's names.
        metrics: ``"e2"``, ``"rel_e2"``, ``"e_inf"``, ... (the errors on the test grid, as in
            [`Metrics`][cgmpinn_jax.Metrics]) and ``"e_loss"`` -> float array of ``shape``.
        statuses: stage name -> int array of ``shape`` of
            [`StageStatus`][cgmpinn_jax.StageStatus] codes, in the order the stages ran.
        compile_seconds: the seconds spent compiling.
        run_seconds: the rest of the wall time.
        n_devices: the devices the member axis was sharded over (1 without sharding).
        output_devices: the devices the trained parameters ended up on (checks the sharding).
        histories: with ``keep_histories=True``, every member's
            [`History`][cgmpinn_jax.History], a list in flattened member order (C order over
            ``axes``); else ``None``.

    Examples:
        >>> res = SweepResult("poisson1d", "cgmpinn", {"seed": [0, 1], "beta": [0.5, 2.0]},
        ...                   {"rel_e2": np.array([[1e-3, 2e-3], [3e-3, 4e-3]])}, {},
        ...                   1.0, 2.0, 1, 1)
        >>> res.shape, res.at(seed=1, beta=0.5)
        ((2, 2), {'rel_e2': 0.003})
    """

    problem: str
    method: str
    axes: dict[str, list]
    metrics: dict[str, np.ndarray]
    statuses: dict
    compile_seconds: float
    run_seconds: float
    n_devices: int
    output_devices: int
    histories: Any = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The members' shape: the length of each axis, ``(len(seeds), *grid lengths)``."""
        return tuple(len(v) for v in self.axes.values())

    def to_dict(self) -> dict:
        """The result as a JSON-able dict: problem, method, axes, metrics (nested lists),
        ``<stage>_status`` (status names, one row per seed), the timings and the device count."""
        return {
            "problem": self.problem,
            "method": self.method,
            "axes": {
                k: [float(x) if not isinstance(x, int) else x for x in v]
                for k, v in self.axes.items()
            },
            "metrics": {k: np.asarray(v).tolist() for k, v in self.metrics.items()},
            **{
                f"{name}_status": [
                    [StageStatus(int(s)).name for s in row]
                    for row in codes.reshape(len(self.axes["seed"]), -1)
                ]
                for name, codes in self.statuses.items()
            },
            "compile_seconds": self.compile_seconds,
            "run_seconds": self.run_seconds,
            "n_devices": self.n_devices,
        }

    def at(self, **index) -> dict:
        """The metrics of one member, by its axis values: ``res.at(seed=0, beta=2.0)``.

        Args:
            **index: axis name -> value, for every axis (float values match within
                ``numpy.isclose``).

        Returns:
            Metric name -> float.

        Raises:
            ValueError: an axis is missing, or a value is not on its axis.
        """
        pos = []
        for name, values in self.axes.items():
            if name not in index:
                raise ValueError(f"missing axis {name!r}; axes are {list(self.axes)}")
            v = index[name]
            matches = [i for i, x in enumerate(values) if np.isclose(x, v)]
            if not matches:
                raise ValueError(f"{name}={v!r} is not on the axis {values}")
            pos.append(matches[0])
        return {k: float(np.asarray(a)[tuple(pos)]) for k, a in self.metrics.items()}


def _mesh_sharding(n_members: int):
    devices = jax.devices()  # global: every process's devices
    mesh = Mesh(np.asarray(devices), ("members",))
    return NamedSharding(mesh, PartitionSpec("members")), len(devices)


def _global_array(x: np.ndarray, sharding: NamedSharding) -> jax.Array:
    """A global array from a host array that every process holds in full (each process
    fills the shards of its own devices)."""
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])


def sweep(
    problem: Problem | str,
    method: Method | str = "cgmpinn",
    config: TrainConfig | None = None,
    *,
    seeds: Sequence[int] = (0,),
    grid: dict[str, Sequence[float]] | None = None,
    quiet: bool = False,
    shard: bool = True,
    keep_histories: bool = False,
    print_fn: Callable[[str], None] | None = None,
    cache: CompileCache = COMPILE_CACHE,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: float = 60.0,
    resume: str | Path | None = None,
    network: Any = None,
) -> SweepResult:
    """Train the product ``seeds x grid`` in one vmapped (and sharded) run.

    ``sweep(problem, method, config, seeds=[0, 1, 2], grid={"beta": [0.5, 1, 2]})`` trains
    every member of the Cartesian product seeds x beta x ... with the same engine as
    [`cgmpinn_jax.train`][cgmpinn_jax.train]: each chunk of k_upd steps is the same few jitted
    calls (the weight refresh, the stage's loop), each vmapped over the members. Array-valued
    hyperparameters (``beta``, ``eps``, ``c_sat``, ``adam_lr``) are swept inside that call;
    anything static (K, sizes, budgets, the L-BFGS settings) must be looped outside, one
    ``sweep`` per value.

    The member axis is sharded over ``jax.devices()`` with a ``NamedSharding``: all devices of
    all processes. The number of members is padded up to a multiple of the device count; padded
    members are dropped from the result. Multi-host (multi-process) runs work when
    ``jax.distributed.initialize()`` was called before: every process calls ``sweep`` with the
    same arguments (SPMD); the seeds and hyperparameters become global arrays through
    ``jax.make_array_from_callback`` (each process fills its own shards), the training points
    and networks are created on the shards where they live, and whatever the host reads
    (histories, statuses, predictions) is gathered with ``process_allgather``. Every process
    returns the full result; only process 0 prints progress. Tested with 4 simulated CPU devices
    in one process, and with 2 processes x 2 CPU devices (``jax.distributed`` on localhost).

    Members stop independently: a member whose stage stops (a guard, or a tolerance) takes no
    further steps while the others go on.

    Args:
        problem: as for [`cgmpinn_jax.train`][cgmpinn_jax.train].
        method: as for [`cgmpinn_jax.train`][cgmpinn_jax.train].
        config: as for [`cgmpinn_jax.train`][cgmpinn_jax.train]; its values of the swept
            hyperparameters are replaced by the grid's.
        seeds: integer seeds (each gives its own points, initial network and ReLoBRaLo key,
            exactly as ``train(..., key=seed)``).
        grid: ``{name: values}`` for names in
            [`SWEEPABLE`][cgmpinn_jax.training.SWEEPABLE]: ``beta``, ``eps``, ``c_sat`` (the
            options of ``config.cgm``) and ``adam_lr`` (the Adam stage's ``lr``). ``None``: seeds
            only.
        quiet: no progress output.
        shard: shard the member axis over ``jax.devices()``.
        keep_histories: keep every member's [`History`][cgmpinn_jax.History].
        print_fn: where progress lines go (default: stderr).
        cache: the [`CompileCache`][cgmpinn_jax.CompileCache] to use (shared with ``train``).
        checkpoint_dir: checkpoint the vmapped state into ``checkpoint_dir/checkpoints/``
            at chunk boundaries, as [`train`][cgmpinn_jax.train] does; Ctrl-C then checkpoints at
            the next chunk boundary and raises
            [`TrainingInterrupted`][cgmpinn_jax.TrainingInterrupted] (its ``result`` is None
            for a sweep).
        checkpoint_every: seconds between checkpoints at the earliest (0: every chunk boundary).
        resume: continue the sweep checkpointed in this folder, called with the same problem,
            method, config, seeds and grid (anything else is refused, naming the difference);
            the result is bit-identical to the uninterrupted sweep on the same machine.
        network: the network, as for [`train`][cgmpinn_jax.train] (a built-in name, an
            importable or other factory, a [`NetworkOptions`][cgmpinn_jax.NetworkOptions] or
            a module); a factory builds each member's network from its own key.

    Returns:
        A [`SweepResult`][cgmpinn_jax.SweepResult] with metric arrays of shape
            ``(len(seeds), *map(len, grid.values()))``.

    Raises:
        ValueError: a grid name that is not sweepable, an empty grid axis or seed list, a
            grid value out of range, or ``precision="mixed"`` (not supported by sweeps).

    Examples:
        ```python
        cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=200), cj.stages.LBFGS(steps=100)))
        res = cj.sweep(
            "poisson1d", "cgmpinn", cfg, seeds=[0, 1], grid={"beta": [0.5, 2.0]}, quiet=True
        )
        res.metrics["rel_e2"].shape      # (2, 2): (seed, beta)
        ```
    """
    problem = get_problem(problem)
    validate_problem(problem)  # before anything is compiled
    method = get_method(method)
    config = config or TrainConfig()
    grid = dict(grid or {})
    for name, values in grid.items():
        if name not in SWEEPABLE:
            raise ValueError(
                f"grid key {name!r} cannot be swept inside one compiled call; "
                f"sweepable: {SWEEPABLE} "
                "(loop over static settings outside sweep)"
            )
        if len(values) == 0:
            raise ValueError(f"grid[{name!r}] is empty")
        for v in values:  # validate each value like a TrainConfig would
            Hyper.option(config, name, float(v))
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty")
    emit = (
        (lambda s: None)
        if quiet
        else (print_fn or (lambda s: print(s, file=sys.stderr, flush=True)))
    )
    if jax.process_index() != 0:
        emit = lambda s: None  # noqa: E731  (multi-host: one process reports)

    axes = {"seed": seeds, **{k: [float(v) for v in vals] for k, vals in grid.items()}}
    config, net_object = network_choice(network, config)
    setup = resolve(problem, method, config, network_object=net_object)
    if config.precision == "mixed":
        raise ValueError(
            "sweep supports TrainConfig.precision 'float32' and 'float64', not 'mixed'; "
            "use cj.train per member"
        )
    if checkpoint_dir is None and resume is not None:
        checkpoint_dir = resume
    ckpt = (
        None
        if checkpoint_dir is None
        else (
            checkpoint_dir,
            checkpoint_every,
            resume,
            ckpt_lib.identity(problem, method, config, None, "sweep", {"axes": axes}),
        )
    )
    with precision_scope(config.precision, "adam"):
        return _sweep(setup, axes, grid, seeds, emit, shard, keep_histories, cache, ckpt)


def _run(setup, eng, carry, batch, hyper, emit, cache, ckpt):
    """``run_stages`` for a sweep, with its checkpoints (``ckpt``: folder, interval, resume
    folder, identity) when asked for."""
    if ckpt is None:
        return run_stages(setup, eng, carry, batch, hyper, emit, batched=True, cache=cache)
    folder, every, resume, ident = ckpt
    writer = ckpt_lib.Checkpointer(folder, ident, every)
    snap = (
        None
        if resume is None
        else ckpt_lib.load(resume, ident, _templates(setup, eng, carry, batch, hyper, True))
    )
    try:
        with ckpt_lib.sigint_flag(True) as interrupted:
            return run_stages(
                setup,
                eng,
                carry,
                batch,
                hyper,
                emit,
                batched=True,
                cache=cache,
                checkpoint=writer,
                resume=snap,
                interrupted=interrupted,
            )
    except Interrupted as stop:
        emit(
            f"[sweep {setup.problem.name}/{setup.method.name}] interrupted: "
            f"checkpoint {stop.path}; resume with "
            f"sweep(..., resume={str(folder)!r})"
        )
        raise ckpt_lib.TrainingInterrupted(Path(folder), None) from None


def _members(setup, axes, grid, shard):
    """The members' seeds and hyperparameters as (sharded) arrays, padded to a multiple of
    the devices: ``(n, seeds, hyper, sharding or None, devices)``."""
    members = list(itertools.product(*axes.values()))
    n = len(members)
    dtype = jnp.zeros(()).dtype
    base = Hyper.from_config(setup.config, dtype)
    names = list(axes)
    np_dtype = np.dtype(jnp.dtype(dtype).name)
    hyper_np = [
        np.asarray(
            [m[names.index(f)] if f in grid else float(getattr(base, f)) for m in members], np_dtype
        )
        for f in Hyper._fields
    ]
    seeds_np = np.asarray([m[0] for m in members], np.uint32)

    n_dev = 1
    if shard:
        sharding, n_dev = _mesh_sharding(n)
    pad = (-n) % n_dev
    if pad:
        seeds_np = np.concatenate([seeds_np, seeds_np[:pad]])
        hyper_np = [np.concatenate([h, h[:pad]]) for h in hyper_np]
    distributed = shard and n_dev > 1
    if distributed:
        return (
            n,
            _global_array(seeds_np, sharding),
            Hyper(*[_global_array(h, sharding) for h in hyper_np]),
            sharding,
            n_dev,
        )
    return n, jnp.asarray(seeds_np), Hyper(*[jnp.asarray(h) for h in hyper_np]), None, n_dev


def _sweep(setup, axes, grid, seeds, emit, shard, keep_histories, cache, ckpt=None) -> SweepResult:
    problem, method, config = setup.problem, setup.method, setup.config
    dtype = jnp.zeros(()).dtype
    n, seeds_in, hyper, sharding, n_dev = _members(setup, axes, grid, shard)
    distributed = sharding is not None

    with jax.default_matmul_precision("highest"):
        static, eng = cache.engine(setup)
        if (
            eng.lsq is not None
        ):  # a Gauss-Newton stage: every member on a device holds its own Jacobian
            from ._engine import check_gn_memory

            n_params = sum(
                int(np.prod(x.shape))
                for x in jax.tree_util.tree_leaves(
                    jax.eval_shape(lambda: init_state(setup, eng, jax.random.key(0))[0].params)
                )
            )
            check_gn_memory(
                config, setup, eng.lsq, n_params, members=-(-int(seeds_in.shape[0]) // n_dev)
            )
        # points, networks and optimiser states are created where their member's shard lives
        init = jax.vmap(lambda s: init_state(setup, eng, jax.random.key(s)))
        carry, batch = jax.jit(init, out_shardings=sharding if distributed else None)(seeds_in)
        emit(
            f"[sweep {problem.name}/{method.name}] {n} members "
            f"({' x '.join(f'{k}:{len(v)}' for k, v in axes.items())}) "
            f"on {n_dev} device(s)"
        )
        out = _run(setup, eng, carry, batch, hyper, emit, cache, ckpt)
        carry = out.state
        out_devices = len(jax.tree_util.tree_leaves(carry.params)[0].sharding.device_set)

        truth = problem.truth(dtype)
        grid_pts = jnp.asarray(problem.test_grid().points if truth is None else truth.points, dtype)

        def predict(params):
            model = eqx.combine(params, static).model
            return jax.vmap(model)(grid_pts)

        preds = to_host(jax.jit(jax.vmap(predict))(carry.params))[:n]
        e_loss = to_host(
            jax.jit(jax.vmap(lambda p, w, lam, b: eng.objective(p, w, lam, b)[0]))(
                carry.params, out.w, carry.lambdas, out.batch
            )
        )[:n]
    if truth is None:
        per = [metrics_lib.no_metrics() for _ in preds]
    else:
        per = [
            metrics_lib.compare(
                p, np.asarray(truth.values), fields=truth.fields, against=truth.against
            )
            for p in preds
        ]
    shape = tuple(len(v) for v in axes.values())
    metrics = {
        f: np.asarray([getattr(m, f) for m in per]).reshape(shape) for f in metrics_lib.ERRORS
    }
    metrics["e_loss"] = e_loss.reshape(shape)
    res = SweepResult(
        problem=problem.name,
        method=method.name,
        axes=axes,
        metrics=metrics,
        statuses={name: out.statuses[name][:n].reshape(shape) for name in setup.stage_names},
        compile_seconds=out.compile_seconds,
        run_seconds=out.run_seconds,
        n_devices=n_dev,
        output_devices=out_devices,
        histories=[member_history(out.history, b) for b in range(n)] if keep_histories else None,
    )
    emit(
        f"[sweep {problem.name}/{method.name}] done: "
        f"median rel_e2={np.median(metrics['rel_e2']):.3e} "
        f"(compile {out.compile_seconds:.1f}s, run {out.run_seconds:.1f}s)"
    )
    return res
