"""Generate the notebooks of this folder, executed, with their outputs (deterministic cell ids).

    python notebooks/make_notebooks.py            # build and execute every notebook, store it with its outputs
    python notebooks/make_notebooks.py 03_custom_pde.ipynb   # only these
    python notebooks/make_notebooks.py --check    # exit 1 if a file's cells differ from their source here

Edit the cells below, not the .ipynb files. Each notebook is executed at the budget of its
"parameters" cell (minutes on a laptop-class CPU) in a kernel running this interpreter, with
small inline figures, and stored with its outputs so that a reader sees the plots without
running it. ``--check`` compares the cells' sources (outputs differ from run to run: timings).
Each notebook's first code cell is tagged "parameters" and sets ``BUDGET``, the keyword
arguments of its ``TrainConfig`` (the stages as dicts, ``{"name": "adam", "steps": N}``: the
same as ``cj.stages.Adam(steps=N)``, with no import before the cell);
tests/test_notebooks.py replaces that cell with a tiny budget and executes the notebooks.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's cgmpinn_jax, even when not installed

from cgmpinn_jax.examples import example_source  # noqa: E402  (the custom-PDE notebook's class)


def _md(text):
    return ("md", text.strip("\n"))


def _code(text):
    return ("code", text.strip("\n"))


def _params(text):
    return ("params", text.strip("\n"))


# --------------------------------------------------------------------------------------
# 01: quick start

QUICKSTART = [
    _md("""
# Quick start: CGMPINN on 1D Poisson

Train the paper's method on its first benchmark, $u_{xx} = f$ on $[0, 1]$ with
$u^*(x) = \\sin(5\\pi x)\\cos(3\\pi x) + \\tanh(20 x)$, then look at the prediction, the loss
curve and the curriculum weights. The paper's budget is 5000 Adam + 10000 L-BFGS steps;
the default below takes about half a minute on a laptop-class CPU.
"""),
    _params("""
BUDGET = dict(stages=({"name": "adam", "steps": 1000},
                      {"name": "lbfgs", "steps": 1000}))
"""),
    _code("""
import matplotlib.pyplot as plt
import numpy as np

import cgmpinn_jax as cj

problem = cj.get_problem("poisson1d")
# BUDGET["stages"] as objects: (cj.stages.Adam(steps=1000), cj.stages.LBFGS(steps=1000))
config = cj.TrainConfig(**BUDGET)
result = cj.train(problem, "cgmpinn", config, key=0, quiet=True)

m = result.metrics
print(f"relative e2 = {m.rel_e2:.3e}   e2 (RMS) = {m.e2:.3e}   e_inf = {m.e_inf:.3e}")
print("\\n".join(result.stage_lines()))
print(f"compile {result.compile_seconds:.1f} s, run {result.run_seconds:.1f} s")
"""),
    _md("""
Prediction against the exact solution, and the training curve: `history.loss` is the
objective the optimizer saw (curriculum-weighted PDE term, ReLoBRaLo-balanced), and
`history.raw` the unweighted loss terms (PDE, BC).
"""),
    _code("""
grid = problem.test_grid()
x = grid.points[:, 0]
u_exact = np.asarray(problem.exact_on(grid.points))
u_pred = result.predict(grid.points)
h = result.history

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
ax1.plot(x, u_exact, "k-", lw=2, label="exact")
ax1.plot(x, u_pred, "r--", lw=1.5, label="CGMPINN")
ax1.set_xlabel("x")
ax1.set_ylabel("u")
ax1.legend()
ax1.set_title(f"relative e2 = {result.metrics.rel_e2:.2e}")
ax2.semilogy(h.k, h.loss, label="objective")
for j, name in enumerate(problem.loss_terms):
    ax2.semilogy(h.k, h.raw[:, j], lw=0.8, label=f"raw {name}")
if result.budgets.get("adam") and result.budgets.get("lbfgs"):
    ax2.axvline(result.budgets["adam"] + 0.5, color="gray", ls=":", label="Adam | L-BFGS")
ax2.set_xlabel("step k")
ax2.legend()
fig.tight_layout()
"""),
    _md("""
The curriculum at work: the per-point weights at a few refreshes. Early on ($\\tau \\approx 0$)
the easy points (small residuals) weigh more; once $\\tau \\to 1$ the hard ones do.
"""),
    _code("""
