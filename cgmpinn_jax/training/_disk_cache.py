"""XLA's persistent compilation cache: compiled chunks kept on disk between runs.

Compiling the training chunks is most of a short run's wall time, most of it in
XLA's compiler and the rest tracing and lowering (measured in
``benchmarks/results/compile_time.md``). XLA can keep the compiled executables on disk, keyed
by the lowered program, the jax/jaxlib version, the backend and the compiler flags; a later
run of the same setup (same problem sizes, method, precision and ``k_upd``; budgets and seeds
may differ) then only traces and lowers, and loads the rest.

The library never turns this on by itself: it is a global jax setting
(``jax_compilation_cache_dir``), and the project's rule is that importing or calling
cgmpinn-jax leaves jax's configuration alone. The ``cgmpinn-jax`` command turns it on (an
application may), into `default_dir` unless ``--compile-cache off`` or
``CGMPINN_JAX_COMPILE_CACHE=off``. A user of the library who wants it calls `enable`
once, before the first training run.

Results do not depend on it: a loaded executable is the program the compiler produced for
the same input (``tests/test_disk_cache.py`` trains twice, the second time from the cache,
and compares the outputs bit for bit).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = ["ENV", "default_dir", "resolve", "enable"]

#: Environment variable: a directory, or ``off`` to disable the command's cache.
ENV = "CGMPINN_JAX_COMPILE_CACHE"
_OFF = ("off", "none", "0", "")


def default_dir() -> Path:
    """``$CGMPINN_JAX_COMPILE_CACHE``, else ``$XDG_CACHE_HOME/cgmpinn-jax/xla``, else
    ``~/.cache/cgmpinn-jax/xla``."""
    env = os.environ.get(ENV)
    if env is not None and env.strip().lower() not in _OFF:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "cgmpinn-jax" / "xla"


def resolve(option: str | None) -> Path | None:
    """The directory the command should use: ``option`` (a path, or ``off``), else the
    environment's setting, else `default_dir`; ``None`` when disabled.

    Args:
        option: a directory, ``"off"``, or ``None`` for the environment's or the default one.

    Examples:
        >>> resolve("off") is None
        True
        >>> str(resolve("/tmp/xla-cache"))
        '/tmp/xla-cache'
    """
    if option is not None:
        return None if option.strip().lower() in _OFF else Path(option).expanduser()
    env = os.environ.get(ENV)
    if env is not None and env.strip().lower() in _OFF:
        return None
    return default_dir()


def enable(path: str | os.PathLike, *, min_compile_seconds: float = 0.0) -> Path:
    """Keep XLA's compiled executables in ``path`` (created if missing) from now on, so that a
    later process running the same setup loads them instead of compiling again.

    Changes jax's global configuration (``jax_compilation_cache_dir`` and
    ``jax_persistent_cache_min_compile_time_secs``); call it before the first compilation of
    the process, as jax reads the setting once. The library never calls it by itself; the
    ``cgmpinn-jax`` command does (``--compile-cache DIR|off``, default
    ``~/.cache/cgmpinn-jax/xla``). Results do not depend on it.

    Args:
        path: the cache directory.
        min_compile_seconds: store every program whose compilation took at least this many
            seconds (0: all of them, the small restore and init programs included).

    Returns:
        The directory (a ``pathlib.Path``, ``~`` expanded).

    Raises:
        ValueError: ``path`` exists and is not a directory, or cannot be created or written.
    """
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError(f"compile cache: {str(p)!r} exists and is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"compile cache: cannot create {str(p)!r} ({e.strerror})") from None
    if not os.access(p, os.W_OK):
        raise ValueError(f"compile cache: {str(p)!r} is not writable")
    if min_compile_seconds < 0:
        raise ValueError(f"min_compile_seconds must be >= 0, got {min_compile_seconds}")
    jax.config.update("jax_compilation_cache_dir", str(p))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    return p
