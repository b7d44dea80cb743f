"""The derivative fast path for systems (`cgmpinn_jax.nn._taylor`): a system's operator reads its
fields (``u.v``, ``u["v"]``, `cgmpinn_jax.derivatives.partial` of a field) from one Taylor-mode
pass of the network for every field and lane, instead of nested forward mode per field and
derivative."""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from ._taylor import LaneField, _Uncovered, fast_path_enabled, lane_closure, supports_taylor

__all__ = ["LaneFields", "system_operator_values"]


class _Component:
    """One field of a system inside the fast path: ``u.v`` (or ``u["v"]``) as the operator
    sees it; reads component ``index`` of the lanes (recording mode: records the lane)."""

    __slots__ = ("_field", "_index")

    def __init__(self, field: LaneField, index: int):
        self._field, self._index = field, index

    def _pick(self, value):
        return value if self._field._lanes is None else value[self._index]

    def __call__(self, q):
        return self._pick(self._field._get((), q))

    def _lane_partial(self, axes: tuple[int, ...]) -> Callable:
        get = self._field._lane_partial(axes)
        return lambda q: self._pick(get(q))


class LaneFields:
    """Stands in for a system's `Fields` inside ``operator(u, z)`` on the fast path: ``u.v``,
    ``u["v"]`` and ``u.index("v")`` as `Fields` has them; ``u(z)`` (every field at once) is
    not covered (the general path serves it)."""

    __slots__ = ("_field", "names")

    def __init__(self, field: LaneField, names: tuple[str, ...]):
        self._field, self.names = field, tuple(names)

    def index(self, name: str) -> int:
        if name not in self.names:
            raise ValueError(f"unknown field {name!r}; the fields are {self.names!r}")
        return self.names.index(name)

    def __call__(self, q):
        self._field.uncovered = True
        raise _Uncovered("every field at once")

    def __getitem__(self, name: str) -> _Component:
        return _Component(self._field, self.index(name))

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self.names:
            raise AttributeError(name)
        return self[name]


def system_operator_values(
    operator: Callable, u, points: jax.Array, names: tuple[str, ...]
) -> Optional[jax.Array]:
    """A system's ``operator(fields, z)`` (returning its equations stacked, ``(E,)``) at
    ``points`` (N, d) -> (N, E) through the fast path: one Taylor-mode pass of the network for
    every field and lane; ``None`` when the fast path is off or does not cover ``operator``
    and ``u`` (the caller then takes the general path)."""
    if not (
        fast_path_enabled() and supports_taylor(u) and jnp.issubdtype(points.dtype, jnp.floating)
    ):
        return None
    field = LaneField(None, None, points.dtype)

    def run(z):
        field._z = z
        return operator(LaneFields(field, names), z)

    try:
        out = jax.eval_shape(run, jax.ShapeDtypeStruct((points.shape[-1],), points.dtype))
    except Exception:  # an operator the recorder cannot run: the general path decides
        return None
    if field.uncovered or getattr(out, "ndim", None) != 1:
        return None
    keys = frozenset(field.keys)
    lanes = u.taylor_lanes(points, lane_closure(keys), fields=True)
    lanes = {k: lanes[k] for k in keys}
    return jax.vmap(lambda z, ln: operator(LaneFields(LaneField(z, ln), names), z))(points, lanes)
