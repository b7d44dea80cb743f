"""The checks behind `validate_problem` (and ``Problem.sample``):
each failure raises a ``ValueError`` naming the class, the method and what was expected."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, NoReturn, cast

import jax
import jax.numpy as jnp
import numpy as np

from ._pieces import DerivativeMatch, Periodic, Piece, ProblemDefaults

__all__: list[str] = []  # private: validate.py and base.py use these


_ATTR_HELP = {
    "name": "a short label, e.g. name = 'burgers'",
    "coords": "the coordinate names, e.g. coords = ('x', 't')",
    "lower": "the box's lower corner, one float per coordinate, e.g. lower = (0.0, 0.0)",
    "upper": "the box's upper corner, one float per coordinate, e.g. upper = (1.0, 1.0)",
    "terms": "the constraint terms besides the PDE, e.g. terms = ('ic', 'bc') or ()",
}
_PIECE_KINDS = (
    "Dirichlet(), DerivativeMatch(axis), Periodic(axes), Condition(fn), Neumann(normal) or "
    "Robin(normal)"
)


def _cls_name(problem: Any) -> str:
    return problem.__name__ if isinstance(problem, type) else type(problem).__name__


def _fail(problem: Any, where: str, msg: str) -> NoReturn:
    raise ValueError(f"{_cls_name(problem)}.{where}: {msg}")


def _shape(x: Any) -> tuple[int, ...] | None:
    """The shape of an array, a ShapeDtypeStruct or a nested list; None for anything else."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape)
    try:
        arr = np.asarray(x)
    except Exception:
        return None
    return tuple(arr.shape) if arr.dtype.kind in "biuf" else None


def _dtype(x: Any):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


def _user_call(problem: Any, where: str, fn: Callable, *args: Any) -> Any:
    """Call a user-defined method; an exception becomes a ValueError naming the method."""
    try:
        return fn(*args)
    except ValueError as e:
        if str(e).startswith(_cls_name(problem) + "."):
            raise
        raise ValueError(f"{_cls_name(problem)}.{where} raised ValueError: {e}") from e
    except Exception as e:  # noqa: BLE001 - re-raised with the culprit named
        raise ValueError(f"{_cls_name(problem)}.{where} raised {type(e).__name__}: {e}") from e


def _check_declarations(problem: Any) -> None:
    """Class attributes: present, of the right kind, consistent with each other."""
    cls = type(problem)
    for attr, help_ in _ATTR_HELP.items():
        if not hasattr(problem, attr):
            raise ValueError(f"{cls.__name__} must define the class attribute {attr!r} ({help_})")
    name = problem.name
    if not isinstance(name, str) or not name:
        _fail(problem, "name", f"must be a non-empty string ({_ATTR_HELP['name']}), got {name!r}")
    coords = problem.coords
    if (
        not isinstance(coords, (tuple, list))
        or not coords
        or not all(isinstance(c, str) and c for c in coords)
    ):
        hint = (
            " (a string is not a tuple: write ('x',) for one coordinate)"
            if isinstance(coords, str)
            else ""
        )
        _fail(
            problem,
            "coords",
            f"must be a non-empty tuple of coordinate names, e.g. ('x', 't'), got {coords!r}{hint}",
        )
    if len(set(coords)) != len(coords):
        _fail(problem, "coords", f"names must be distinct, got {tuple(coords)!r}")
    d = len(coords)
    for attr in ("lower", "upper"):
        v = getattr(problem, attr)
        if not isinstance(v, (tuple, list)) or len(v) != d or not all(_is_number(x) for x in v):
            hint = " ((0.0) is a float, not a tuple: write (0.0,))" if _is_number(v) else ""
            _fail(
                problem,
                attr,
                f"must be a tuple of {d} floats (one per coordinate of {tuple(coords)!r}), "
                f"got {v!r}{hint}",
            )
        if not all(math.isfinite(float(x)) for x in v):
            _fail(problem, attr, f"must be finite, got {tuple(v)!r}")
    bad = [
        c for c, lo, hi in zip(coords, problem.lower, problem.upper) if not float(lo) < float(hi)
    ]
    if bad:
        _fail(
            problem,
            "lower/upper",
            f"need lower < upper along every coordinate; not so for {', '.join(bad)}: "
            f"lower = {tuple(problem.lower)!r}, upper = {tuple(problem.upper)!r}",
        )
    terms = problem.terms
    if not isinstance(terms, (tuple, list)) or not all(isinstance(t, str) and t for t in terms):
        hint = (
            " (a string is not a tuple: write ('bc',) for one term)"
            if isinstance(terms, str)
            else ""
        )
        _fail(
            problem,
            "terms",
            f"must be a tuple of term names, e.g. ('ic', 'bc') or (), got {terms!r}{hint}",
        )
    if len(set(terms)) != len(terms):
        _fail(problem, "terms", f"names must be distinct, got {tuple(terms)!r}")
    if "pde" in terms:
        _fail(
            problem,
            "terms",
            f"'pde' is reserved for the PDE residual term (always present); got {tuple(terms)!r}",
        )
    if not isinstance(problem.homogeneous, (bool, np.bool_)):
        _fail(problem, "homogeneous", f"must be True or False, got {problem.homogeneous!r}")
    if not isinstance(problem.defaults, ProblemDefaults):
        _fail(
            problem,
            "defaults",
            f"must be a ProblemDefaults(...), got {type(problem.defaults).__name__}",
        )


