"""The checks of `validate_problem` for problems as the field poses
them: fields and equations of a system, a source without an exact solution, reference data,
a geometry's samplers, and (on one concrete draw) points outside the domain and zero-length
normals. Each failure raises a ``ValueError`` naming the class, the method and what was expected."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import _fail, _shape, _user_call

__all__: list[str] = []  # private: validate.py uses these


def _names(problem: Any, attr: str, example: str) -> tuple[str, ...]:
    v = getattr(problem, attr)
    if not isinstance(v, (tuple, list)) or not v or not all(isinstance(x, str) and x for x in v):
        hint = f" (a string is not a tuple: write ({v!r},))" if isinstance(v, str) else ""
        _fail(problem, attr, f"must be a non-empty tuple of names, e.g. {example}, got {v!r}{hint}")
    if len(set(v)) != len(v):
        _fail(problem, attr, f"names must be distinct, got {tuple(v)!r}")
    return tuple(v)


def check_system_declarations(problem: Any) -> None:
    """``fields``, ``equations`` and ``geometry`` agree with ``coords``."""
    _names(problem, "fields", "('u', 'v', 'p')")
    _names(problem, "equations", "('momentum_x', 'momentum_y', 'continuity')")
    geo = problem.geometry
    if geo is not None:
        if not hasattr(geo, "boundary_names") or not hasattr(geo, "sample_interior"):
            _fail(
                problem,
                "geometry",
                f"must be a Geometry (cgmpinn_jax.geometry), got {type(geo).__name__}",
            )
        if geo.dim != problem.dim:
            _fail(
                problem,
                "geometry",
                f"is {geo.dim}-dimensional but coords = {tuple(problem.coords)!r} has "
                f"{problem.dim} coordinates",
            )


def expected_shape(problem: Any, what: str) -> tuple[int, ...]:
    """``()`` for one field / equation, ``(F,)`` / ``(E,)`` for several."""
    n = len(problem.fields if what == "fields" else problem.equations)
    return () if n == 1 else (n,)


def _describe(out: Any) -> str:
    s = _shape(out)
    return f"shape {s}" if s is not None else repr(out)


def _stacked_shape(out: Any) -> tuple[int, ...] | None:
    if isinstance(out, (tuple, list)):
        shapes = [_shape(o) for o in out]
        return (len(out),) if all(s == () for s in shapes) else None
    return _shape(out)


def check_solution_and_source(problem: Any, z: Any, probe: Any) -> None:
    """``exact`` (when stated), ``source`` (when there is no exact solution) and ``operator``
    return the shapes ``fields`` and ``equations`` declare."""
    one_point = f"for one point z of shape ({problem.dim},)"
    want_f, want_e = expected_shape(problem, "fields"), expected_shape(problem, "equations")
    if problem.has_exact:
        out = _user_call(problem, "exact(z)", jax.eval_shape, problem.exact, z)
        if _shape(out) != want_f:
            what = (
                "a scalar (shape ())"
                if want_f == ()
                else f"one value per field {tuple(problem.fields)!r}, shape {want_f}"
            )
            _fail(
                problem,
                "exact(z)",
                f"must return {what} {one_point}, got {_describe(out)}"
                + ("; index the result, e.g. expr[0]" if _shape(out) == (1,) else ""),
            )
    elif not problem.homogeneous:
        out = _user_call(problem, "source(z)", jax.eval_shape, problem.source, z)
        if _shape(out) != want_e:
            _fail(
                problem,
                "source(z)",
                f"must return {want_e or 'a scalar'} (one value per equation "
                f"{tuple(problem.equations)!r}) {one_point}, got {_describe(out)}",
            )
    fields = [("a network", probe)] + ([("exact", problem.exact)] if problem.has_exact else [])
    for label, u in fields:
        out = _user_call(
            problem,
            "operator(u, z)",
            jax.eval_shape,
            lambda q, u=u: problem.operator(problem.as_fields(u), q),
            z,
        )
        if _stacked_shape(out) != want_e:
            what = (
                "a scalar (shape ())"
                if want_e == ()
                else f"one value per equation {tuple(problem.equations)!r} "
                f"(a tuple or shape {want_e})"
            )
            _fail(
                problem,
                "operator(u, z)",
                f"must return {what} {one_point} (u = {label}), got {_describe(out)}",
            )


def check_piece_fields(problem: Any, pieces: dict) -> None:
    """On a system every field-reading piece names a field of the problem."""
    fields = tuple(problem.fields)
    for t, group in pieces.items():
        for i, piece in enumerate(group):
            if not hasattr(piece, "field"):
                continue
            f = piece.field
            if f is None and len(fields) > 1:
                _fail(
                    problem,
                    f"pieces()[{t!r}][{i}]",
                    f"{piece!r} must name the field it constrains on this system "
                    f"(field=one of {fields!r})",
                )
            if f is not None and f not in fields:
                _fail(
                    problem,
                    f"pieces()[{t!r}][{i}]",
                    f"field={f!r} is not one of the problem's fields {fields!r}",
                )


def check_reference(problem: Any) -> None:
    """The reference data's coordinates, fields and points agree with the problem."""
    ref = _user_call(problem, "reference()", problem.reference_data)
    if ref is None:
        return
    pts = np.asarray(ref.points)
    if pts.ndim != 2 or pts.shape[1] != problem.dim:
        _fail(
            problem,
            "reference()",
            f"{ref.source!r}: points must have {problem.dim} columns "
            f"({tuple(problem.coords)!r}), got shape {pts.shape}",
        )
    missing = [f for f in problem.fields if f not in tuple(ref.fields)]
    if missing:
        _fail(
            problem,
            "reference()",
            f"{ref.source!r} has the fields {tuple(ref.fields)!r}, not {tuple(missing)!r} "
            f"of the problem's fields {tuple(problem.fields)!r}",
        )
    geo = problem.geometry
    contains = None if geo is None else (lambda x: np.asarray(geo.contains(jnp.asarray(x))))
    try:
        ref.check_domain(contains=contains, lower=problem.lower, upper=problem.upper)
    except ValueError as e:
        _fail(problem, "reference()", str(e))


