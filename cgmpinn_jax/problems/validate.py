"""Validation of a user's [`Problem`][cgmpinn_jax.Problem], once, before anything
is compiled: `validate_problem` (see its docstring for what is checked)."""

from __future__ import annotations

from typing import Any, Callable, cast

import jax
import jax.numpy as jnp

from ._checks import (
    _check_dataclass,
    _check_declarations,
    _check_pieces,
    _check_sampled,
    _fail,
    _probe_field,
    _shape,
    _user_call,
)
from ._checks_data import (
    check_concrete_draw,
    check_geometry,
    check_piece_fields,
    check_reference,
    check_solution_and_source,
    check_system_declarations,
)
from ._pieces import TestGrid
from .base import Problem

__all__ = ["validate_problem"]


_VALIDATED: dict = {}


def _piece_calls(problem: Any, piece: Any, probe: Callable) -> tuple[tuple[str, Callable], ...]:
    """A piece's ``target`` and ``value`` as functions of its points alone, labelled."""
    return (
        ("target", lambda p: piece.target(problem, p)),
        ("value", lambda p: piece.value(problem.as_fields(probe), p)),
    )


def validate_problem(problem: "Problem") -> "Problem":
    """Check a problem's declarations and methods against each other, before any compilation.

    Checked (each failure raises a ``ValueError`` naming the class, the method or attribute,
    and what was expected): the class attributes (``name``, ``coords``, ``lower < upper``
    with one bound per coordinate, ``terms``); the class is a frozen dataclass with hashable
    fields; ``exact(z)`` (when stated, else ``source(z)`` unless homogeneous) and
    ``operator(u, z)`` return a scalar for one point ``z`` of shape ``(d,)``, or one value per
    field / equation on a system; ``fields`` and ``equations`` are tuples of distinct names;
    ``pieces()`` has exactly the declared terms, each a tuple of valid pieces
    (derivative axes within ``coords``); ``sample_points(key)`` returns ``"pde"`` and each
    declared term, with one point array per piece, of shape ``(n, d)`` (``(n, 2, d)`` for
    [`Periodic`][cgmpinn_jax.problems.Periodic]); each piece's target and value have shape
    ``(n,)``; ``test_grid()`` returns a [`TestGrid`][cgmpinn_jax.problems.TestGrid] of points
    ``(M, d)``; on a system each piece names one of the
    fields; the reference data (when there is one) has the problem's coordinates and fields
    and no point outside the domain; a geometry's samplers return the count asked for, inside
    the domain or on the named boundary part, with unit normals.

    The methods are only traced (``jax.eval_shape``), except for one concrete draw of the
    points when the problem has a geometry or pieces with normals (points outside the domain,
    zero-length normals); so this is cheap, and the result is cached per problem.
    [`train`][cgmpinn_jax.train] and [`sweep`][cgmpinn_jax.sweep] call it; call it yourself to
    check a new problem without training.

    Args:
        problem: a [`Problem`][cgmpinn_jax.Problem] instance.

    Returns:
        ``problem`` itself.

    Raises:
        ValueError: naming the class, the method or attribute, and what was expected, at the
            first disagreement.
        TypeError: when ``problem`` is not a Problem instance (e.g. the class itself).

    Examples:
        >>> from cgmpinn_jax.problems import get_problem, validate_problem
        >>> validate_problem(get_problem("heat")).name
        'heat'
    """
    if isinstance(problem, type) and issubclass(problem, Problem):
        raise TypeError(
            f"expected a Problem instance, got the class {problem.__name__}: "
            f"write {problem.__name__}()"
        )
    if not isinstance(problem, Problem):
        raise TypeError(
            f"expected a Problem instance (or a registry name), got {type(problem).__name__}"
        )
    _check_dataclass(problem)
    x64 = bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]  # not in jax's stubs
    cache_key = (type(problem), problem, x64)
    if cache_key in _VALIDATED:
        return problem
    if hasattr(problem, "coords") and getattr(problem, "geometry", None) is not None:
        check_system_declarations(problem)  # before the bounds, which a geometry supplies
    _check_declarations(problem)
    d = problem.dim
    dtype = jnp.zeros(()).dtype
    z = jax.ShapeDtypeStruct((d,), dtype)

    check_system_declarations(problem)
    n_fields = len(problem.fields)
    probe = (
        _probe_field
        if n_fields == 1
        else (lambda q: jnp.sin(jnp.sum(q) + jnp.arange(n_fields, dtype=q.dtype)))
    )
    check_solution_and_source(problem, z, probe)

    pieces = _user_call(problem, "pieces()", problem.pieces)
    _check_pieces(problem, pieces)
    check_piece_fields(problem, pieces)
    check_geometry(problem)
    pts = _user_call(
        problem, "sample_points(key)", jax.eval_shape, problem.sample_points, jax.random.key(0)
    )
    _check_sampled(problem, pts, pieces)
    for t in problem.terms:
        for i, (piece, x) in enumerate(zip(pieces[t], pts[t])):
            n = cast("tuple[int, ...]", _shape(x))[0]  # an array: _check_sampled passed
            spec = jax.ShapeDtypeStruct(_shape(x), dtype)
            for what, fn in _piece_calls(problem, piece, probe):
                where = f"pieces()[{t!r}][{i}].{what}"
                out = _user_call(problem, where, jax.eval_shape, fn, spec)
                if _shape(out) != (n,):
                    _fail(
                        problem,
                        where,
                        f"must return one value per point, shape ({n},), got {_shape(out)}",
                    )

    tg = _user_call(problem, "test_grid()", problem.test_grid)
    if not isinstance(tg, TestGrid):
        _fail(
            problem,
            "test_grid()",
            f"must return a TestGrid, e.g. grid(self.lower, self.upper, sizes), "
            f"got {type(tg).__name__}",
        )
    shape = _shape(tg.points)
    if shape is None or len(shape) != 2 or shape[1] != d or shape[0] < 1:
        _fail(problem, "test_grid()", f"points must have shape (M, {d}), got {shape}")
    check_reference(problem)
    check_concrete_draw(problem, pieces)
    if len(_VALIDATED) > 256:
        _VALIDATED.clear()
    _VALIDATED[cache_key] = True
    return problem
