"""Fixtures of the benchmark tests: the repository root on ``sys.path`` (``benchmarks`` imports from
a checkout, not from the installed package), float64 on request, and the slow tier."""

import sys
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# long tests, marked slow (``-m 'not slow'``, pyproject's default, leaves them out; ``-m slow`` runs
# them)
SLOW = {
    "benchmarks/tests/test_pinnacle_study.py::test_deepxde_point_set_adds_every_constraint_point_once_to_the_pde_points",
    "benchmarks/tests/test_pinnacle_study.py::test_one_smoke_cell_end_to_end",
    "benchmarks/tests/test_runcache.py::test_train_resumable_resumes_a_killed_run_drops_init_and_cleans_up",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def x64():
    """Run a test in float64 and restore the previous setting afterwards."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)
