"""Run cache for benchmark studies: the full file of every run in an ignored local cache, one
compact committed record per study.

Layout (from the repository root)::

    benchmarks/results/<study>.json           committed: the compact record of every finished run
    benchmarks/cache/<study>/<run_key>.json   git-ignored: each run's full JSON (loss curves,
                                              predictions, histories: whatever ``fn`` returned)

A run whose ``run_key`` is in the compact record counts as done, so a study resumes on any
checkout without its cache (nobody retrains what the record holds); a full file in the cache
whose run is missing from the record (e.g. copied back from another machine) is added to the
record by :meth:`Study.sync` or the next :meth:`Study.run` of that key.

Record file (``format`` = :data:`RECORD_FORMAT`)::

    {"format": "cgmpinn-jax/study-record/1", "study": "<study>", "runs": {
    "<run_key>": {...compact run...},
    ...
    }}

one run per line, sorted by run key (a new run is a one-line diff); other top-level keys a
person adds (a ``"note"``, say) are kept when the record is rewritten. Non-finite floats are
stored as the strings ``"nan"``, ``"inf"``, ``"-inf"``; arrays as (nested) lists.

A compact run is ``compact(full)`` when a ``compact`` function is given, else ``full`` without
the keys in :data:`BULKY_KEYS` (loss curves, histories, predictions), plus ``run_key``, and
``machine`` (:func:`machine_info`), ``finished_at`` (ISO time), ``call_seconds`` (wall
seconds of ``fn()``), ``commit`` (:func:`code_commit` when the run started) and ``threads``
(:func:`threads_label`) where the full run does not set them itself. Keep it to metrics, config,
timings and machine: the record is committed, the cache is not.

API (``study`` is a short name such as ``"precision"``; every function and :class:`Study`
take ``results_dir`` / ``cache_dir`` roots, or exact ``record`` / ``folder`` paths)::

    cached_run(study, run_key, fn, *, compact=None, accept=None) -> dict   # the compact run
    Study(study).run(run_key, fn, *, compact=None, accept=None) -> dict      # the same
    Study(study).is_done(run_key) -> bool       # in the record (or a full file in the cache)
    Study(study).load() -> {run_key: compact}   # the whole record (empty if none yet)
    Study(study).load_full(run_key) -> dict | None   # the full file, only where it was run
    Study(study).save(run_key, full, *, compact=None) -> dict   # store a run computed elsewhere
    Study(study).sync(accept=None) -> [run_key]  # add cached full runs missing from the record
    Study(study).write_report(render) -> str     # render(runs) into <record>.md beside the record
    machine_info() -> dict                       # platform, CPUs, jax version, backend, devices
    train_resumable(study, run_key, *args, **kw) -> (result, resumed)   # cj.train, checkpointed

The machine facts (``host``, ``machine_text``, ``machine_info``, ``code_commit``,
``ONE_THREAD_XLA_FLAGS``, ``threads_label``) live in :mod:`benchmarks.machine` and are importable
from here too; the error tracking the studies share (first reach of a threshold, a cached Adam
start) in :mod:`benchmarks.tracking`.

``fn`` takes no arguments and returns a JSON-able dict (numpy/jax arrays and scalars are
converted); ``accept(compact) -> bool`` rejects a recorded run (e.g. of an older package
version), which is then trained again and replaces it. Several processes may add runs to the
same study at once (the record is updated under a file lock, written atomically). An example
study: benchmarks/README.md.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

# the machine facts live in benchmarks.machine; re-exported here (``name as name``) for the studies
# that read them from the record module
from benchmarks.machine import (
    ONE_THREAD_XLA_FLAGS as ONE_THREAD_XLA_FLAGS,
    code_commit as code_commit,
    host as host,
    machine_info as machine_info,
    machine_text as machine_text,
    threads_label as threads_label,
)

BENCH = Path(__file__).resolve().parent
# committed compact records and the ignored full per-run files; CGMPINN_BENCH_OUT=DIR sends both
# (and the reports of the studies that write next to their record) to DIR/results and DIR/cache,
# so that a study can retrain recorded runs beside the committed record (benchmarks/drift.py)
_OUT = os.environ.get("CGMPINN_BENCH_OUT")
RESULTS = Path(_OUT) / "results" if _OUT else BENCH / "results"
CACHE = Path(_OUT) / "cache" if _OUT else BENCH / "cache"

RECORD_FORMAT = "cgmpinn-jax/study-record/1"
BULKY_KEYS = frozenset(
    {
        "loss_curve",
        "loss_curves",
        "history",
        "histories",
        "prediction",
        "predictions",
        "curve",
        "curves",
        "refreshes",
    }
)


# ------------------------------------------------------------------------------------------
# JSON


def to_json(x: Any) -> Any:
    """Plain JSON types: dict keys as strings, tuples and arrays as lists, numpy/jax scalars as
    Python numbers, non-finite floats as "nan" / "inf" / "-inf"."""
    if isinstance(x, dict):
        return {str(k): to_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_json(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if hasattr(x, "__array__"):  # numpy / jax arrays and scalars
        import numpy as np

        a = np.asarray(x)
        if a.dtype == bool:
            return a.tolist()
        return to_json(a.tolist())
    if hasattr(x, "item"):
        return to_json(x.item())
    return x


def _dumps_record(doc: dict) -> str:
    head = {k: v for k, v in doc.items() if k != "runs"}
    lines = [
        "{"
        + ", ".join(f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in head.items())
        + (", " if head else "")
        + '"runs": {'
    ]
    runs = doc.get("runs", {})
    items = [
        f"{json.dumps(k)}: {json.dumps(runs[k], separators=(',', ':'), allow_nan=False)}"
        for k in sorted(runs)
    ]
    lines.append(",\n".join(items))
    lines.append("}}")
    return "\n".join(line for line in lines if line) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="seconds")


def compact_run(full: dict, drop: Iterable[str] = BULKY_KEYS) -> dict:
    """``full`` without the keys in ``drop`` (top level only)."""
    drop = set(drop)
    return {k: v for k, v in full.items() if k not in drop}


# ------------------------------------------------------------------------------------------
# a study


class Study:
    """One study's compact record and full-run cache (see the module docstring).

    ``record`` / ``folder`` override the default paths ``results_dir/<name>.json`` and
    ``cache_dir/<name>/``."""

    def __init__(
        self,
        name: str,
        *,
        results_dir: Path | str = RESULTS,
        cache_dir: Path | str = CACHE,
        record: Path | str | None = None,
        folder: Path | str | None = None,
    ):
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"bad study name {name!r}")
        self.name = name
        self.record_path = (
            Path(record) if record is not None else Path(results_dir) / f"{name}.json"
        )
        self.folder = Path(folder) if folder is not None else Path(cache_dir) / name

    def __repr__(self) -> str:
        return (
            f"Study({self.name!r}, record={str(self.record_path)!r}, folder={str(self.folder)!r})"
        )

    # -- reading

    def _read_doc(self) -> dict:
        if not self.record_path.exists():
            return {"format": RECORD_FORMAT, "study": self.name, "runs": {}}
        doc = json.loads(self.record_path.read_text())
        if (
            not isinstance(doc, dict)
            or doc.get("format") != RECORD_FORMAT
            or not isinstance(doc.get("runs"), dict)
        ):
            raise ValueError(f"{self.record_path} is not a study record ({RECORD_FORMAT})")
        return doc

    def load(self) -> dict[str, dict]:
        """``{run_key: compact run}`` of the record (empty when there is none yet)."""
        return self._read_doc()["runs"]

    def full_path(self, run_key: str) -> Path:
        _check_key(run_key)
        return self.folder / f"{run_key}.json"

    def load_full(self, run_key: str) -> Optional[dict]:
        """The full run file from the local cache, or None (not run on this checkout)."""
        p = self.full_path(run_key)
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        return d if isinstance(d, dict) else None

    def is_done(self, run_key: str) -> bool:
        """In the record, or a full file in the cache."""
        return run_key in self.load() or self.full_path(run_key).exists()

    # -- writing

    @contextlib.contextmanager
    def _locked(self):
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        lock = self.folder.parent / f".{self.name}.lock"
        with open(lock, "a") as fh:
            try:
                import fcntl

                fcntl.flock(fh, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - not POSIX: no lock
                pass
            yield

    def _compact(self, run_key: str, full: dict, compact: Optional[Callable[[dict], dict]]) -> dict:
        c = dict(compact(full) if compact is not None else compact_run(full))
        c["run_key"] = run_key
        for k in ("machine", "finished_at", "call_seconds", "commit", "threads"):
            if k in full and k not in c:
                c[k] = full[k]
        return to_json(c)

    def _update(self, entries: dict[str, dict]) -> None:
        with self._locked():
            doc = self._read_doc()
            doc.setdefault("study", self.name)
            doc["runs"].update(entries)
            _write_atomic(self.record_path, _dumps_record(doc))

    def save(
        self, run_key: str, full: dict, *, compact: Optional[Callable[[dict], dict]] = None
    ) -> dict:
        """Write ``full`` to the cache and its compact form to the record; return the compact run.
        ``machine``, ``finished_at``, ``commit`` (:func:`code_commit`) and ``threads``
        (:func:`threads_label`) are added to ``full`` when it lacks them."""
        if not isinstance(full, dict):
            raise TypeError(f"a run must be a dict, got {type(full).__name__}")
        full = dict(full)
        full.setdefault("machine", machine_info())
        full.setdefault("finished_at", _now())
        full.setdefault("commit", code_commit())
        full.setdefault("threads", threads_label())
        full = to_json(full)
        _write_atomic(
            self.full_path(run_key), json.dumps(full, separators=(",", ":"), allow_nan=False)
        )
        c = self._compact(run_key, full, compact)
        self._update({run_key: c})
        return c

    def run(
        self,
        run_key: str,
        fn: Callable[[], dict],
        *,
        compact: Optional[Callable[[dict], dict]] = None,
        accept: Optional[Callable[[dict], bool]] = None,
    ) -> dict:
        """The compact run ``run_key``: from the record if it is there (and ``accept``-ed), else
        from a full file in the cache (added to the record), else ``fn()`` is called, stored
        (:meth:`save`) and returned in compact form."""
        rec = self.load().get(run_key)
        if rec is not None and (accept is None or accept(rec)):
            return rec
        full = self.load_full(run_key)
        if full is not None:
            c = self._compact(run_key, full, compact)
            if accept is None or accept(c):
                self._update({run_key: c})
                return c
        started_at = code_commit()  # the code that makes the run, before it can change
        t0 = time.perf_counter()
        full = fn()
        seconds = time.perf_counter() - t0
        if not isinstance(full, dict):
            raise TypeError(f"fn must return a dict, got {type(full).__name__}")
        full = dict(full)
        full.setdefault("call_seconds", seconds)
        full.setdefault("commit", started_at)
        return self.save(run_key, full, compact=compact)

    def write_report(self, render: Callable[[dict], str], *, echo: bool = False) -> Optional[str]:
        """``render(record runs)`` written to ``<record>.md`` beside the record (atomically) and
        returned, printed too with ``echo``; None, and nothing written, while the record is
        empty."""
        runs = self.load()
        if not runs:
            return None
        text = render(runs)
        _write_atomic(self.record_path.with_suffix(".md"), text)
        if echo:
            print(text)
        return text

    def sync(
        self,
        accept: Optional[Callable[[dict], bool]] = None,
        compact: Optional[Callable[[dict], dict]] = None,
    ) -> list[str]:
        """Add every full file of the cache whose key is not in the record (and that ``accept``
        takes, given the full run) to the record; returns the keys added."""
        if not self.folder.is_dir():
            return []
        have = self.load()
        new = {}
        for p in sorted(self.folder.glob("*.json")):
            key = p.stem
            if key in have:
                continue
            full = self.load_full(key)
            if full is None or (accept is not None and not accept(full)):
                continue
            new[key] = self._compact(key, full, compact)
        if new:
            self._update(new)
        return sorted(new)


def train_resumable(study: str, run_key: str, *args, **kw):
    """``cj.train(*args, **kw)`` checkpointing into the cache every 2 minutes: a killed run resumes
    from its latest checkpoint (``init`` dropped), a finished one removes them (the record holds the
    run)."""
    import cgmpinn_jax as cj
    from cgmpinn_jax.training._checkpoint import latest

    ckpt = CACHE / f"{study}_checkpoints" / run_key
    resumed = latest(ckpt) is not None
    if resumed:
        kw.pop("init", None)
    res = cj.train(
        *args, checkpoint_dir=ckpt, checkpoint_every=120.0, resume=ckpt if resumed else None, **kw
    )
    shutil.rmtree(ckpt, ignore_errors=True)
    return res, resumed


def _check_key(run_key: str) -> None:
    if not run_key or "/" in run_key or "\\" in run_key or run_key.startswith("."):
        raise ValueError(f"bad run key {run_key!r}")


def cached_run(
    study: str,
    run_key: str,
    fn: Callable[[], dict],
    *,
    compact: Optional[Callable[[dict], dict]] = None,
    accept: Optional[Callable[[dict], bool]] = None,
    results_dir: Path | str = RESULTS,
    cache_dir: Path | str = CACHE,
) -> dict:
    """Run ``fn()`` once per ``(study, run_key)``; see :meth:`Study.run` and the module
    docstring."""
    return Study(study, results_dir=results_dir, cache_dir=cache_dir).run(
        run_key, fn, compact=compact, accept=accept
    )