def _check_dataclass(problem: Any) -> None:
    """A decorated frozen dataclass with hashable field values."""
    cls = type(problem)
    fields = {f.name for f in dataclasses.fields(problem)}
    own = cls.__dict__.get("__annotations__", {})
    undeclared = [
        k
        for k, a in own.items()
        if k not in fields and "ClassVar" not in (a if isinstance(a, str) else repr(a))
    ]
    if undeclared and "__dataclass_fields__" not in cls.__dict__:
        raise ValueError(
            f"{cls.__name__} declares fields ({', '.join(undeclared)}) but is not a dataclass: "
            f"decorate it with @dataclasses.dataclass(frozen=True)"
        )
    try:
        hash(problem)
    except TypeError:
        for f in dataclasses.fields(problem):
            try:
                hash(getattr(problem, f.name))
            except TypeError:
                v = getattr(problem, f.name)
                raise ValueError(
                    f"{cls.__name__}.{f.name}: field values must be hashable (floats, ints, "
                    f"strings, tuples), got a {type(v).__name__}; use a tuple instead of a list "
                    f"or an array"
                ) from None
        raise ValueError(
            f"{cls.__name__} instances must be hashable: decorate the class with "
            f"@dataclasses.dataclass(frozen=True)"
        ) from None


def _check_pieces(problem: Any, pieces: Any) -> None:
    """``pieces()``: a dict with exactly the declared terms, each a tuple of valid pieces."""
    terms = tuple(problem.terms)
    if not isinstance(pieces, dict):
        _fail(
            problem,
            "pieces()",
            f"must return a dict {{term: (piece, ...)}} for the terms {terms!r}, "
            f"got {type(pieces).__name__}",
        )
    for t in pieces:
        if t not in terms:
            _fail(
                problem,
                "pieces()",
                f"returns the term {t!r}, which is not declared in terms = {terms!r}",
            )
    for t in terms:
        if t not in pieces:
            _fail(
                problem,
                "pieces()",
                f"has no entry for the term {t!r} declared in terms = {terms!r}",
            )
        group = pieces[t]
        if isinstance(group, Piece) or not isinstance(group, (tuple, list)):
            _fail(
                problem,
                f"pieces()[{t!r}]",
                f"must be a tuple of pieces, e.g. (Dirichlet(),), got {group!r}",
            )
        if not group:
            _fail(problem, f"pieces()[{t!r}]", "is empty: a term needs at least one piece")
        for i, piece in enumerate(group):
            where = f"pieces()[{t!r}][{i}]"
            if isinstance(piece, type) and issubclass(piece, Piece):
                _fail(
                    problem,
                    where,
                    f"must be a Piece instance: write {piece.__name__}(...), not {piece.__name__}",
                )
            if not isinstance(piece, Piece):
                _fail(problem, where, f"must be a Piece ({_PIECE_KINDS}), got {piece!r}")
            axes = (
                (piece.axis,)
                if isinstance(piece, DerivativeMatch)
                else getattr(piece, "axes", ())
                if isinstance(piece, Periodic)
                else ()
            )
            for a in axes:
                if (
                    not isinstance(a, (int, np.integer))
                    or isinstance(a, bool)
                    or not 0 <= a < problem.dim
                ):
                    _fail(
                        problem,
                        where,
                        f"{piece!r}: an axis indexes coords = {tuple(problem.coords)!r}, so it "
                        f"must be an int in 0..{problem.dim - 1}, got {a!r}",
                    )


