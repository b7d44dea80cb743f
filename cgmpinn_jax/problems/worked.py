"""Three problems as the field poses them, each written through the public API only
(docs/problems-from-data.md): no closed-form solution, a reference solution as data.

* `BurgersFromData`: ``u_t + u u_x = nu u_xx`` on ``[-1, 1] x [0, 1]``,
  ``u(x, 0) = -sin(pi x)``, ``u(+-1, t) = 0``, ``nu = 0.01/pi``; the reference is the
  Fourier pseudo-spectral solution shipped in ``cgmpinn_jax/data/burgers``
  (made by ``benchmarks/burgers_reference.py``; its measured error is in
  ``benchmarks/results/burgers_reference.md``).
* `LidDrivenCavity`: steady Navier-Stokes at Re = 100 in the unit square, fields
  ``(u, v, p)``, three equations, lid ``u = 4x(1 - x)``; the pressure is pinned at the
  origin (it is defined up to a constant; the reference's gauge is ``p(0, 0) = 0``); the
  reference is PINNacle's COMSOL solution ``lid_driven_a4.dat``.
* `SquareWithHoles`: Laplace's equation in ``[-0.5, 0.5]^2`` minus four disks of radius
  0.1 at ``(+-0.3, +-0.3)``, ``u = 1`` on the square and ``u = 0`` on the circles; the
  reference is PINNacle's COMSOL solution ``poisson1_cg_data.dat``.
"""

from __future__ import annotations

import dataclasses
import importlib.resources

import jax
import jax.numpy as jnp
import numpy as np

from ..derivatives import partial
from ._pieces import Condition, Dirichlet, ProblemDefaults, uniform
from .base import Problem
from ..geometry import Box, Disk
from .reference import Reference, pinnacle_reference

__all__ = ["BurgersFromData", "LidDrivenCavity", "SquareWithHoles", "burgers_reference", "WORKED"]


def burgers_reference(nu: float) -> Reference:
    """The shipped pseudo-spectral reference solution of Burgers' equation with
    ``u(x, 0) = -sin(pi x)``.

    The solution of ``u_t + u u_x = nu u_xx`` on ``[-1, 1] x [0, 1]`` with ``u(+-1, t) = 0``,
    computed by ``benchmarks/burgers_reference.py`` (its measured error is in
    ``benchmarks/results/burgers_reference.md``) and shipped in ``cgmpinn_jax/data/burgers``;
    [`BurgersFromData`][cgmpinn_jax.problems.BurgersFromData] measures its errors against it.

    Args:
        nu: the viscosity: ``0.01 / pi`` or ``0.01`` (the two shipped).

    Returns:
        A [`Reference`][cgmpinn_jax.problems.Reference] with coordinates ``("x", "t")``, one field
        ``"u"``, points ``(M, 2)`` on the solver's tensor grid and values ``(M, 1)``.

    Raises:
        ValueError: for any other ``nu`` (``python -m benchmarks.burgers_reference`` computes
            others).

    Examples:
        >>> import numpy as np
        >>> from cgmpinn_jax.problems.worked import burgers_reference
        >>> ref = burgers_reference(0.01 / np.pi)
        >>> ref.points.shape[1], ref.values.shape[1], ref.fields
        (2, 1, ('u',))
    """
    files = {0.01 / np.pi: "burgers_nu0.01pi.npz", 0.01: "burgers_nu0.01.npz"}
    name = next((f for v, f in files.items() if abs(nu - v) <= 1e-12 * v), None)
    if name is None:
        raise ValueError(
            f"no shipped Burgers reference for nu={nu!r}; shipped: nu = 0.01/pi and 0.01 "
            "(python -m benchmarks.burgers_reference computes others)"
        )
    with (
        importlib.resources.files("cgmpinn_jax").joinpath("data", "burgers", name).open("rb") as fh
    ):
        data = dict(np.load(fh))
    x, t = np.meshgrid(data["x"], data["t"], indexing="ij")
    return Reference.from_arrays(
        np.stack([x.ravel(), t.ravel()], -1),
        data["u"].reshape(-1, 1),
        coords=("x", "t"),
        fields=("u",),
        source=f"burgers/{name} (pseudo-spectral)",
    )


