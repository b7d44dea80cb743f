"""Scoped floating-point precision for a training run.

``TrainConfig.precision`` is ``"float32"``, ``"float64"`` or ``"mixed"`` (Adam in float32, the
second stage in float64). A run never changes jax's global configuration: each stage runs
inside ``jax.enable_x64(...)`` as a context manager, which restores the previous value on
exit, and the arrays handed from a float32 stage to a float64 one are cast explicitly
(`cast_floats`).

Examples:
    >>> import jax
    >>> before = jax.config.jax_enable_x64
    >>> with precision_scope("float64", "adam"):
    ...     str(jax.numpy.zeros(()).dtype)
    'float64'
    >>> jax.config.jax_enable_x64 == before
    True
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import jax
import jax.numpy as jnp

__all__ = ["precision_scope", "run_dtype", "cast_floats", "uses_x64"]


def uses_x64(precision: str, stage: str) -> bool:
    """Whether ``stage`` ("adam" or "second") of a ``precision`` run computes in float64."""
    return precision == "float64" or (precision == "mixed" and stage == "second")


def run_dtype(precision: str, stage: str):
    """The floating dtype of ``stage`` in a ``precision`` run."""
    return jnp.float64 if uses_x64(precision, stage) else jnp.float32


@contextlib.contextmanager
def precision_scope(precision: str, stage: str) -> Iterator[None]:
    """A context manager: run the body with ``jax_enable_x64`` set for ``stage`` of a
    ``precision`` run; the previous value is restored on exit (also on error). jax's global
    configuration is never changed.

    Args:
        precision: ``"float32"``, ``"float64"`` or ``"mixed"`` (a value of
            [`Precision`][cgmpinn_jax.config.Precision]).
        stage: ``"adam"`` or ``"second"`` (every stage after Adam): in a ``"mixed"`` run,
            Adam computes in float32 and the later stages in float64.

    Examples:
        >>> import jax
        >>> with precision_scope("mixed", "second"):
        ...     str(jax.numpy.ones(()).dtype)
        'float64'
        >>> with precision_scope("mixed", "adam"):
        ...     str(jax.numpy.ones(()).dtype)
        'float32'
    """
    with jax.enable_x64(uses_x64(precision, stage)):
        yield


def cast_floats(tree, dtype):
    """Every floating array leaf of ``tree`` cast to ``dtype``; other leaves unchanged."""

    def cast(x):
        if isinstance(x, (jax.Array,)) and jnp.issubdtype(x.dtype, jnp.floating):
            return x.astype(dtype)
        return x

    return jax.tree_util.tree_map(cast, tree)
