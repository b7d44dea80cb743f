"""Execute the notebooks at tiny budgets (nbclient), and check they match their generator.

The kernel is this interpreter (``sys.executable``): a temporary kernelspec named
``python3`` is put first on ``JUPYTER_PATH``, so a user-level or system ``python3`` kernel
pointing at another Python cannot be picked up. Matplotlib runs with the Agg backend.
"""

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
DOC = ROOT / "docs" / "own-pde.md"  # the "Your own PDE" page

# Tiny budgets: 20 Adam steps and no L-BFGS stage (its compilation alone costs ~15 s on a
# small CPU; the stage is covered by tests/test_train.py), a 1 x 2 sweep.
BUDGET = (
    'BUDGET = dict(stages=({"name": "adam", "steps": 20}, {"name": "lbfgs", "steps": 0}), '
    'cgm={"k_upd": 10})'
)
TINY = {
    "01_quickstart.ipynb": BUDGET,
    "02_sweeps.ipynb": BUDGET + "\nSEEDS = [0]\nBETAS = [0.5, 2.0]",
    "03_custom_pde.ipynb": BUDGET,
    "04_inverse.ipynb": BUDGET + "\nNOISE = 0.01\nN_OBS = 200",
    "05_problems_from_data.ipynb": BUDGET,
}


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_notebooks", NB_DIR / "make_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def python3_kernel(tmp_path, monkeypatch):
    """A ``python3`` kernelspec that runs this interpreter, first on JUPYTER_PATH."""
    spec_dir = tmp_path / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (test)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    old = os.environ.get("JUPYTER_PATH")
    monkeypatch.setenv(
        "JUPYTER_PATH", os.pathsep.join(filter(None, [str(tmp_path / "jupyter"), old]))
    )
    monkeypatch.setenv("MPLBACKEND", "Agg")
    old_pp = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), old_pp])))
    from jupyter_client.kernelspec import KernelSpecManager

    ks = KernelSpecManager().get_kernel_spec("python3")
    assert ks.argv[0] == sys.executable
    return tmp_path


def test_notebooks_match_generator():
    """The stored notebooks have their generator's cells, and were stored executed: every code
    cell ran in order, without an error, and every cell that shows a plot holds its figure."""
    gen = _load_generator()
    assert set(gen.NOTEBOOKS) == set(TINY)
    for name, cells in gen.NOTEBOOKS.items():
        path = NB_DIR / name
        nb = nbformat.read(path, as_version=4)
        assert gen.sources(nb) == gen.sources(gen.build(cells)), (
            f"{name} is stale: run python notebooks/make_notebooks.py"
        )
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", [])
        assert code[0].source.startswith('BUDGET = dict(stages=({"name": "adam", "steps": ')
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), (
            f"{name} was not stored executed"
        )
        for c in code:
            assert all(o.output_type != "error" for o in c.outputs), f"{name}: a cell failed"
            if "plt.show()" in c.source:
                assert any("image/png" in o.get("data", {}) for o in c.outputs), (
                    f"{name}: a plot cell has no figure"
                )
        assert path.stat().st_size < 400 * 1024, f"{name}: figures too large"


def test_custom_pde_notebook_matches_docs():
    """The class in 03_custom_pde.ipynb is the one of the docs' "Your own PDE" block."""

    def class_src(text):
        m = re.search(
            r"@dataclasses\.dataclass\(frozen=True\)\nclass ViscousBurgers.*?\(201, 101\)\)\n",
            text,
            re.S,
        )
        assert m
        return m.group(0)

    nb = nbformat.read(NB_DIR / "03_custom_pde.ipynb", as_version=4)
    nb_src = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert class_src(nb_src) == class_src(DOC.read_text(encoding="utf-8"))


# CI executes the inverse notebook (the newest); the others are marked slow (kernel start +
# compile, ~20 s each): python -m pytest -m slow tests/test_notebooks.py
@pytest.mark.parametrize(
    "name",
    [
        n if n == "04_inverse.ipynb" else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(TINY)
    ],
)
def test_notebook_executes(name, python3_kernel):
    nb = nbformat.read(NB_DIR / name, as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1
    params[0].source = TINY[name]
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(python3_kernel)}},
    )
    client.execute()  # raises CellExecutionError on any failing cell
    text = "\n".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream"
    )
    assert "Traceback" not in text
    if name != "02_sweeps.ipynb":
        assert "e_inf" in text or "rel_e2=" in text
    else:
        assert "relative e2" in text