def _refined(problem, pde, sample, key):
    """``pde`` followed by ``problem.n_refine`` extra interior points ``sample(key, n, dtype)``
    (``pde`` itself when it is 0; a negative count is an error naming the class)."""
    n = problem.n_refine
    if n < 0:
        raise ValueError(
            f"{type(problem).__name__}: n_refine must be >= 0 (extra interior points), got {n}"
        )
    return jnp.concatenate([pde, sample(key, n, pde.dtype)]) if n else pde


@dataclasses.dataclass(frozen=True)
class BurgersFromData(Problem):
    """Burgers' equation from its initial and boundary data, with no closed form (registry name
    ``burgers_data``; docs/problems-from-data.md).

    * PDE: ``u_t + u u_x - nu u_xx = 0`` on ``(x, t) in [-1, 1] x [0, 1]``;
    * initial (term ``"ic"``): ``u(x, 0) = -sin(pi x)`` at ``n_ic`` points ``x ~ U[-1, 1)``;
    * boundary (term ``"bc"``): ``u = 0`` on ``x = -1`` and ``x = 1``, two pieces at the same
      ``n_bc`` times ``t ~ U[0, 1)``;
    * errors against the shipped pseudo-spectral reference
      ([`burgers_reference`][cgmpinn_jax.problems.worked.burgers_reference]), at its own points.

    Args:
        nu: the viscosity; a reference ships for ``0.01 / pi`` (default) and ``0.01``.
        n_pde: the number of uniform collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary times (each used on both edges).
        n_refine: extra collocation points around the shock at ``x = 0`` after it forms
            (``t`` in ``[0.25, 1]``, denser toward ``x = 0``); 0 (default) keeps the uniform points.
    """

    nu: float = 0.01 / np.pi
    n_pde: int = 2000
    n_ic: int = 200
    n_bc: int = 100
    n_refine: int = 0

    name = "burgers_data"
    coords = ("x", "t")
    lower = (-1.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    homogeneous = True

    def operator(self, u, z):
        return partial(u, 1)(z) + u(z) * partial(u, 0)(z) - self.nu * partial(u, 0, 0)(z)

    def pieces(self):
        return {
            "ic": (Dirichlet(g=lambda z: -jnp.sin(jnp.pi * z[0])),),
            "bc": (Dirichlet(g=0.0), Dirichlet(g=0.0)),
        }

    def sample_points(self, key):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x0 = uniform(k_ic, self.n_ic, (-1.0, 0.0), (1.0, 0.0))
        t = uniform(k_bc, self.n_bc, (0.0,), (1.0,))
        edge = lambda x: jnp.concatenate([jnp.full_like(t, x), t], axis=1)  # noqa: E731
        pde = uniform(k_pde, self.n_pde, self.lower, self.upper)
        pde = _refined(self, pde, _front_refinement, jax.random.fold_in(k_pde, 1))
        return {"pde": pde, "ic": (x0,), "bc": (edge(-1.0), edge(1.0))}

    def reference(self):
        return burgers_reference(self.nu)


def _front_refinement(key, n, dtype):
    """``n`` extra interior points around Burgers' front: ``t`` uniform in ``[0.25, 1]`` (the
    front forms near ``t = 1/pi``), ``x = +-0.1 s^2`` with ``s`` uniform, so the density grows
    like ``|x|^(-1/2)`` toward ``x = 0``, alternately left and right."""
    s = jax.random.uniform(key, (n, 2), dtype)
    side = jnp.where(jnp.arange(n) % 2 == 0, -1.0, 1.0).astype(dtype)
    return jnp.stack([side * 0.1 * s[:, 0] ** 2, 0.25 + 0.75 * s[:, 1]], 1)


def _top_refinement(key, n, dtype):
    """``n`` extra interior points where the cavity's pressure is steep: half in the strip
    ``y > 0.9`` under the lid, a quarter in each top corner's ``0.15 x 0.15`` square,
    denser toward the corner (its distance along each axis is ``0.15 U^2``)."""
    k_strip, k_corner = jax.random.split(key)
    n_strip = n // 2
    strip = jax.random.uniform(k_strip, (n_strip, 2), dtype) * jnp.array(
        [1.0, 0.1], dtype
    ) + jnp.array([0.0, 0.9], dtype)
    # distance from the corner, per axis
    gap = 0.15 * jax.random.uniform(k_corner, (n - n_strip, 2), dtype) ** 2
    left = (jnp.arange(n - n_strip) % 2 == 0)[:, None]
    corner = jnp.where(left, jnp.stack([gap[:, 0], 1.0 - gap[:, 1]], 1), 1.0 - gap)
    return jnp.concatenate([strip, corner])


@dataclasses.dataclass(frozen=True)
class LidDrivenCavity(Problem):
    """The lid-driven cavity: steady incompressible Navier-Stokes in the unit square, a system
    (registry name ``cavity``; PINNacle's NS2d-C; docs/problems-from-data.md).

    * fields ``(u, v, p)`` (velocity and pressure) and three equations on ``[0, 1]^2``:
      ``momentum_x``: ``u u_x + v u_y + p_x - (u_xx + u_yy) / re = 0``,
      ``momentum_y``: ``u v_x + v v_y + p_y - (v_xx + v_yy) / re = 0``,
      ``continuity``: ``u_x + v_y = 0``;
    * boundary (term ``"bc"``, five pieces): the lid ``y = 1`` moves, ``u = 4x(1 - x)``, ``v = 0``;
      ``u = v = 0`` on the other walls; the pressure, defined up to a constant, is pinned by a
      [`Condition`][cgmpinn_jax.problems.Condition] ``p(0, 0) = 0`` (the reference's gauge);
    * errors against PINNacle's COMSOL solution ``lid_driven_a4.dat``, at its own points;
    * the network defaults to 64 wide, 4 deep (its
      [`ProblemDefaults`][cgmpinn_jax.problems.ProblemDefaults]).

    Args:
        re: the Reynolds number (100 for the reference).
        n_pde: the number of collocation points.
        n_wall: the number of boundary points on the three fixed walls together (a third each).
        n_lid: the number of boundary points on the lid.
        n_refine: extra collocation points under the lid and in its two corners, where the
            pressure is steep (the reference's grid is graded toward the walls, so those regions
            weigh in its error); 0 (default) keeps the uniform points.
    """

    re: float = 100.0
    n_pde: int = 2000
    n_wall: int = 400
    n_lid: int = 200
    n_refine: int = 0

    name = "cavity"
    coords = ("x", "y")
    fields = ("u", "v", "p")
    equations = ("momentum_x", "momentum_y", "continuity")
    terms = ("bc",)
    homogeneous = True
    geometry = Box((0.0, 0.0), (1.0, 1.0), name="wall")
    defaults = ProblemDefaults(width=64, depth=4)

    def operator(self, f, z):
        u, v = f.u(z), f.v(z)
        ux, uy, vx, vy = (
            partial(f.u, 0)(z),
            partial(f.u, 1)(z),
            partial(f.v, 0)(z),
            partial(f.v, 1)(z),
        )
        lap = lambda g: partial(g, 0, 0)(z) + partial(g, 1, 1)(z)  # noqa: E731
        return (
            u * ux + v * uy + partial(f.p, 0)(z) - lap(f.u) / self.re,
            u * vx + v * vy + partial(f.p, 1)(z) - lap(f.v) / self.re,
            ux + vy,
        )

    def pieces(self):
        lid = lambda z: 4.0 * z[0] * (1.0 - z[0])  # noqa: E731
        return {
            "bc": (
                Dirichlet(g=lid, field="u"),
                Dirichlet(g=0.0, field="v"),
                Dirichlet(g=0.0, field="u"),
                Dirichlet(g=0.0, field="v"),
                Condition(lambda f, z: f.p(z)),
            )
        }

    def sample_points(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        lid = self.geometry.sample_boundary(k2, self.n_lid, "wall.x1+")[0]
        walls = jnp.concatenate(
            [
                self.geometry.sample_boundary(k, self.n_wall // 3, f"wall.{face}")[0]
                for k, face in zip(jax.random.split(k3, 3), ("x0-", "x0+", "x1-"))
            ]
        )
        pde = _refined(
            self,
            self.geometry.sample_interior(k1, self.n_pde),
            _top_refinement,
            jax.random.fold_in(k1, 1),
        )
        return {"pde": pde, "bc": (lid, lid, walls, walls, jnp.zeros((1, 2), lid.dtype))}

    def reference(self):
        return pinnacle_reference("lid_driven_a4", coords=self.coords, fields=self.fields)


@dataclasses.dataclass(frozen=True)
class SquareWithHoles(Problem):
    """Laplace's equation in a square with four circular holes (registry name ``holes``;
    PINNacle's Poisson2d-C; docs/problems-from-data.md).

    * PDE: ``u_xx + u_yy = 0`` in ``[-0.5, 0.5]^2`` minus the four disks of radius 0.1 centred at
      ``(+-0.3, +-0.3)`` (a ``geometry`` built by set operations: the square's boundary part is
      ``"square"``, the circles' ``"h1"`` to ``"h4"``);
    * boundary (term ``"bc"``): ``u = 1`` on the square's edges and ``u = 0`` on the circles, two
      [`Dirichlet`][cgmpinn_jax.problems.Dirichlet] pieces;
    * errors against PINNacle's COMSOL solution ``poisson1_cg_data.dat``, at its own points.

    Args:
        n_pde: the number of collocation points.
        n_outer: the number of boundary points on the square's edges.
        n_holes: the number of boundary points on the four circles together (a quarter each).
    """

    n_pde: int = 2000
    n_outer: int = 400
    n_holes: int = 400

    name = "holes"
    coords = ("x", "y")
    terms = ("bc",)
    homogeneous = True
    geometry = (
        Box((-0.5, -0.5), (0.5, 0.5), name="square")
        - Disk((0.3, 0.3), 0.1, name="h1")
        - Disk((-0.3, 0.3), 0.1, name="h2")
        - Disk((-0.3, -0.3), 0.1, name="h3")
        - Disk((0.3, -0.3), 0.1, name="h4")
    )

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + partial(u, 1, 1)(z)

    def pieces(self):
        return {"bc": (Dirichlet(g=1.0), Dirichlet(g=0.0))}

    def sample_points(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        holes = [
            self.geometry.sample_boundary(k, self.n_holes // 4, f"h{i + 1}")[0]
            for i, k in enumerate(jax.random.split(k3, 4))
        ]
        return {
            "pde": self.geometry.sample_interior(k1, self.n_pde),
            "bc": (
                self.geometry.sample_boundary(k2, self.n_outer, "square")[0],
                jnp.concatenate(holes),
            ),
        }

    def reference(self):
        return pinnacle_reference("poisson1_cg_data", coords=self.coords, fields=("u",))


WORKED: dict[str, type[Problem]] = {
    cls.name: cls for cls in (BurgersFromData, LidDrivenCavity, SquareWithHoles)
}
"""The worked examples of docs/problems-from-data.md by registry name (a dict ``{name: Problem
subclass}``): ``burgers_data``, ``cavity`` and ``holes``; [`get_problem`][cgmpinn_jax.get_problem]
finds them (``get_problem("cavity")``)."""