def _check_sampled(problem: Any, pts: Any, pieces: dict) -> None:
    """``sample_points(key)`` against ``pieces()``: term by term, piece by piece."""
    d, terms = problem.dim, tuple(problem.terms)
    where = "sample_points(key)"
    expected_keys = ("pde",) + terms
    if not isinstance(pts, dict):
        _fail(
            problem,
            where,
            f"must return a dict with the keys {expected_keys!r}, got {type(pts).__name__}",
        )
    for k in pts:
        if k not in expected_keys:
            _fail(
                problem,
                where,
                f"returns the key {k!r}, which is neither 'pde' nor a term declared in "
                f"terms = {terms!r}",
            )
    for k in expected_keys:
        if k not in pts:
            what = (
                "the collocation points (N, d)" if k == "pde" else f"the points of the term {k!r}"
            )
            _fail(problem, where, f"has no key {k!r} ({what}); expected the keys {expected_keys!r}")

    def check_array(x: Any, label: str, paired: bool) -> None:
        shape = _shape(x)
        want = f"(n, 2, {d})" if paired else f"(n, {d})"
        ok = (
            shape is not None
            and len(shape) == (3 if paired else 2)
            and shape[-1] == d
            and (not paired or shape[1] == 2)
        )
        if not ok:
            got = "not an array" if shape is None else f"shape {shape}"
            extra = (
                " (paired points for a Periodic piece: jnp.stack([left, right], axis=1))"
                if paired
                else ""
            )
            _fail(
                problem,
                f"{where}[{label}]",
                f"must be an array of shape {want} (d = {d} coordinates "
                f"{tuple(problem.coords)!r}){extra}, got {got}",
            )
        if cast("tuple[int, ...]", shape)[0] < 1:  # an array here: `ok` held
            _fail(problem, f"{where}[{label}]", f"has no points (shape {shape})")
        if not jnp.issubdtype(_dtype(x), jnp.floating):
            _fail(
                problem,
                f"{where}[{label}]",
                f"must hold floating-point coordinates, got dtype {_dtype(x)} (write 0.0, not 0)",
            )

    check_array(pts["pde"], "'pde'", False)
    for t in terms:
        group, arrays = pieces[t], pts[t]
        n_pieces = len(group)
        if not isinstance(arrays, (tuple, list)):
            shape = _shape(arrays)
            _fail(
                problem,
                f"{where}[{t!r}]",
                f"must be a tuple with one point array per piece ({n_pieces} declared in "
                f"pieces()[{t!r}]), got "
                f"{'an array of shape ' + str(shape) if shape else repr(arrays)}"
                f"; wrap a single array as (points,)",
            )
        if len(arrays) != n_pieces:
            _fail(
                problem,
                f"{where}[{t!r}]",
                f"has {len(arrays)} point array(s) but pieces()[{t!r}] declares "
                f"{n_pieces} piece(s) {tuple(group)!r}: piece i pairs with point array i",
            )
        for i, (piece, x) in enumerate(zip(group, arrays)):
            check_array(x, f"{t!r}][{i}", piece.paired)


def _probe_field(z: jax.Array) -> jax.Array:
    """A smooth scalar field standing in for the network in shape checks."""
    return jnp.sin(jnp.sum(z))
