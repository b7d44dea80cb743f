"""PINNacle's two high-dimensional problems with closed forms (registered in
`cgmpinn_jax.problems.pinnacle.PINNACLE`): `PoissonND` (``poisson_nd``, Poisson on the
unit cube ``[0, 1]^5``) and `HeatND` (``heat_nd``, heat in the unit 5-ball over ``[0, 1]`` with a
Neumann condition on the sphere).

Their PINNacle statements are in ``src/pde/poisson.py`` and ``src/pde/heat.py`` of
i207M/PINNacle (commit ``6f8d69c``); ours are written through the public API, with the source
term stated as PINNacle states it (not derived from the closed form), so the tests check the
closed form against the PDE.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ...derivatives import partial
from ...geometry import Ball, Box
from .._normal_pieces import Neumann
from ..base import Dirichlet, Problem, TestGrid

__all__ = ["PoissonND", "HeatND", "DIM", "CUBE", "BALL"]

DIM = 5
"""The spatial dimension of both problems, 5 (PINNacle's default ``dim=5``)."""

CUBE = Box((0.0,) * DIM, (1.0,) * DIM, name="cube")
"""The domain of [`PoissonND`][cgmpinn_jax.problems.PoissonND] (its ``geometry``): the unit cube
``[0, 1]^5``, a [`Box`][cgmpinn_jax.problems.Box] with one boundary part, ``"cube"``."""

BALL = Ball((0.0,) * DIM, 1.0, name="sphere")
"""The spatial domain of [`HeatND`][cgmpinn_jax.problems.HeatND]: the closed unit ball of R^5, a
[`Ball`][cgmpinn_jax.problems.Ball] whose boundary part is ``"sphere"``; the space-time domain is
``BALL x [0, 1]``."""

T_END = 1.0  # HeatND's final time (PINNacle's default T=1)
N_TEST = 5000  # random test points of both problems
TEST_SEED = 0  # numpy seed of those points


def _laplacian(u, z, n: int = DIM):
    """``sum_i d^2 u / dz_i^2`` over the first ``n`` coordinates."""
    return sum(partial(u, i, i)(z) for i in range(n))


def _test_points(points: np.ndarray) -> TestGrid:
    return TestGrid(points=points, shape=(points.shape[0],), axes=())


@dataclasses.dataclass(frozen=True)
class PoissonND(Problem):
    """5-D Poisson on the unit cube (PINNacle's PNd; ``poisson_nd``).

    Follows PINNacle ``src/pde/poisson.py``, class ``PoissonND`` (``dim=5, len=1``):

    * PDE: ``-lap u = (pi^2 / 4) sum_i sin(pi x_i / 2)`` on ``[0, 1]^5``
      (ours: operator ``lap u``, source ``f = -(pi^2 / 4) sum_i sin(pi x_i / 2)``);
    * boundary: ``u = u*`` on the whole boundary of the cube (one Dirichlet piece);
    * closed form: ``u*(x) = sum_i sin(pi x_i / 2)``.

    Where ours differs from PINNacle:

    * point counts: PINNacle uses ``training_points(mul=4)``, i.e. 32768 collocation and 8192
      boundary points (``get_problem("poisson_nd", n_pde=32768, n_bc=8192)``); our defaults,
      2000 and 800, fit a 2-core CPU;
    * test points: 5000 uniform random points of the cube (numpy seed 0) instead of PINNacle's
      20000-point uniform grid of the open cube;
    * the dimension is fixed at 5 (PINNacle's ``dim`` parameter) and the residual is written
      ``lap u - f`` (PINNacle: ``lap u + f``, with its f of the opposite sign: the same equation).

    The domain is [`CUBE`][cgmpinn_jax.problems.pinnacle.nd.CUBE] (its ``geometry``).

    Args:
        n_pde: the number of collocation points.
        n_bc: the number of boundary points, on the whole boundary of the cube.
    """

    n_pde: int = 2000
    n_bc: int = 800

    name = "poisson_nd"
    coords = tuple(f"x{i + 1}" for i in range(DIM))
    terms = ("bc",)
    geometry = CUBE

    def exact(self, z):
        return jnp.sum(jnp.sin(0.5 * jnp.pi * z))

    def operator(self, u, z):
        return _laplacian(u, z)

    def source(self, z):
        return -(jnp.pi**2 / 4.0) * jnp.sum(jnp.sin(0.5 * jnp.pi * z))

    def pieces(self):
        return {"bc": (Dirichlet(),)}  # PINNacle's DirichletBC takes its ref_sol: u = u*

    def sample_points(self, key):
        k_pde, k_bc = jax.random.split(key)
        return {
            "pde": CUBE.sample_interior(k_pde, self.n_pde),
            "bc": (CUBE.sample_boundary(k_bc, self.n_bc)[0],),
        }

    def test_grid(self):
        return _test_points(np.random.default_rng(TEST_SEED).uniform(size=(N_TEST, DIM)))


def lateral_normal(z: jax.Array) -> jax.Array:
    """The outward unit normal of the space-time cylinder ``ball x [0, T]`` on its lateral side
    ``|x| = 1``, at one point ``z = (x_1, ..., x_5, t)``: ``(x / |x|, 0)`` (`BALL`'s normal)."""
    n = BALL.normal(z[None, :DIM], "sphere")[0]
    return jnp.concatenate([n, jnp.zeros((1,), n.dtype)])


def _initial_value(z: jax.Array) -> jax.Array:
    return jnp.exp(0.5 * jnp.sum(z[:DIM] ** 2))


def _space_time(x: jax.Array, t: jax.Array) -> jax.Array:
    return jnp.concatenate([x, t[:, None].astype(x.dtype)], axis=1)


@dataclasses.dataclass(frozen=True)
class HeatND(Problem):
    """5-D heat in the unit ball with a Neumann condition on the sphere (PINNacle's HNd;
    ``heat_nd``).

    Follows PINNacle ``src/pde/heat.py``, class ``HeatND`` (``dim=5, T=1``); coordinates
    ``(x1, ..., x5, t)``, time last, on the space-time domain ``B x [0, 1]`` with ``B`` the
    closed unit ball of R^5 ([`BALL`][cgmpinn_jax.problems.pinnacle.nd.BALL]):

    * PDE: ``u_t = (1/5) lap u + f``, ``f(x, t) = -(1/5) |x|^2 exp(|x|^2 / 2 + t)``
      (ours: operator ``u_t - (1/5) lap u``, source ``f``, stated as PINNacle states it);
    * boundary: ``n . grad u = exp(|x|^2 / 2 + t)`` on ``|x| = 1`` (a `Neumann` piece whose
      normal is ``(x / |x|, 0)``, `lateral_normal`; PINNacle's NeumannBC takes its ref_sol);
    * initial: ``u(x, 0) = exp(|x|^2 / 2)``;
    * closed form: ``u*(x, t) = exp(|x|^2 / 2 + t)``.

    The box ``lower``/``upper`` is the bounding box ``[-1, 1]^5 x [0, 1]``; every point is
    drawn from ``BALL`` (``sample_interior`` / ``sample_boundary``) and a uniform time.

    Where ours differs from PINNacle:

    * point counts: PINNacle uses ``training_points(mul=4)``: 32768 collocation, 8192 boundary
      and 8192 initial points (``get_problem("heat_nd", n_pde=32768, n_bc=8192, n_ic=8192)``); our
      defaults, 2000, 400 and 400, fit a 2-core CPU;
    * test points: 5000 uniform random points of ``B x [0, 1]`` (numpy seed 0) instead of
      PINNacle's 20000 random points;
    * the dimension (5) and the final time (1) are fixed (PINNacle's ``dim`` and ``T``
      parameters); the residual is ``u_t - (1/5) lap u - f`` (PINNacle's is its negative).

    Args:
        n_pde: the number of collocation points.
        n_ic: the number of initial points (in the ball, at ``t = 0``).
        n_bc: the number of boundary points (on the sphere, at uniform times).
    """

    n_pde: int = 2000
    n_ic: int = 400
    n_bc: int = 400

    name = "heat_nd"
    coords = tuple(f"x{i + 1}" for i in range(DIM)) + ("t",)
    lower = (-1.0,) * DIM + (0.0,)
    upper = (1.0,) * DIM + (T_END,)
    terms = ("ic", "bc")

    def exact(self, z):
        return jnp.exp(0.5 * jnp.sum(z[:DIM] ** 2) + z[DIM])

    def operator(self, u, z):
        return partial(u, DIM)(z) - _laplacian(u, z) / DIM

    def source(self, z):
        r2 = jnp.sum(z[:DIM] ** 2)
        return -(r2 / DIM) * jnp.exp(0.5 * r2 + z[DIM])

    def pieces(self):
        flux = lambda z: jnp.exp(0.5 * jnp.sum(z[:DIM] ** 2) + z[DIM])  # noqa: E731
        return {"ic": (Dirichlet(g=_initial_value),), "bc": (Neumann(lateral_normal, g=flux),)}

    def sample_points(self, key):
        k = jax.random.split(key, 5)
        pde = _space_time(
            BALL.sample_interior(k[0], self.n_pde), T_END * jax.random.uniform(k[1], (self.n_pde,))
        )
        bc = _space_time(
            BALL.sample_boundary(k[2], self.n_bc)[0], T_END * jax.random.uniform(k[3], (self.n_bc,))
        )
        ic_x = BALL.sample_interior(k[4], self.n_ic)
        return {
            "pde": pde,
            "ic": (_space_time(ic_x, jnp.zeros((self.n_ic,), ic_x.dtype)),),
            "bc": (bc,),
        }

    def test_grid(self):
        rng = np.random.default_rng(TEST_SEED)
        g = rng.normal(size=(N_TEST, DIM))
        x = (
            g
            / np.linalg.norm(g, axis=1, keepdims=True)
            * rng.uniform(size=(N_TEST, 1)) ** (1.0 / DIM)
        )
        return _test_points(np.concatenate([x, T_END * rng.uniform(size=(N_TEST, 1))], axis=1))
