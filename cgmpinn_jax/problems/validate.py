"""Validation of a user's :class:`~cgmpinn_jax.problems.base.Problem`, once, before anything
is compiled: :func:`validate_problem` (see its docstring for what is checked)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._checks import (_check_dataclass, _check_declarations, _check_pieces, _check_sampled, _fail, _probe_field,
                      _shape, _user_call)
from ._pieces import TestGrid
from .base import Problem

__all__ = ["validate_problem"]


_VALIDATED: dict = {}


def validate_problem(problem: "Problem") -> "Problem":
    """Check a problem's declarations and methods against each other, before any compilation.

    Checked (each failure raises a ``ValueError`` naming the class, the method or attribute,
    and what was expected): the class attributes (``name``, ``coords``, ``lower < upper``
    with one bound per coordinate, ``terms``); the class is a frozen dataclass with hashable
    fields; ``exact(z)`` and ``operator(u, z)`` return a scalar for one point ``z`` of shape
    ``(d,)``; ``pieces()`` has exactly the declared terms, each a tuple of valid pieces
    (derivative axes within ``coords``); ``sample_points(key)`` returns ``"pde"`` and each
    declared term, with one point array per piece, of shape ``(n, d)`` (``(n, 2, d)`` for
    :class:`Periodic`); each piece's target and value have shape ``(n,)``; ``test_grid()``
    returns a :class:`TestGrid` of points ``(M, d)``.

    The methods are only traced (``jax.eval_shape``), never compiled or run on the training
    points, so this is cheap; the result is cached per problem.

    Args:
        problem: a :class:`Problem` instance.

    Returns:
        ``problem`` itself.

    Example:
        >>> from cgmpinn_jax.problems import get_problem, validate_problem
        >>> validate_problem(get_problem("heat")).name
        'heat'
    """
    if isinstance(problem, type) and issubclass(problem, Problem):
        raise TypeError(f"expected a Problem instance, got the class {problem.__name__}: write {problem.__name__}()")
    if not isinstance(problem, Problem):
        raise TypeError(f"expected a Problem instance (or a registry name), got {type(problem).__name__}")
    _check_dataclass(problem)
    cache_key = (type(problem), problem, bool(jax.config.jax_enable_x64))
    if cache_key in _VALIDATED:
        return problem
    _check_declarations(problem)
    d = problem.dim
    dtype = jnp.zeros(()).dtype
    z = jax.ShapeDtypeStruct((d,), dtype)
    one_point = f"for one point z of shape ({d},)"

    out = _user_call(problem, "exact(z)", jax.eval_shape, problem.exact, z)
    if _shape(out) != ():
        _fail(problem, "exact(z)", f"must return a scalar (shape ()) {one_point}, got "
                                   f"{'shape ' + str(_shape(out)) if _shape(out) is not None else repr(out)}"
                                   + ("; index the result, e.g. expr[0]" if _shape(out) == (1,) else ""))
    for label, u in (("exact", problem.exact), ("a network", _probe_field)):
        out = _user_call(problem, "operator(u, z)", jax.eval_shape, lambda q, u=u: problem.operator(u, q), z)
        if _shape(out) != ():
            _fail(problem, "operator(u, z)", f"must return a scalar (shape ()) {one_point} (u = {label}), got "
                                             f"{'shape ' + str(_shape(out)) if _shape(out) is not None else repr(out)}")

    pieces = _user_call(problem, "pieces()", problem.pieces)
    _check_pieces(problem, pieces)
    pts = _user_call(problem, "sample_points(key)", jax.eval_shape, problem.sample_points, jax.random.key(0))
    _check_sampled(problem, pts, pieces)
    for t in problem.terms:
        for i, (piece, x) in enumerate(zip(pieces[t], pts[t])):
            n = _shape(x)[0]
            spec = jax.ShapeDtypeStruct(_shape(x), dtype)
            for what, fn in (("target", lambda p: piece.target(problem, p)), ("value", lambda p: piece.value(_probe_field, p))):
                where = f"pieces()[{t!r}][{i}].{what}"
                out = _user_call(problem, where, jax.eval_shape, fn, spec)
                if _shape(out) != (n,):
                    _fail(problem, where, f"must return one value per point, shape ({n},), got {_shape(out)}")

    tg = _user_call(problem, "test_grid()", problem.test_grid)
    if not isinstance(tg, TestGrid):
        _fail(problem, "test_grid()", f"must return a TestGrid, e.g. grid(self.lower, self.upper, sizes), "
                                      f"got {type(tg).__name__}")
    shape = _shape(tg.points)
    if shape is None or len(shape) != 2 or shape[1] != d or shape[0] < 1:
        _fail(problem, "test_grid()", f"points must have shape (M, {d}), got {shape}")
    if len(_VALIDATED) > 256:
        _VALIDATED.clear()
    _VALIDATED[cache_key] = True
    return problem
