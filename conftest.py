"""Suite-wide pytest setup (tests/ and the doctests in cgmpinn_jax/).

Every compiled XLA program stays in memory until its cache lets it go: jax's own jit caches
and the package's :data:`cgmpinn_jax.training.COMPILE_CACHE` (up to 64 AOT-compiled chunk
functions). Across the whole suite that grew the process by gigabytes, and one CI run died
with a segmentation fault inside XLA's compiler about 80% of the way through. Each test
module (and each doctest module) therefore starts from empty caches.

The command's on-disk XLA cache (:mod:`cgmpinn_jax.training._disk_cache`) is off for the in-process
CLI tests: it would change jax's configuration for the rest of the session and write into the home
directory. ``tests/test_disk_cache.py`` turns it on in subprocesses, into a temporary directory.
"""

import gc
import os

import jax
import pytest

os.environ["CGMPINN_JAX_COMPILE_CACHE"] = "off"


@pytest.fixture(autouse=True, scope="module")
def _fresh_compile_caches():
    yield
    from cgmpinn_jax.training import COMPILE_CACHE

    COMPILE_CACHE.clear()
    jax.clear_caches()
    gc.collect()