x_pde = np.asarray(result.batch["pde"][0][:, 0])
order = np.argsort(x_pde)
fig, ax = plt.subplots(figsize=(6, 3.5))
for i, w in sorted(h.snapshots.items()):
    ax.plot(x_pde[order], np.asarray(w)[order], lw=0.8, label=f"refresh {i}, tau = {h.refresh_tau[i]:.2f}")
ax.set_xlabel("x")
ax.set_ylabel("weight (mean 1)")
ax.legend(fontsize=8)
fig.tight_layout()
print("weight spread max/min at each refresh:", np.round(h.refresh_spread, 2))
"""),
]


# --------------------------------------------------------------------------------------
# 02: sweeps

SWEEPS = [
    _md("""
# Sweeps: the discrimination strength beta over seeds

$\\beta$ sets how strongly the CGM weights separate easy from hard components
($w_{easy} = e^{-\\beta \\tilde d}$, $w_{hard} = e^{-\\beta(1 - \\tilde d)}$); $\\beta = 0$ turns the
curriculum off. `cj.sweep` trains every (seed, $\\beta$) pair as one vmapped batch (sharded over
the available devices); the fallback below is a plain Python loop over `cj.train`.
"""),
    _params("""
BUDGET = dict(stages=({"name": "adam", "steps": 500},
                      {"name": "lbfgs", "steps": 500}))
SEEDS = [0, 1, 2]
BETAS = [0.0, 0.5, 1.0, 2.0, 4.0]
"""),
    _code("""
import matplotlib.pyplot as plt
import numpy as np

import cgmpinn_jax as cj

problem = cj.get_problem("poisson1d")
config = cj.TrainConfig(**BUDGET)

if hasattr(cj, "sweep"):
    sweep = cj.sweep(problem, "cgmpinn", config, seeds=SEEDS, grid={"beta": BETAS})
    rel_e2 = np.asarray(sweep.metrics["rel_e2"])  # (n_seeds, n_beta)
else:  # the same numbers, one training at a time
    rel_e2 = np.array([
        [cj.train(problem, "cgmpinn", config.replace(cgm={"beta": b}), key=s, quiet=True).metrics.rel_e2
         for b in BETAS]
        for s in SEEDS
    ])
print("relative e2, rows = seeds, columns = beta")
print(np.array2string(rel_e2, precision=3))
"""),
    _code("""
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
im = ax1.imshow(np.log10(rel_e2), cmap="viridis", aspect="auto")
ax1.set_xticks(range(len(BETAS)), [str(b) for b in BETAS])
ax1.set_yticks(range(len(SEEDS)), [str(s) for s in SEEDS])
ax1.set_xlabel("beta")
ax1.set_ylabel("seed")
for i in range(len(SEEDS)):
    for j in range(len(BETAS)):
        ax1.text(j, i, f"{rel_e2[i, j]:.1e}", ha="center", va="center", color="w", fontsize=8)
fig.colorbar(im, ax=ax1, label="log10 relative e2")
ax2.semilogy(BETAS, np.exp(np.mean(np.log(rel_e2), axis=0)), "o-", label="geometric mean over seeds")
ax2.fill_between(BETAS, rel_e2.min(axis=0), rel_e2.max(axis=0), alpha=0.3, label="min-max")
ax2.set_xlabel("beta")
ax2.set_ylabel("relative e2")
ax2.legend()
fig.tight_layout()
best = int(np.argmin(np.median(rel_e2, axis=0)))
print(f"best median relative e2 at beta = {BETAS[best]}")
"""),
]


# --------------------------------------------------------------------------------------
# 03: custom PDE

CUSTOM = [
    _md("""
# Your own PDE: viscous Burgers

A new PDE is a small subclass of `cj.Problem` (the README's "Your own PDE"; the class below
is the source of `cgmpinn_jax/examples.py`, copied here by `make_notebooks.py`;
`help(cj.Problem)` lists what to define): the exact solution and the operator are stated
once, the source and every initial/boundary target follow by automatic differentiation.
Here $u_t + u u_x - \\nu u_{xx} = 0$ on $[-1, 1] \\times [0, 1]$, $\\nu = 0.05$, with the
Cole-Hopf travelling wave $u^* = \\tfrac12\\left(1 - \\tanh\\frac{x - t/2}{4\\nu}\\right)$: a viscous
shock moving right, the kind of localised feature the curriculum is meant for.
"""),
    _params("""
BUDGET = dict(stages=({"name": "adam", "steps": 1000},
                      {"name": "lbfgs", "steps": 1000}))
