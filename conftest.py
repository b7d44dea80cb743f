"""Suite-wide pytest setup (tests/ and the doctests in cgmpinn_jax/).

Every compiled XLA program stays in memory until its cache lets it go: jax's own jit caches
and the package's :data:`cgmpinn_jax.training.COMPILE_CACHE` (up to 64 AOT-compiled chunk
functions). Across the whole suite that grew the process by gigabytes, and one CI run died
with a segmentation fault inside XLA's compiler about 80% of the way through. Each test
module (and each doctest module) therefore starts from empty caches.

The command's on-disk XLA cache (:mod:`cgmpinn_jax.training._disk_cache`) is off for the in-process CLI
tests: it would change jax's configuration for the rest of the session and write into the
home directory. ``tests/test_disk_cache.py`` turns it on in subprocesses, into a temporary
directory.

Under pytest-xdist each worker runs on one core of its own with one XLA thread (unless
``XLA_FLAGS`` is already set), so that two workers do not both spread XLA's thread pools
over the same two cores.
"""

import gc
import os

import jax
import pytest

os.environ["CGMPINN_JAX_COMPILE_CACHE"] = "off"


def _one_core_per_worker() -> None:
    """Pin an xdist worker (``gw<i>``) to core ``i`` of those available, with one XLA thread."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    n_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        if 0 < n_workers <= len(cores):
            os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})


_one_core_per_worker()


@pytest.fixture(autouse=True, scope="module")
def _fresh_compile_caches():
    yield
    from cgmpinn_jax.training import COMPILE_CACHE

    COMPILE_CACHE.clear()
    jax.clear_caches()
    gc.collect()
