"""[`resume`][cgmpinn_jax.resume]: continue a checkpointed run with the settings it recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from . import _checkpoint as ckpt_lib
from ..config import TrainConfig
from ._driver import train
from ..io import _rebuild_problem
from ..methods import get_method
from ._records import TrainResult

__all__ = ["resume", "recorded_run"]


def recorded_run(folder: str | Path, *, problem: Any = None) -> dict:
    """The problem, method, config and key (``key``: the int seed, or the PRNG key) that the
    newest readable checkpoint in ``folder`` records, as keyword arguments of ``train``.

    Args:
        folder: the run's ``checkpoint_dir``.
        problem: the problem instance, for a problem class that cannot be imported from its
            module (defined in a notebook or a script's ``__main__``), as for
            [`load_model`][cgmpinn_jax.load_model].

    Raises:
        CheckpointError: no readable checkpoint, or one of a run other than ``train``'s."""
    meta = ckpt_lib.read_meta(folder)
    ident = meta["identity"]
    if ident.get("kind") != "train":
        raise ckpt_lib.CheckpointError(
            f"resume: {folder} holds a checkpoint of a {ident.get('kind')!r} run, not of train()"
        )
    prob = _rebuild_problem(ident["problem"], problem, Path(folder))
    seed = meta.get("seed")
    key = (
        seed
        if seed is not None
        # jax's stub wants a jax.Array; it takes a numpy array as well
        else jax.random.wrap_key_data(np.asarray(ident["key"], np.uint32))  # type: ignore[arg-type]
    )
    return {
        "problem": prob,
        "method": get_method(ident["method"]),
        "config": TrainConfig.from_dict(ident["config"]),
        "key": key,
    }


_KEEP = object()


def resume(
    folder: str | Path, *, problem: Any = None, time_limit: Any = _KEEP, **train_kwargs
) -> TrainResult:
    """Continue the run checkpointed in ``folder`` (``train(..., checkpoint_dir=folder)``)
    from its last good checkpoint, with the problem, method, config and key it recorded.
    The result is bit-identical to the uninterrupted run on the same machine.

    Args:
        folder: the run's ``checkpoint_dir`` (it holds ``checkpoints/ckpt-<n>/``).
        problem: the problem instance, needed only when its class cannot be imported from its
            module (a class defined in a notebook or a script's ``__main__``), as for
            [`load_model`][cgmpinn_jax.load_model]; ``None``: rebuilt from the checkpoint.
        time_limit: the run's new wall-clock limit in seconds (``None``: none), counted from
            the run's start as before; by default the recorded one. A run that stopped on its
            time limit continues with a larger one.
        **train_kwargs: passed on to [`train`][cgmpinn_jax.train] (``quiet``, ``progress``,
            ``checkpoint_every``, ``track_error_every``, ...).

    Returns:
        The finished run's [`TrainResult`][cgmpinn_jax.TrainResult].

    Raises:
        FileNotFoundError: ``folder`` does not exist.
        CheckpointError: no readable checkpoint in ``folder``, or one of a
            [`sweep`][cgmpinn_jax.sweep] rather than of a ``train`` run.

    Examples:
        >>> import cgmpinn_jax as cj
        >>> cfg = cj.TrainConfig(
        ...     stages=(cj.stages.Adam(steps=40), cj.stages.LBFGS(steps=0)), cgm={"k_upd": 20}
        ... )
        >>> res = cj.train("poisson1d", "pinn", cfg,  # doctest: +SKIP
        ...                quiet=True, checkpoint_dir="runs/ckpt-demo", checkpoint_every=0)
        >>> again = cj.resume("runs/ckpt-demo", quiet=True)  # doctest: +SKIP
    """
    if not Path(folder).exists():
        raise FileNotFoundError(f"resume: no such folder {folder}")
    run = recorded_run(folder, problem=problem)
    config = run["config"] if time_limit is _KEEP else run["config"].replace(time_limit=time_limit)
    return train(
        run["problem"], run["method"], config, key=run["key"], resume=folder, **train_kwargs
    )