"""),
    _code(example_source() + """

problem = ViscousBurgers()
"""),
    _md("""
A quick sanity check before training: the exact solution's residual should vanish (up to
float32 round-off here).
"""),
    _code("""
pts = jnp.asarray(problem.test_grid().points, jnp.float32)
res = problem.pde_residuals(problem.exact, pts)
print(f"max |N[u*]| on the test grid: {float(jnp.max(jnp.abs(res))):.2e}")
"""),
    _code("""
config = cj.TrainConfig(**BUDGET)
result = cj.train(problem, "cgmpinn", config, key=0, quiet=True)
print(result.metrics)
"""),
    _code("""
import matplotlib.pyplot as plt
import numpy as np

g = problem.test_grid()
nx, nt = g.shape
u_exact = np.asarray(problem.exact_on(g.points)).reshape(nx, nt)
u_pred = result.predict(g.points).reshape(nx, nt)
extent = [problem.lower[0], problem.upper[0], problem.lower[1], problem.upper[1]]

fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for ax, field, title in zip(axes, (u_exact, u_pred, np.abs(u_pred - u_exact)),
                            ("exact", "CGMPINN", "|error|")):
    im = ax.imshow(field.T, origin="lower", extent=extent, aspect="auto", cmap="viridis")
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel("t")
    fig.colorbar(im, ax=ax)
fig.tight_layout()

fig, ax = plt.subplots(figsize=(6, 3.5))
x = g.axes[0]
for t in (0.0, 0.5, 1.0):
    j = int(np.argmin(np.abs(g.axes[1] - t)))
    line, = ax.plot(x, u_exact[:, j], lw=2, alpha=0.5, label=f"exact, t = {g.axes[1][j]:.1f}")
    ax.plot(x, u_pred[:, j], "--", color=line.get_color(), label="CGMPINN")
ax.set_xlabel("x")
ax.set_ylabel("u")
ax.legend(fontsize=8)
fig.tight_layout()
"""),
    _md("""
To let the number of mixture components follow the residuals instead of the paper's fixed
K = 4, pass `cj.TrainConfig(..., cgm=cj.CGMOptions(n_components="bic"))`: at every refresh K = 1..6 are fitted
and the one of lowest BIC is used.
"""),
]


# --------------------------------------------------------------------------------------
# 04: inverse problems

INVERSE = [
    _md("""
# Inverse problems: identify a coefficient from noisy measurements

The heat equation $u_t - \\kappa u_{xx} = f$ on $[0, 1]^2$ with an **unknown diffusivity**
$\\kappa$ (true value 1): 200 noisy measurements of the solution inside the domain are
available, and the network and $\\kappa$ are trained together. The observation misfit is one
more loss term (`"obs"`), balanced by ReLoBRaLo like the PDE, initial and boundary terms; the
CGM weights apply to the PDE residuals unchanged. The source $f$ is data: it is computed with
the true $\\kappa$, never with the estimate.

Noise convention: `noise = 0.01` adds Gaussian noise with standard deviation 1% of the standard
deviation of the exact values at the observation points. The default budget below takes a few
minutes on a CPU; the README's inverse section has the measured accuracy at larger budgets.
"""),
    _params("""
BUDGET = dict(stages=({"name": "adam", "steps": 2000},
                      {"name": "lbfgs", "steps": 2000}))
NOISE = 0.01
N_OBS = 200
"""),
    _code("""
import matplotlib.pyplot as plt
import numpy as np

import cgmpinn_jax as cj
from cgmpinn_jax import inverse

problem = inverse.inverse_problem("heat", n_obs=N_OBS, noise=NOISE, key=0)  # unknowns: all heat declares
print("loss terms:", problem.loss_terms)
print("unknowns:", problem.unknowns)
obs = problem.observations
print(f"{len(obs)} observations, noise {obs.noise:g}")
"""),
    _code("""
result = cj.train(problem, "cgmpinn", cj.TrainConfig(**BUDGET), key=0, quiet=True)
print(result.unknowns.table())
m = result.metrics
print(f"solution: relative e2 = {m.rel_e2:.3e}   e_inf = {m.e_inf:.3e}   "
      f"(compile {result.compile_seconds:.1f} s, run {result.run_seconds:.1f} s)")
"""),
    _md("""
The coefficient's trajectory (`history.coeff_k`, `history.coeffs`: recorded at the start and
after every chunk of k_upd steps), and the unweighted loss terms, the observation misfit among
them.
"""),
    _code("""
