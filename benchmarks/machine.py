"""Where a run ran: the machine's facts, the XLA thread setting and the commit of the code.

One place for what every study records beside its numbers (``runcache`` stamps each run with
``machine_info()``, ``code_commit()`` and ``threads_label()``)::

    host(*names) -> dict            # named facts of this machine (``arch``, ``system``,
                                    # ``cpu_count``, ...)
    machine_text(template) -> str   # those facts in a study's own one-line format
    machine_info() -> dict          # platform, CPUs, jax version, backend, devices
    code_commit() -> str            # short hash of this checkout, ``+dirty`` when the package
                                    # differs
    ONE_THREAD_XLA_FLAGS            # XLA_FLAGS for one XLA thread
    threads_label() -> str          # "one XLA thread" / "XLA default threads" (from XLA_FLAGS)
"""

from __future__ import annotations

import os
import platform
import string
import subprocess
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent


ONE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def threads_label(flags: str | None = None) -> str:
    """``"one XLA thread"`` when ``flags`` (default: the environment's ``XLA_FLAGS``) pin one
    intra-op thread, else ``"XLA default threads"``."""
    flags = os.environ.get("XLA_FLAGS", "") if flags is None else flags
    return "one XLA thread" if "intra_op_parallelism_threads=1" in flags else "XLA default threads"


def _cpus_available() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's processor."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _jax():
    import jax

    return jax


def _jaxlib_version() -> str:
    import jaxlib

    return getattr(jaxlib, "__version__", "?")


# every fact of this machine a study records, by name; the jax ones import jax when asked for
_HOST: dict[str, Callable[[], Any]] = {
    "platform": platform.platform,  # Linux-6.1...-x86_64-with-glibc2.36
    "processor": lambda: platform.processor() or platform.machine(),
    "arch": platform.machine,  # x86_64
    "system": platform.system,  # Linux
    "cpu_model": _cpu_model,  # AMD EPYC ..., Intel Xeon ...
    "cpu_count": os.cpu_count,
    "cpus_available": _cpus_available,  # this process's CPU affinity
    "python": platform.python_version,
    "jax": lambda: _jax().__version__,
    "jaxlib": _jaxlib_version,
    "backend": lambda: _jax().default_backend(),
    "devices": lambda: [f"{d.platform}:{getattr(d, 'device_kind', '?')}" for d in _jax().devices()],
    "device_kind": lambda: _jax().devices()[0].device_kind,
    "device_count": lambda: len(_jax().devices()),
}


def host(*names: str) -> dict:
    """``{name: value}`` of the named facts of this machine (keys of ``_HOST``: ``platform``,
    ``processor``, ``arch``, ``system``, ``cpu_model``, ``cpu_count``, ``cpus_available``,
    ``python``, ``jax``, ``jaxlib``, ``backend``, ``devices``, ``device_kind``,
    ``device_count``)."""
    unknown = [n for n in names if n not in _HOST]
    if unknown:
        raise KeyError(f"unknown machine facts {unknown}; known: {sorted(_HOST)}")
    return {n: _HOST[n]() for n in names}


def machine_text(template: str) -> str:
    """``template`` with its ``{fact}`` fields (:func:`host`) filled in, e.g.
    ``machine_text("{arch}, {cpu_count} cores, {system}")``; jax is imported only when the
    template names a jax fact."""
    names = {
        field.split(".")[0].split("[")[0]
        for _, field, _, _ in string.Formatter().parse(template)
        if field
    }
    return template.format(**host(*sorted(names)))


def machine_info() -> dict:
    """Where a run ran: platform, processor, CPU counts, Python, jax/jaxlib versions, jax
    backend and device kinds (no host names, paths or device ids)."""
    info = host("platform", "processor", "cpu_count", "cpus_available", "python")
    try:
        info.update(host("jax", "jaxlib", "backend", "devices"))
    except ImportError:  # pragma: no cover
        pass
    return info


def code_commit() -> str:
    """The commit of this checkout (short hash), with ``+dirty`` when the package's tracked
    files differ from it; ``"unknown"`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=BENCH,
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "diff", "--quiet", "HEAD", "--", ":(top)cgmpinn_jax"], cwd=BENCH
            ).returncode
            != 0
        )
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
