"""The custom-PDE example (cgmpinn_jax/examples.py) and the "Your own PDE" docs section."""

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cgmpinn_jax as cj
from cgmpinn_jax import examples
from cgmpinn_jax.derivatives import partial
from cgmpinn_jax.examples import ViscousBurgers

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "own-pde.md"  # the "Your own PDE" page
SECTION = "# Your own PDE"


def doc_code_block(path=DOC, section=SECTION) -> str:
    """The first ```python block after the heading ``section`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    start = text.find(section)
    assert start >= 0, f"{path.name} has no {section!r} heading"
    m = re.search(r"```python\n(.*?)```", text[start:], flags=re.S)
    assert m, f"no python code block after {section!r} in {path.name}"
    return m.group(1)


def test_exact_solution_satisfies_pde(x64):
    p = ViscousBurgers()
    pts = jnp.asarray(p.test_grid().points, jnp.float64)
    res = jax.vmap(lambda z: p.operator(p.exact, z))(pts)
    # scale: the size of the individual terms of the operator
    u_t = jax.vmap(partial(p.exact, 1))(pts)
    scale = float(jnp.max(jnp.abs(u_t)))
    assert scale > 1.0
    assert float(jnp.max(jnp.abs(res))) / scale < 1e-8
    # homogeneous: the batch's source is zero, and would be ~0 if derived by autodiff
    batch = p.sample(jax.random.key(0))
    assert float(jnp.max(jnp.abs(batch["pde"][1]))) == 0.0
    # the IC / BC targets are the exact solution: u(x, 0) steps from 1 to 0
    ((ic_pts, ic_target),) = batch["ic"]
    np.testing.assert_allclose(ic_target, jax.vmap(p.exact)(ic_pts))
    assert set(np.unique(np.asarray(ic_pts[:, 1]))) == {0.0}
    left, right = batch["bc"]
    assert np.all(np.asarray(left[0][:, 0]) == -1.0) and np.all(np.asarray(right[0][:, 0]) == 1.0)
    np.testing.assert_allclose(left[1], 1.0, atol=1e-2)
    np.testing.assert_allclose(right[1], 0.0, atol=1e-2)


def test_problem_shapes_and_validation():
    p = ViscousBurgers(n_pde=64, n_ic=8, n_bc=4)
    b = p.sample(jax.random.key(1))
    assert b["pde"][0].shape == (64, 2)
    assert [x[0].shape for x in b["bc"]] == [(4, 2), (4, 2)]
    assert p.loss_terms == ("pde", "ic", "bc")
    assert p.test_grid().points.shape == (201 * 101, 2)
    assert "burgers" not in cj.PROBLEMS  # an example, not a benchmark
    with pytest.raises(ValueError, match="pde points"):
        p.pde_residuals(lambda z: z[0], jnp.zeros((3, 1)))


@pytest.mark.slow  # CI time: heavy compile; run with -m slow
def test_cgmpinn_cuts_the_error():
    """Budget: 300 Adam + 200 L-BFGS steps, k_upd = 100, 500 collocation points (float32).
    The test error must fall at least 3x below that of the freshly initialised network
    (the smallest over three initialisations)."""
    p = ViscousBurgers(n_pde=500, n_ic=100, n_bc=100)
    pts = p.test_grid().points
    exact = np.asarray(p.exact_on(pts))
    init = min(
        cj.error_metrics(
            np.asarray(jax.vmap(cj.nn.mlp(jax.random.key(s), 2))(jnp.asarray(pts, jnp.float32))),
            exact,
        ).rel_e2
        for s in range(3)
    )
    cfg = cj.TrainConfig(
        stages=(cj.stages.Adam(steps=300), cj.stages.LBFGS(steps=200)), cgm={"k_upd": 100}
    )
    res = cj.train(p, "cgmpinn", cfg, key=0, quiet=True)
    assert np.isfinite(res.metrics.rel_e2)
    assert res.metrics.rel_e2 * 3.0 <= init, (res.metrics, init)


def test_doc_block_runs(capsys):
    """Execute the docs' code block as a user would, with the training budget cut to a
    tiny one (the block's own budget is exercised by test_cgmpinn_cuts_the_error)."""
    code = doc_code_block()
    tiny, n = re.subn(
        r"stages=\(cj\.stages\.Adam\(steps=\d+\),\s*cj\.stages\.LBFGS\(steps=\d+\)\)",
        "stages=(cj.stages.Adam(steps=20), cj.stages.LBFGS(steps=0))",
        code,
    )
    assert n == 1, (
        "the docs example should state its budget as "
        "stages=(cj.stages.Adam(steps=...), cj.stages.LBFGS(steps=...))"
    )
    ns = {"__name__": "__doc_example__"}
    exec(compile(tiny, str(DOC), "exec"), ns)
    assert "Metrics(" in capsys.readouterr().out
    assert np.isfinite(ns["result"].metrics.rel_e2)
    # the docs' class and cgmpinn_jax.examples' class describe the same problem
    doc_p, ex_p = ns["ViscousBurgers"](), ViscousBurgers()
    assert doc_p.name == ex_p.name and doc_p.loss_terms == ex_p.loss_terms
    pts = jnp.asarray(ex_p.test_grid().points[::97], jnp.float32)
    np.testing.assert_allclose(doc_p.exact_on(pts), ex_p.exact_on(pts))

    def u(z):
        return jnp.sin(z[0]) * jnp.exp(-z[1])

    np.testing.assert_allclose(doc_p.pde_residuals(u, pts), ex_p.pde_residuals(u, pts), rtol=1e-6)
    kb = jax.random.key(3)
    for a, b in zip(jax.tree.leaves(doc_p.sample(kb)), jax.tree.leaves(ex_p.sample(kb))):
        np.testing.assert_array_equal(a, b)


def test_one_source_for_the_example(tmp_path, capsys):
    """examples.py is the single source: the README's block and the notebook's class cell are
    generated from it, and the generator detects and repairs a stale page."""
    src = examples.example_source()
    assert src.startswith("import dataclasses\n") and "class ViscousBurgers(cj.Problem):" in src
    assert (
        "from cgmpinn_jax.problems import Dirichlet, edge_pair, grid, initial_line, uniform" in src
    )
    assert "problems.heat" not in src  # the public helpers, not a benchmark module
    # the docs page holds exactly the generated block
    assert examples.main(["--check-readme", str(DOC)]) == 0
    assert examples.readme_block() in DOC.read_text(encoding="utf-8")
    assert doc_code_block() == src + "\n\n" + examples.README_USAGE.strip("\n") + "\n"
    assert examples.main(["--print"]) == 0
    assert capsys.readouterr().out.strip() == examples.readme_block()
    # a stale copy is detected and rewritten
    stale = tmp_path / "own-pde.md"
    stale.write_text(
        DOC.read_text(encoding="utf-8").replace("nu: float = 0.05", "nu: float = 0.5"),
        encoding="utf-8",
    )
    assert examples.main(["--check-readme", str(stale)]) == 1
    assert examples.main(["--write-readme", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    # the notebook's class cell is the same source
    nb = json.loads((ROOT / "notebooks" / "03_custom_pde.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert any(c.startswith(src) for c in cells)