h = result.history
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
ax1.plot(h.coeff_k, h.coeffs[:, 0], "o-", ms=3, label="estimate")
ax1.axhline(1.0, color="k", ls="--", label="true kappa")
ax1.set_xlabel("step k")
ax1.set_ylabel("kappa")
ax1.legend()
for j, name in enumerate(problem.loss_terms):
    ax2.semilogy(h.k, h.raw[:, j], lw=0.8, label=name)
ax2.set_xlabel("step k")
ax2.set_title("unweighted loss terms")
ax2.legend()
plt.tight_layout()
plt.show()
"""),
    _md("""
## Your own measurements

`Observations(points, values, noise)` takes any data inside the domain (shapes `(M, d)` and
`(M,)`, finite values; a bad input raises an error naming the culprit). Here: four sensors at
fixed positions, each sampled at 50 times. Runs on other observations of the same shape reuse
the compilation (an `InverseProblem`'s compile-cache key ignores the observations: they are
data).
"""),
    _code("""
rng = np.random.default_rng(0)
t = np.linspace(0.0, 1.0, N_OBS // 4)
points = np.array([(x, ti) for x in (0.1, 0.3, 0.6, 0.9) for ti in t])
exact = np.asarray(problem.exact_on(points))
values = exact + NOISE * exact.std() * rng.standard_normal(len(exact))
sensors = inverse.InverseProblem(cj.get_problem("heat"), inverse.Observations(points, values, NOISE))
res2 = cj.train(sensors, "cgmpinn", cj.TrainConfig(**BUDGET), key=0, quiet=True)
print(res2.unknowns.table())
print(f"solution: relative e2 = {res2.metrics.rel_e2:.3e}   e_inf = {res2.metrics.e_inf:.3e}")
"""),
]

# --------------------------------------------------------------------------------------
# 05: problems as the field poses them

FROM_DATA = [
    _md("""
# Problems from data: no closed form, systems, holes

The three worked examples of `cgmpinn_jax.problems.worked` (docs: "Problems from data"), each
stated as the field states it: initial and boundary data instead of an exact solution, a
reference solution as data, three fields and three equations, a domain with holes. Errors are
measured against the reference, and every report says which. The budget below is short
(minutes on a 2-core CPU); `benchmarks/results/field_problems.md` has the long runs.
"""),
    _params("""
BUDGET = dict(stages=({"name": "adam", "steps": 1000},
                      {"name": "lbfgs", "steps": 500}))
"""),
    _code("""
import matplotlib.pyplot as plt
import numpy as np

import cgmpinn_jax as cj

for name in ("burgers_data", "cavity", "holes"):
    p = cj.get_problem(name)
    print(f"{name:13s} fields={p.fields} equations={p.equations} terms={p.terms}  against {p.reference_data().source}")
"""),
    _md("""
## Burgers from its initial data

$u_t + u u_x = (0.01/\\pi) u_{xx}$, $u(x, 0) = -\\sin(\\pi x)$, $u(\\pm 1, t) = 0$. The
reference is a Fourier pseudo-spectral solution shipped with the package (estimated error
3e-13, `benchmarks/results/burgers_reference.md`).
"""),
    _code("""
burgers = cj.train("burgers_data", "pinn", cj.TrainConfig(**BUDGET), key=0, quiet=True)
print(burgers.metrics.describe())
ref = burgers.problem.reference_data()
fig, ax = plt.subplots(figsize=(6, 3.5))
for t in (0.0, 0.25, 0.5, 1.0):
    sel = np.isclose(ref.points[:, 1], t)
    ax.plot(ref.points[sel, 0], ref.values[sel, 0], "k-", lw=1)
    ax.plot(ref.points[sel, 0], burgers.predict(ref.points[sel]), "--", label=f"t = {t}")
ax.set_xlabel("x")
ax.set_title("Burgers: prediction (dashed) and reference (black)")
ax.legend()
plt.show()
"""),
    _md("""
## The lid-driven cavity: three fields, three equations

Steady Navier-Stokes at Re = 100, fields `(u, v, p)`, the lid moving with $u = 4x(1 - x)$;
the pressure is pinned at the origin by a `Condition` piece. The metrics pool every field
and point (PINNacle's L2RE) and give each field its own.
"""),
    _code("""
cavity = cj.train("cavity", "cgmpinn", cj.TrainConfig(**BUDGET), key=0, quiet=True)
print(cavity.metrics.describe())
xs = np.linspace(0.0, 1.0, 41)
X, Y = np.meshgrid(xs, xs, indexing="xy")
uvp = cavity.predict(np.stack([X.ravel(), Y.ravel()], -1))
U, V, P = (uvp[:, j].reshape(X.shape) for j in range(3))
fig, ax = plt.subplots(figsize=(5, 4.5))
im = ax.contourf(X, Y, P, levels=20, cmap="coolwarm")
ax.streamplot(X, Y, U, V, color="k", density=1.2, linewidth=0.6)
fig.colorbar(im, ax=ax, label="p")
ax.set_title("cavity: streamlines over the pressure")
plt.show()
"""),
    _md("""
## A square with four holes

Laplace's equation on `Box - Disk - Disk - Disk - Disk`: collocation points uniform in the
domain, boundary points uniform by arc length on each named part, `u = 1` on the square and
`u = 0` on the circles.
"""),
    _code("""
holes = cj.train("holes", "pinn", cj.TrainConfig(**BUDGET), key=0, quiet=True)
print(holes.metrics.describe())
batch = holes.batch
pts = holes.problem.reference_data().points
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.scatter(*np.asarray(batch["pde"][0]).T, s=1, c="0.6")
for (p, _), c in zip(batch["bc"], ("C0", "C3")):
    ax1.scatter(*np.asarray(p).T, s=2, c=c)
ax1.set_aspect("equal")
ax1.set_title("training points")
im = ax2.scatter(*pts.T, c=holes.predict(pts), s=6)
ax2.set_aspect("equal")
fig.colorbar(im, ax=ax2)
ax2.set_title("prediction at the reference's points")
plt.show()
"""),
]

NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_sweeps.ipynb": SWEEPS,
    "03_custom_pde.ipynb": CUSTOM,
    "04_inverse.ipynb": INVERSE,
    "05_problems_from_data.ipynb": FROM_DATA,
}


def build(cells) -> nbformat.NotebookNode:
    """A notebook (nbformat 4) from ``(kind, source)`` pairs, with ids ``cell-00``, ..."""
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, src) in enumerate(cells):
        if kind == "md":
            cell = new_markdown_cell(src)
        else:
            cell = new_code_cell(src)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
        cell.id = f"cell-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(nb) -> str:
    return nbformat.writes(nb) + "\n"


#: run first in the kernel (not stored): small inline figures
_SETUP = "import matplotlib\nmatplotlib.rcParams['figure.dpi'] = 60\n%config InlineBackend.figure_formats = ['png']"


def execute(nb) -> nbformat.NotebookNode:
    """Execute ``nb`` in place in a kernel running this interpreter (a temporary ``python3``
    kernelspec first on JUPYTER_PATH), with the checkout importable and small figures."""
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp) / "jupyter" / "kernels" / "python3"
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3", "language": "python"}))
        env = {"JUPYTER_PATH": os.pathsep.join(filter(None, [str(Path(tmp) / "jupyter"), os.environ.get("JUPYTER_PATH")])),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            setup = new_code_cell(_SETUP)
            setup.id = "setup"
            nb.cells.insert(0, setup)
            try:
                NotebookClient(nb, kernel_name="python3", timeout=3600, record_timing=False,
                               resources={"metadata": {"path": tmp}}).execute()
            finally:
                nb.cells.pop(0)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    for cell in nb.cells:  # number the cells as if the setup cell had not run
        if cell.cell_type == "code" and cell.execution_count:
            cell.execution_count -= 1
            for o in cell.outputs:
                if o.get("execution_count"):
                    o["execution_count"] -= 1
    return nb


def sources(nb) -> list[tuple[str, str, list]]:
    """Each cell's type, source and tags: what ``--check`` compares."""
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or list(NOTEBOOKS)
    unknown = sorted(set(names) - set(NOTEBOOKS))
    if unknown:
        print(f"unknown notebook(s): {', '.join(unknown)}; valid: {', '.join(NOTEBOOKS)}")
        return 2
    stale = []
    for name in names:
        path = HERE / name
        nb = build(NOTEBOOKS[name])
        if check:
            if not path.exists() or sources(nbformat.read(path, as_version=4)) != sources(nb):
                stale.append(name)
        else:
            print(f"executing {name} ...", flush=True)
            execute(nb)
            path.write_text(render(nb), encoding="utf-8")
            print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)", flush=True)
    if stale:
        print("out of date (run python notebooks/make_notebooks.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
