"""A user-defined PDE that is not one of the paper's six benchmarks: 1D viscous Burgers.

.. math::

    u_t + u\\,u_x - \\nu\\,u_{xx} = 0, \\qquad (x, t) \\in [-1, 1] \\times [0, 1],\\ \\nu = 0.05,

with the Cole-Hopf travelling-wave solution (a viscous shock from ``u = 1`` to ``u = 0``
moving right at speed 1/2)

.. math::

    u^*(x, t) = \\tfrac12 \\left(1 - \\tanh\\frac{x - t/2}{4\\nu}\\right).

It is written exactly as a user would write it: a frozen dataclass subclass of
[`Problem`][cgmpinn_jax.problems.Problem] that states its exact solution, its operator and its
points, using only the public helpers. Initial and boundary targets come from the exact
solution; ``homogeneous = True`` skips deriving the (zero) source. It is deliberately not
registered in `PROBLEMS`; pass an instance to
[`train`][cgmpinn_jax.train], or name it ``cgmpinn_jax.examples:ViscousBurgers``
(``cgmpinn-jax run cgmpinn_jax.examples:ViscousBurgers``).

This file is the single source of the example: the code block of the docs page "Your own
PDE" (``docs/own-pde.md``) and ``notebooks/03_custom_pde.ipynb`` are generated from the
region between the ``example`` markers below (``python -m cgmpinn_jax.examples --print``
prints the block; ``--write-readme docs/own-pde.md`` rewrites it, ``--check-readme
docs/own-pde.md`` checks it).

Examples:
    >>> import cgmpinn_jax as cj
    >>> from cgmpinn_jax.examples import ViscousBurgers
    >>> problem = ViscousBurgers(n_pde=500)
    >>> problem.loss_terms
    ('pde', 'ic', 'bc')
    >>> cfg = cj.TrainConfig(stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=0)))
    >>> res = cj.train(problem, "cgmpinn", cfg, quiet=True)  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cgmpinn_jax.problems import box_edges

# --8<-- [start:example]
import dataclasses

import jax
import jax.numpy as jnp

import cgmpinn_jax as cj
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.problems import Dirichlet, edge_pair, grid, initial_line, uniform


@dataclasses.dataclass(frozen=True)
class ViscousBurgers(cj.Problem):
    """Viscous Burgers, u_t + u u_x - nu u_xx = 0 on [-1, 1] x [0, 1], with the exact
    solution u* = (1 - tanh((x - t/2) / (4 nu))) / 2.

    Attributes:
        nu: the viscosity.
        n_pde: the number of collocation points in the domain.
        n_ic: the number of points on the initial line t = 0.
        n_bc: the number of points on each of the edges x = -1 and x = 1.
    """

    nu: float = 0.05  # fields: the problem's parameters (saved with a trained model)
    n_pde: int = 2000
    n_ic: int = 200
    n_bc: int = 200

    name = "burgers"
    coords = ("x", "t")  # a point is z = (x, t): z[0] = x, z[1] = t
    lower = (-1.0, 0.0)
    upper = (1.0, 1.0)
    terms = ("ic", "bc")  # constraint terms besides "pde"
    homogeneous = True  # no source term

    def exact(self, z):  # one point z = (x, t) -> a scalar
        return 0.5 * (1.0 - jnp.tanh((z[0] - 0.5 * z[1]) / (4.0 * self.nu)))

    def operator(self, u, z):  # N[u] = u_t + u u_x - nu u_xx, at one point
        u_t, u_x, u_xx = partial(u, 1)(z), partial(u, 0)(z), partial(u, 0, 0)(z)
        return u_t + u(z) * u_x - self.nu * u_xx

    def pieces(self):  # u = u* at t = 0, and on x = -1 and x = 1 (two pieces, summed)
        return {"ic": (Dirichlet(),), "bc": (Dirichlet(), Dirichlet())}

    def sample_points(self, key):  # one point array per piece, in the order of pieces()
        k_pde, k_ic, k_bc = jax.random.split(key, 3)
        x_ic = uniform(k_ic, self.n_ic, (-1.0,), (1.0,))[:, 0]
        t_bc = uniform(k_bc, self.n_bc, (0.0,), (1.0,))[:, 0]
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),  # (n_pde, 2)
            "ic": (initial_line(x_ic),),  # points (x, 0)
            "bc": edge_pair(t_bc, -1.0, 1.0),  # points (-1, t) and (1, t)
        }

    def test_grid(self):  # where the metrics are computed
        return grid(self.lower, self.upper, (201, 101))


# --8<-- [end:example]


@dataclasses.dataclass(frozen=True)
class Helmholtz2D(cj.Problem):
    """u_xx + u_yy + k^2 u = f on [-1, 1]^2, u* = sin(a1 pi x) sin(a2 pi y), u = 0 on the edges.

    The second PDE of the "where to start" table (``benchmarks/results/own_pde.md``): the 2D
    Helmholtz test problem of the PINN literature (Wang, Teng and Perdikaris 2021) with
    ``a = (1, 4)``, ``k = 1``. The source ``f = N[u*]`` is derived by automatic differentiation;
    the zero boundary values come from the exact solution. Collocation points are uniform in the
    square, ``n_edge`` uniform points on each edge (redrawn with every key); the test grid
    is 101 x 101.

    Attributes:
        a1: the wave number of the exact solution along ``x``, in units of ``pi``.
        a2: the wave number of the exact solution along ``y``, in units of ``pi``.
        k: the Helmholtz coefficient in ``u_xx + u_yy + k^2 u``.
        n_pde: the number of collocation points.
        n_edge: the number of boundary points on each of the four edges.

    Examples:
        >>> import jax
        >>> problem = Helmholtz2D(n_pde=100, n_edge=10)
        >>> points = problem.sample_points(jax.random.key(0))
        >>> points["pde"].shape, [e.shape for e in points["bc"]]
        ((100, 2), [(10, 2), (10, 2), (10, 2), (10, 2)])
    """

    a1: float = 1.0
    a2: float = 4.0
    k: float = 1.0
    n_pde: int = 2000
    n_edge: int = 100

    name = "helmholtz2d"
    coords = ("x", "y")
    lower = (-1.0, -1.0)
    upper = (1.0, 1.0)
    terms = ("bc",)

    def exact(self, z):
        return jnp.sin(self.a1 * jnp.pi * z[0]) * jnp.sin(self.a2 * jnp.pi * z[1])

    def operator(self, u, z):
        return partial(u, 0, 0)(z) + partial(u, 1, 1)(z) + self.k**2 * u(z)

    def pieces(self):
        return {"bc": (Dirichlet(),) * 4}

    def sample_points(self, key):
        k_pde, k_bc = jax.random.split(key)
        return {
            "pde": uniform(k_pde, self.n_pde, self.lower, self.upper),
            "bc": box_edges(self.lower, self.upper, self.n_edge, key=k_bc),
        }

    def test_grid(self):
        return grid(self.lower, self.upper, (101, 101))


__all__ = ["ViscousBurgers", "Helmholtz2D", "example_source", "readme_block"]

# What the README runs after the class (tests/test_examples.py runs it at a tiny budget).
README_USAGE = """
problem = ViscousBurgers(n_pde=500)
config = cj.TrainConfig(stages=(cj.stages.Adam(steps=300), cj.stages.LBFGS(steps=200)),
                        cgm=cj.CGMOptions(k_upd=100))
