"""Import a script of ``benchmarks/`` in a test.

The scripts are not a package: they import each other by bare name after putting their own
folder on ``sys.path`` (``inverse_oracle.py`` imports ``inverse``, most import ``runcache``).
Loading one here under that same bare name, once, means a test and the scripts it pulls in
share one module object (one set of constants, one record cache) instead of two copies.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    """``benchmarks/<name>.py`` as the module ``name`` (loaded on first use, then reused)."""
    if name in sys.modules:
        return sys.modules[name]
    path = BENCH / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no benchmark script {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod
