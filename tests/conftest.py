"""Shared test fixtures, and a per-process XLA compilation cache for the suite."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import pytest


def pytest_configure(config):
    """One persistent XLA compilation cache per test process, removed at its end: tests that
    compile the same program again (a resumed run, the same tiny configuration in another
    file) load it instead of compiling it. Loaded executables are the compiled ones, so no
    result changes. ``CGMPINN_TEST_XLA_CACHE=off`` turns it off (any word ``--compile-cache``
    takes for off); a cache directory set by the environment is left alone."""
    from cgmpinn_jax.training import _disk_cache

    switch = os.environ.get("CGMPINN_TEST_XLA_CACHE")
    if switch is not None and switch.strip().lower() in _disk_cache._OFF:
        return
    if jax.config.jax_compilation_cache_dir is not None:
        return
    config._cgmpinn_xla_cache = _disk_cache.enable(
        tempfile.mkdtemp(prefix="cgmpinn-test-xla-"), min_compile_seconds=0.0
    )


def pytest_unconfigure(config):
    folder = getattr(config, "_cgmpinn_xla_cache", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


_SLOW_TIER = Path(__file__).with_name("slow_tier.txt")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in ``tests/slow_tier.txt`` as ``slow`` (before ``-m`` selects).
    When a listed test's file was collected whole and the test is not in it (renamed or
    removed), the run stops with the stale id instead of quietly bringing it back."""
    listed = {
        line.strip()
        for line in _SLOW_TIER.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.slow)
    given = [
        Path(a).resolve() for a in config.args if "::" not in str(a)
    ]  # whole files and folders

    def collected_whole(nodeid: str) -> bool:
        file = (config.rootpath / nodeid.split("::")[0]).resolve()
        return any(g == file or g in file.parents for g in given)

    stale = sorted(i for i in listed - {item.nodeid for item in items} if collected_whole(i))
    if stale:
        raise pytest.UsageError(
            "tests/slow_tier.txt lists tests that do not exist: " + ", ".join(stale)
        )


@pytest.fixture
def x64():
    """Run a test in float64 and restore the previous setting afterwards."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The docs site, built once per test process with ``mkdocs build --strict`` and no
    warning (skipped where the docs extras are missing)."""
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "material"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = [
        line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("WARNING")
    ]
    assert warnings == []
    return out


@pytest.fixture
def ctrl_c_raises():
    """Python's own Ctrl-C handler for the test, whatever the launching shell left (a job
    started with ``&`` from a script inherits SIGINT ignored); the handler is put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
