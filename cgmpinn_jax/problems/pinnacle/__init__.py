"""PINNacle's problems (Hao et al., NeurIPS 2024; github.com/i207M/PINNacle at commit ``6f8d69c``),
written through the public API and registered by name in `PINNACLE`:

| name | PINNacle class (``src/pde/...``) | errors against |
|---|---|---|
| ``burgers1d_c`` | ``burgers.py``: ``Burgers1D`` | reference: ours (pseudo-spectral) or PINNacle's ``burgers1d.dat`` |
| ``poisson2d_c`` | ``poisson.py``: ``Poisson2D_Classic`` | reference: PINNacle's ``ref/poisson1_cg_data.dat`` |
| ``ns2d_c`` | ``ns.py``: ``NS2D_LidDriven`` | reference: PINNacle's ``ref/lid_driven_a4.dat`` |
| ``wave1d_c`` | ``wave.py``: ``Wave1D`` | closed form |
| ``heat2d_ms`` | ``heat.py``: ``Heat2D_Multiscale`` | closed form |
| ``poisson_nd`` | ``poisson.py``: ``PoissonND`` | closed form |
| ``heat_nd`` | ``heat.py``: ``HeatND`` | closed form |

The first three are the worked examples of docs/problems-from-data.md under PINNacle's names;
the 5-D ones are in `cgmpinn_jax.problems.pinnacle.nd`. Each class's docstring states the problem
and where it differs from PINNacle's code.

Point counts. PINNacle's defaults (``src/pde/baseclass.py``) are 8192 collocation, 2048
boundary and 2048 initial points, times 4 where a class calls ``training_points(mul=4)``
(``heat2d_ms``, ``poisson_nd``, ``heat_nd``). DeepXDE draws the boundary points over the whole
boundary and each condition keeps those on its part; ours draws every piece's points on its
own part. Our defaults (about 2000 collocation points, a few hundred per condition) fit a
2-core CPU; a benchmark sets PINNacle's, e.g. ``get_problem("wave1d_c", n_pde=8192, ...)``.
PINNacle measures a closed form at 2500 (2-D) or 20000 (otherwise) uniform points of the
domain (``src/utils/callbacks.py``), a reference at its data points. Its training protocol
(``benchmark.py``: a 100 x 5 tanh network, Adam at lr 1e-3 for 20000 iterations) is not
these problems' `ProblemDefaults`.
"""  # noqa: E501 (a Markdown table's rows cannot be wrapped)

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ...derivatives import partial
from ..base import DerivativeMatch, Dirichlet, Problem, grid, uniform
from ..points import box_edges, initial_line
from ..reference import pinnacle_reference
from ..worked import BurgersFromData, LidDrivenCavity, SquareWithHoles
from .nd import HeatND, PoissonND

__all__ = [
    "Burgers1DC",
    "Poisson2DC",
    "NS2DC",
    "Wave1DC",
    "Heat2DMultiscale",
    "PoissonND",
    "HeatND",
    "PINNACLE",
]

REFERENCE_SOURCES = ("spectral", "pinnacle")