def _check_sampler(problem: Any, where: str, pts: Any, n: int, ok: Any, what: str) -> None:
    if _shape(pts) != (n, problem.dim):
        _fail(
            problem,
            where,
            f"returned shape {_shape(pts)} for n = {n}; expected ({n}, {problem.dim})",
        )
    bad = ~np.asarray(ok)
    if bad.any():
        first = np.asarray(pts)[np.argmax(bad)]
        _fail(
            problem,
            where,
            f"returned {int(bad.sum())} of {n} points {what}, the first at {first.tolist()}",
        )


def _built_in(geo: Any) -> bool:
    """Whether ``geo`` and every operand of its set operations are the library's own classes."""
    from .. import geometry

    if type(geo) not in {getattr(geometry, name) for name in geometry.__all__}:
        return False
    return all(_built_in(getattr(geo, part)) for part in ("a", "b") if hasattr(geo, part))


def check_geometry(problem: Any, n: int = 64) -> None:
    """A user's own geometry's samplers: the count asked for, inside / on their boundary, unit
    normals. The library's primitives and set operations are tested in tests/test_geometry.py
    and skipped here (each check compiles its sampler: seconds per boundary part)."""
    geo, key = problem.geometry, jax.random.key(0)
    if geo is None or _built_in(geo):
        return
    x = _user_call(problem, "geometry.sample_interior(key, n)", geo.sample_interior, key, n)
    _check_sampler(
        problem, "geometry.sample_interior(key, n)", x, n, geo.contains(x), "outside the domain"
    )
    for name in geo.boundary_names():
        where = f"geometry.sample_boundary(key, n, {name!r})"
        x, nrm = _user_call(problem, where, geo.sample_boundary, key, n, name)
        _check_sampler(
            problem, where, x, n, geo.on_boundary(x, name), f"off the boundary part {name!r}"
        )
        check_unit_normals(problem, where, nrm)


def check_unit_normals(problem: Any, where: str, normals: Any) -> None:
    norm = np.linalg.norm(np.asarray(normals, np.float64), axis=-1)
    bad = ~(np.abs(norm - 1.0) < 1e-3)
    if bad.any():
        _fail(
            problem,
            where,
            f"{int(bad.sum())} normal(s) are not unit vectors "
            f"(length {float(norm[np.argmax(bad)]):.3g}; a zero-length normal has no direction)",
        )


def check_concrete_draw(problem: Any, pieces: dict) -> None:
    """On one concrete draw (key 0): collocation points inside the geometry, and the normals
    of `Neumann` / `Robin` pieces."""
    from ._normal_pieces import normals_at

    normal_pieces = [
        (t, i, p) for t, g in pieces.items() for i, p in enumerate(g) if hasattr(p, "normal")
    ]
    if problem.geometry is None and not normal_pieces:
        return
    pts = _user_call(problem, "sample_points(key)", problem.sample_points, jax.random.key(0))
    if problem.geometry is not None:
        x = jnp.asarray(pts["pde"])
        _check_sampler(
            problem,
            "sample_points(key)['pde']",
            x,
            x.shape[0],
            problem.geometry.contains(x),
            "outside the geometry",
        )
    for t, i, piece in normal_pieces:
        where = f"pieces()[{t!r}][{i}] normal"
        x = jnp.asarray(pts[t][i])
        nrm = _user_call(problem, where, normals_at, piece.normal, piece.boundary, x)
        check_unit_normals(problem, where, nrm)