result = cj.train(problem, "cgmpinn", config, key=0, quiet=True)
print(result.metrics)
"""

README_BEGIN = (
    "<!-- BEGIN GENERATED by `python -m cgmpinn_jax.examples --write-readme docs/own-pde.md`; "
    "edit cgmpinn_jax/examples.py -->"
)
README_END = "<!-- END GENERATED -->"


def example_source() -> str:
    """The source text of the example, as a user would write it: the imports and the
    ``ViscousBurgers`` class, from the marked region of this module.

    Returns:
        The code as a string ending with a newline; the docs page "Your own PDE" and the
            custom-PDE notebook show exactly this text.

    Examples:
        >>> example_source().splitlines()[0]
        'import dataclasses'
    """
    text = Path(__file__).read_text(encoding="utf-8")
    start = text.index("# --8<-- [start:example]\n") + len("# --8<-- [start:example]\n")
    end = text.index("# --8<-- [end:example]")
    return text[start:end].strip("\n") + "\n"


def readme_block() -> str:
    """The generated region of the docs page "Your own PDE": the example's source and the
    code that trains it, as one fenced Python code block between the region's marker comments.

    Returns:
        The region's Markdown text, what ``python -m cgmpinn_jax.examples --write-readme
            docs/own-pde.md`` writes and ``--check-readme`` compares.

    Examples:
        >>> readme_block().splitlines()[1]
        '```python'
    """
    code = example_source() + "\n\n" + README_USAGE.strip("\n") + "\n"
    return f"{README_BEGIN}\n```python\n{code}```\n{README_END}"


def _readme_region(text: str) -> tuple[int, int]:
    start = text.find(README_BEGIN)
    end = text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"no generated region ({README_BEGIN!r} ... {README_END!r}) in the README")
    return start, end + len(README_END)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m cgmpinn_jax.examples", description=__doc__.splitlines()[0]
    )
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--print", action="store_true", help="print the README's generated code block")
    g.add_argument(
        "--write-readme", metavar="README", help="rewrite the generated region of this README"
    )
    g.add_argument(
        "--check-readme", metavar="README", help="exit 1 if this README's generated region is stale"
    )
    args = p.parse_args(argv)
    if args.print:
        print(readme_block())
        return 0
    path = Path(args.write_readme or args.check_readme)
    text = path.read_text(encoding="utf-8")
    a, b = _readme_region(text)
    new = text[:a] + readme_block() + text[b:]
    if args.check_readme:
        if new != text:
            print(
                f"{path}: the generated example is stale; "
                f"run python -m cgmpinn_jax.examples --write-readme {path}"
            )
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