@dataclasses.dataclass(frozen=True)
class Burgers1DC(BurgersFromData):
    """1D Burgers (PINNacle's Burgers1d-C; ``burgers1d_c``): the worked
    [`BurgersFromData`][cgmpinn_jax.problems.BurgersFromData].

    Follows PINNacle ``src/pde/burgers.py``, class ``Burgers1D``:
    ``u_t + u u_x = nu u_xx`` on ``[-1, 1] x [0, 1]``, ``nu = 0.01 / pi``,
    ``u(x, 0) = -sin(pi x)``, ``u(+-1, t) = 0``; no closed form.

    Args:
        nu: the viscosity.
        n_pde: the number of collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary points on each edge ``x = -1`` and ``x = 1``.
        n_refine: extra interior points around the shock at ``x = 0`` (0: none), as for
            [`BurgersFromData`][cgmpinn_jax.problems.BurgersFromData].
        reference_source: what errors are measured against: ``"spectral"`` (default), our
            Fourier pseudo-spectral solution (``cgmpinn_jax/data/burgers``); ``"pinnacle"``,
            PINNacle's ``ref/burgers1d.dat`` (1111 points, 101 x at t = 0, 0.1, ..., 1), only for
            ``nu = 0.01 / pi``. How the two differ, and each one's error, is measured in
            ``benchmarks/results/burgers_reference.md`` and ``cgmpinn_jax/data/pinnacle/README.md``.

    Where ours differs from PINNacle:

    * point counts: PINNacle uses 8192 collocation, 2048 initial and 2048 boundary points
      (``get_problem("burgers1d_c", n_pde=8192, n_ic=2048, n_bc=1024)``: our ``n_bc`` is per
      edge); our defaults are 2000, 200 and 100 per edge;
    * the two edges are two pieces of the ``"bc"`` term (PINNacle: one DirichletBC on both);
    * the default reference is our pseudo-spectral solution on a finer grid.
    """

    reference_source: str = "spectral"

    name = "burgers1d_c"

    def __post_init__(self):
        if self.reference_source not in REFERENCE_SOURCES:
            raise ValueError(
                f"Burgers1DC: reference_source must be one of {REFERENCE_SOURCES}, "
                f"got {self.reference_source!r}"
            )
        if self.reference_source == "pinnacle" and abs(self.nu - 0.01 / np.pi) > 1e-12:
            raise ValueError(
                f"Burgers1DC: PINNacle's reference ref/burgers1d.dat is for nu = 0.01/pi, "
                f"not nu = {self.nu!r}; use reference_source='spectral'"
            )

    def reference(self):
        if self.reference_source == "pinnacle":
            return pinnacle_reference("burgers1d", coords=self.coords, fields=self.fields)
        return super().reference()


@dataclasses.dataclass(frozen=True)
class Poisson2DC(SquareWithHoles):
    """Laplace in a square with four holes (PINNacle's Poisson2d-C; ``poisson2d_c``): the worked
    [`SquareWithHoles`][cgmpinn_jax.problems.SquareWithHoles].

    Follows PINNacle ``src/pde/poisson.py``, class ``Poisson2D_Classic`` (``scale=1``):
    ``u_xx + u_yy = 0`` in ``[-0.5, 0.5]^2`` minus the disks of radius 0.1 at ``(+-0.3, +-0.3)``,
    ``u = 1`` on the square's edges, ``u = 0`` on the circles; no closed form, errors against
    PINNacle's COMSOL solution ``ref/poisson1_cg_data.dat``.

    Where ours differs from PINNacle: the point counts only. PINNacle uses 8192 collocation and
    2048 boundary points over the whole boundary (about 1256 on the square, 792 on the
    circles: ``get_problem("poisson2d_c", n_pde=8192, n_outer=1256, n_holes=792)``); our
    defaults are 2000, 400 and 400.

    Args:
        n_pde: the number of collocation points.
        n_outer: the number of boundary points on the square's edges.
        n_holes: the number of boundary points on the four circles together (a quarter each).
    """

    name = "poisson2d_c"


@dataclasses.dataclass(frozen=True)
class NS2DC(LidDrivenCavity):
    """Lid-driven cavity at Re = 100 (PINNacle's NS2d-C; ``ns2d_c``): the worked
    [`LidDrivenCavity`][cgmpinn_jax.problems.LidDrivenCavity].

    Follows PINNacle ``src/pde/ns.py``, class ``NS2D_LidDriven`` (``a=4, nu=1/100``): steady
    Navier-Stokes ``(u . grad) u + grad p = nu lap u``, ``div u = 0`` in the unit square,
    lid ``u = 4x(1 - x), v = 0`` at ``y = 1``, ``u = v = 0`` on the other walls, ``p(0, 0) = 0``;
    no closed form, errors against PINNacle's COMSOL solution ``ref/lid_driven_a4.dat``.

    Where ours differs from PINNacle: the point counts only. PINNacle uses 8192 collocation and
    2048 boundary points over the whole boundary (about 512 on the lid, 1536 on the other
    walls: ``get_problem("ns2d_c", n_pde=8192, n_lid=512, n_wall=1536)``); our defaults are
    2000, 200 and 400.

    Args:
        re: the Reynolds number (``1 / nu``).
        n_pde: the number of collocation points.
        n_wall: the number of boundary points on the three fixed walls together (a third each).
        n_lid: the number of boundary points on the lid.
        n_refine: extra interior points under the lid and in its corners (0: none), as for
            [`LidDrivenCavity`][cgmpinn_jax.problems.LidDrivenCavity].
    """

    name = "ns2d_c"


