"""Suite-wide pytest setup (tests/ and the doctests in cgmpinn_jax/).

Every compiled XLA program stays in memory until its cache lets it go: jax's own jit caches
and the package's :data:`cgmpinn_jax.driver.COMPILE_CACHE` (up to 64 AOT-compiled chunk
functions). Across the whole suite that grew the process by gigabytes, and one CI run died
with a segmentation fault inside XLA's compiler about 80% of the way through. Each test
module (and each doctest module) therefore starts from empty caches.
"""

import gc

import jax
import pytest


@pytest.fixture(autouse=True, scope="module")
def _fresh_compile_caches():
    yield
    from cgmpinn_jax.driver import COMPILE_CACHE

    COMPILE_CACHE.clear()
    jax.clear_caches()
    gc.collect()