@dataclasses.dataclass(frozen=True)
class Wave1DC(Problem):
    """1D wave (PINNacle's Wave1d-C; ``wave1d_c``), with its closed form.

    Follows PINNacle ``src/pde/wave.py``, class ``Wave1D`` (``C=2, scale=1, a=4``):

    * PDE: ``u_tt = 4 u_xx`` on ``(x, t) in [0, 1] x [0, 1]``;
    * initial: ``u(x, 0) = sin(pi x) + 0.5 sin(a pi x)`` and ``u_t(x, 0) = 0``;
    * boundary: ``u(0, t) = u(1, t) = 0``;
    * closed form: ``u*(x, t) = sin(pi x) cos(2 pi t) + 0.5 sin(a pi x) cos(2 a pi t)``, ``a = 4``
      (an integer, so that the boundary values vanish).

    Where ours differs from PINNacle:

    * point counts: PINNacle uses 8192 collocation points and 2048 boundary points over the
      whole edge of the square, of which the initial conditions keep those on ``t = 0`` (about
      512) and the boundary condition those on ``x = 0, 1`` (about 1024; those on ``t = 1``
      are unused): ``get_problem("wave1d_c", n_pde=8192, n_ic=512, n_bc=1024)``; our defaults
      are 2000, 400 (the same points for both initial pieces) and 400 (half on each edge);
    * the initial and boundary values are stated as functions (PINNacle evaluates its
      ref_sol there; they agree: the tests check it);
    * the wave speed is fixed at ``C = 2`` (the closed form needs it); test points are a
      101 x 101 grid (PINNacle: 2500 uniform points).

    Args:
        a: the frequency of the second mode, an integer (so that the boundary values vanish).
        n_pde: the number of collocation points.
        n_ic: the number of initial points (used by both initial pieces).
        n_bc: the number of boundary points, half on ``x = 0`` and half on ``x = 1``.
    """

    a: int = 4
    n_pde: int = 2000
    n_ic: int = 400
    n_bc: int = 400

    name = "wave1d_c"
    coords = ("x", "t")
    lower = (0.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")
    homogeneous = True

    def exact(self, z):
        x, t = z[0], z[1]
        return jnp.sin(jnp.pi * x) * jnp.cos(2 * jnp.pi * t) + 0.5 * jnp.sin(
            self.a * jnp.pi * x
        ) * jnp.cos(2 * self.a * jnp.pi * t)

    def operator(self, u, z):
        return partial(u, 1, 1)(z) - 4.0 * partial(u, 0, 0)(z)

    def pieces(self):
        u0 = lambda z: jnp.sin(jnp.pi * z[0]) + 0.5 * jnp.sin(self.a * jnp.pi * z[0])  # noqa: E731
        return {"ic": (Dirichlet(g=u0), DerivativeMatch(1, g=0.0)), "bc": (Dirichlet(g=0.0),)}

    def sample_points(self, key):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x0 = initial_line(jax.random.uniform(k_ic, (self.n_ic,)))
        t = jax.random.uniform(k_bc, (self.n_bc,))
        # half at x = 0, half at x = 1
        x = (jnp.arange(self.n_bc) >= self.n_bc // 2).astype(t.dtype)
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (x0, x0),
            "bc": (jnp.stack([x, t], axis=1),),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (101, 101))


ALPHA_X = 1.0 / (500.0 * np.pi) ** 2  # Heat2D_Multiscale's pde_coef
ALPHA_Y = 1.0 / np.pi**2


@dataclasses.dataclass(frozen=True)
class Heat2DMultiscale(Problem):
    """2D multi-scale heat (PINNacle's Heat2d-MS; ``heat2d_ms``), with its closed form.

    Follows PINNacle ``src/pde/heat.py``, class ``Heat2D_Multiscale`` (``bbox=[0, 1, 0, 1, 0, 5]``,
    ``pde_coef=(1/(500 pi)^2, 1/pi^2)``, ``init_coef=(20 pi, pi)``):

    * PDE: ``u_t = u_xx / (500 pi)^2 + u_yy / pi^2`` on ``(x, y, t) in [0, 1]^2 x [0, 5]``;
    * initial: ``u(x, y, 0) = sin(kx pi x) sin(pi y)``, ``kx = 20``;
    * boundary: ``u = 0`` on the four edges of the square (one Dirichlet piece);
    * closed form: ``u* = sin(kx pi x) sin(pi y) exp(-lambda t)``,
      ``lambda = (kx pi)^2 / (500 pi)^2 + 1 = 1.0016`` (``kx`` an integer, so that the
      boundary values vanish).

    Where ours differs from PINNacle:

    * point counts: PINNacle uses ``training_points(mul=4)``: 32768 collocation, 8192 initial
      and 8192 boundary points (``get_problem("heat2d_ms", n_pde=32768, n_ic=8192, n_bc=8192)``);
      our defaults are 2000, 800 and 800 (a quarter on each edge);
    * the initial values are stated as a function (PINNacle evaluates its ref_sol at t = 0)
      and the boundary value 0 as a number;
    * test points: an 81 x 21 x 11 grid of the box, endpoints included (PINNacle: 20000
      uniform points).

    Args:
        kx: the initial condition's frequency along ``x``, an integer (so that the boundary
            values vanish).
        n_pde: the number of collocation points.
        n_ic: the number of initial points.
        n_bc: the number of boundary points, a quarter on each edge of the square.
    """

    kx: float = 20.0
    n_pde: int = 2000
    n_ic: int = 800
    n_bc: int = 800

    name = "heat2d_ms"
    coords = ("x", "y", "t")
    lower = (0.0, 0.0, 0.0)
    upper = (1.0, 1.0, 5.0)
    terms = ("ic", "bc")
    homogeneous = True

    @property
    def decay(self) -> float:
        """``lambda = alpha_x (kx pi)^2 + alpha_y pi^2``, the decay rate of the closed form."""
        return ALPHA_X * (self.kx * np.pi) ** 2 + ALPHA_Y * np.pi**2

    def exact(self, z):
        return (
            jnp.sin(self.kx * jnp.pi * z[0]) * jnp.sin(jnp.pi * z[1]) * jnp.exp(-self.decay * z[2])
        )

    def operator(self, u, z):
        return partial(u, 2)(z) - ALPHA_X * partial(u, 0, 0)(z) - ALPHA_Y * partial(u, 1, 1)(z)

    def pieces(self):
        u0 = lambda z: jnp.sin(self.kx * jnp.pi * z[0]) * jnp.sin(jnp.pi * z[1])  # noqa: E731
        return {"ic": (Dirichlet(g=u0),), "bc": (Dirichlet(g=0.0),)}

    def sample_points(self, key):
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        # x = 0, 1 and y = 0, 1
        sides = box_edges(self.lower, self.upper, self.n_bc // 4, key=k_bc)[:4]
        initial = box_edges(self.lower, self.upper, self.n_ic, key=k_ic)[4]  # t = 0
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "ic": (initial,),
            "bc": (jnp.concatenate(sides),),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (81, 21, 11))


PINNACLE: dict[str, type[Problem]] = {
    cls.name: cls
    for cls in (Burgers1DC, Poisson2DC, NS2DC, Wave1DC, Heat2DMultiscale, PoissonND, HeatND)
}
"""PINNacle's seven problems by registry name (a dict ``{name: Problem subclass}``):
``burgers1d_c``, ``poisson2d_c``, ``ns2d_c``, ``wave1d_c``, ``heat2d_ms``, ``poisson_nd`` and
``heat_nd``; [`get_problem`][cgmpinn_jax.get_problem] finds them (``get_problem("wave1d_c")``)."""
