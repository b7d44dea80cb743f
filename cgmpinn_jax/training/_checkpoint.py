"""Checkpoints of a training run at call boundaries, and resuming from them bit for bit.

A checkpoint is a folder ``<dir>/checkpoints/ckpt-<n>/`` with three files:

* ``arrays.eqx``: the run's pytree ``(state, batch, hyper, w)`` -- trainable parameters, every
  optimizer state, the weighting / GMM / ReLoBRaLo states and keys, the stage's guards --
  written with `equinox.tree_serialise_leaves` (PRNG keys as their key data);
* ``history.npz``: the histories so far, and inside a chunk (``call_seconds``) the chunk's
  (``piece_*``);
* ``meta.json``: where the run is (stage, chunk, steps done), the finished stages' statuses, the
  seconds spent, the run's identity (version, problem, method, config, key) and the data files'
  SHA-256.

A checkpoint is written into a temporary folder renamed when complete (meta.json last); the
previous one is deleted only after that. Loading takes the newest checkpoint whose files match
their checksums (a bad one is skipped with a warning naming the file); one of another run is
refused, naming the differing fields.

Resuming is exact: every call is a deterministic compiled program and a checkpoint holds
everything the next call reads, so a resumed run equals an uninterrupted one on the same machine
(``tests/test_checkpoint.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io as _io
import json
import os
import shutil
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..config import stored_config, without_time_limits
from ._records import ChunkHistory

__all__ = [
    "CheckpointError",
    "TrainingInterrupted",
    "Checkpointer",
    "Snapshot",
    "identity",
    "load",
    "latest",
    "read_meta",
    "SUBDIR",
]

FORMAT = "cgmpinn-jax-checkpoint/1"
SUBDIR = "checkpoints"
_KEEP = 2  # the newest checkpoint and the one before it


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, unreadable, or of another run (the message
    names the fields that differ). Raised by [`train`][cgmpinn_jax.train] with ``resume=``,
    [`resume`][cgmpinn_jax.resume] and [`sweep`][cgmpinn_jax.sweep] with ``resume=``."""


class TrainingInterrupted(KeyboardInterrupt):
    """Raised by [`train`][cgmpinn_jax.train] after Ctrl-C (SIGINT) when it checkpoints: the run
    stopped at a call boundary after writing a checkpoint into ``checkpoint_dir``.

    ``train(..., resume=checkpoint_dir)`` or [`resume`][cgmpinn_jax.resume] continues the run.

    Attributes:
        checkpoint_dir: the folder holding the checkpoint (a ``pathlib.Path``).
        result: a [`TrainResult`][cgmpinn_jax.TrainResult] of the interrupted stage's best
            parameters (status ``INTERRUPTED``); ``None`` for a [`sweep`][cgmpinn_jax.sweep].
    """

    def __init__(self, checkpoint_dir: Path, result: Any = None):
        super().__init__(f"training interrupted; checkpoint in {checkpoint_dir}")
        self.checkpoint_dir = Path(checkpoint_dir)
        self.result = result


@dataclasses.dataclass
class Snapshot:
    """Everything the host loop needs to continue a run (what a checkpoint holds)."""

    arrays: Any  # (state, batch, hyper, w)
    history: dict  # the recorder's and the error tracker's arrays
    stage: str  # the stage to continue: "adam" or "lbfgs"
    # index of the next chunk in that stage's plan (with ``piece``: of the chunk it is inside)
    chunk: int
    handed: bool  # the state is already in that stage's setting (its hand-off done)
    done: int  # steps of that stage done
    statuses: dict  # finished stages -> (B,) int status codes
    compile_seconds: float
    elapsed: float  # seconds since the run started, compilation included
    piece: Any = None
    stage_elapsed: float = 0.0  # inside a chunk: its ChunkHistory so far; seconds in the stage


def identity(
    problem, method, config, key: jax.Array | None, kind: str = "train", extra: dict | None = None
) -> dict:
    """What a checkpoint must agree with to be resumed: version, problem, method, config, key (a
    sweep: its axes)."""
    from .._version import __version__
    from ..io import _problem_record, to_jsonable

    out = {
        "kind": kind,
        "version": __version__,
        "problem": _problem_record(problem),
        "method": method.name,
        "config": config.to_dict(),
    }
    if key is not None:
        kd = np.asarray(
            jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        )
        out["key"] = kd.tolist()
    out.update(extra or {})
    return json.loads(json.dumps(to_jsonable(out)))


def _differences(saved: Any, now: Any, where: str = "") -> list[str]:
    if isinstance(saved, dict) and isinstance(now, dict):
        out = []
        for k in sorted(set(saved) | set(now), key=str):
            name = f"{where}.{k}" if where else str(k)
            if k not in saved or k not in now:
                out.append(
                    f"{name}: saved {saved.get(k, '(absent)')!r}, now {now.get(k, '(absent)')!r}"
                )
            else:
                out += _differences(saved[k], now[k], name)
        return out
    if saved != now:
        s, n = repr(saved), repr(now)

        def cut(t):
            return t if len(t) <= 80 else t[:77] + "..."

        return [f"{where}: saved {cut(s)}, now {cut(n)}"]
    return []


# ------------------------------------------------------------------------------ files


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _serialise(f, x) -> None:
    if _is_key(x):
        jnp.save(f, jax.random.key_data(x))
    else:
        eqx.default_serialise_filter_spec(f, x)


def _deserialiser(path: str):
    def load(f, like):
        if not isinstance(like, (jax.Array, jax.ShapeDtypeStruct, np.ndarray)):
            return eqx.default_deserialise_filter_spec(f, like)
        arr = np.load(f)
        if _is_key(like):
            if arr.shape != like.shape + (2,) or arr.dtype != np.uint32:
                raise CheckpointError(
                    f"{path}: a PRNG key of shape {arr.shape}, expected {like.shape}"
                )
            return jax.random.wrap_key_data(jnp.asarray(arr), impl=jax.random.key_impl(like))
        if arr.shape != tuple(like.shape) or arr.dtype != like.dtype:
            raise CheckpointError(
                f"{path}: an array {arr.dtype}{list(arr.shape)} where "
                f"{like.dtype}{list(like.shape)} was expected"
            )
        if isinstance(like, jax.Array):  # where the run keeps it (a sweep's shards)
            return jax.device_put(arr, like.sharding)
        return jnp.asarray(arr)

    return load


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _numbered(root: Path) -> list[tuple[int, Path]]:
    """``[(n, folder)]`` of the complete checkpoints under ``root``, newest first."""
    out = []
    if root.is_dir():
        for p in root.iterdir():
            if p.is_dir() and p.name.startswith("ckpt-") and p.name[5:].isdigit():
                out.append((int(p.name[5:]), p))
    return sorted(out, reverse=True)


class Checkpointer:
    """Writes checkpoints of one run into ``folder/checkpoints/`` at most every ``every`` seconds
    (``0``: at every call boundary), keeping the previous one until the new one is complete.
    ``seconds``: time spent writing."""

    def __init__(
        self, folder: str | Path, ident: dict, every: float = 60.0, seed: int | None = None
    ):
        if not isinstance(every, (int, float)) or isinstance(every, bool) or not every >= 0:
            raise ValueError(f"checkpoint_every must be a number of seconds >= 0, got {every!r}")
        self.folder = Path(folder)
        self.root = self.folder / SUBDIR
        self.ident, self.every, self.seed = ident, float(every), seed
        self.last = time.perf_counter()
        self.seconds, self.written = 0.0, 0
        existing = _numbered(self.root)
        self.n = existing[0][0] if existing else 0

    def due(self) -> bool:
        return time.perf_counter() - self.last >= self.every

    def write(self, snap: Snapshot) -> Path:
        t0 = time.perf_counter()
        self.root.mkdir(parents=True, exist_ok=True)
        self.n += 1
        final = self.root / f"ckpt-{self.n:06d}"
        tmp = self.root / f".ckpt-{self.n:06d}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        eqx.tree_serialise_leaves(tmp / "arrays.eqx", snap.arrays, filter_spec=_serialise)
        buf = _io.BytesIO()
        np.savez(
            buf,
            **snap.history,
            # numpy's stub types **kwds as if one could be allow_pickle (a bool)
            **{  # type: ignore[arg-type]
                f"piece_{k}": np.asarray(jax.device_get(v))
                for k, v in (snap.piece._asdict() if snap.piece is not None else {}).items()
            },
        )
        (tmp / "history.npz").write_bytes(buf.getvalue())
        for name in ("arrays.eqx", "history.npz"):
            with open(tmp / name, "rb+") as fh:
                os.fsync(fh.fileno())
        meta = {
            "format": FORMAT,
            "identity": self.ident,
            "seed": self.seed,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "position": {
                "stage": snap.stage,
                "chunk": snap.chunk,
                "handed": snap.handed,
                "done": snap.done,
                "piece": snap.piece is not None,
                "stage_elapsed": snap.stage_elapsed,
            },
            "statuses": {k: np.asarray(v).tolist() for k, v in snap.statuses.items()},
            "compile_seconds": snap.compile_seconds,
            "elapsed": snap.elapsed,
            "sha256": {name: _sha256(tmp / name) for name in ("arrays.eqx", "history.npz")},
        }
        _write_text_atomic(tmp / "meta.json", json.dumps(meta, indent=1))
        os.rename(tmp, final)
        _fsync_dir(self.root)
        for _, old in _numbered(self.root)[_KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
        self.last = time.perf_counter()
        self.seconds += self.last - t0
        self.written += 1
        return final


# ---------------------------------------------------------------------------- reading


def _root(folder: str | Path) -> Path:
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f"resume: no such folder {folder}")
    root = folder / SUBDIR
    if not _numbered(root):
        raise CheckpointError(
            f"resume: {folder} holds no checkpoint ({root}/ckpt-*/ missing); "
            "was the run started with checkpoint_dir= (or the command line's --out)?"
        )
    return root


def _read_meta(ckpt: Path) -> dict:
    path = ckpt / "meta.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: unreadable ({type(e).__name__}: {e})") from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a checkpoint of format {FORMAT}")
    for name, digest in meta.get("sha256", {}).items():
        f = ckpt / name
        if not f.exists():
            raise CheckpointError(f"{f}: missing")
        if _sha256(f) != digest:
            raise CheckpointError(
                f"{f}: its contents do not match the checksum in meta.json (truncated or corrupted)"
            )
    return meta


def read_meta(folder: str | Path) -> dict:
    """The newest readable checkpoint's ``meta.json`` (for ``resume`` to rebuild the run)."""
    for _, ckpt in _numbered(_root(folder)):
        try:
            return _read_meta(ckpt)
        except CheckpointError as e:
            warnings.warn(f"skipping a bad checkpoint: {e}", stacklevel=2)
    raise CheckpointError(f"resume: no readable checkpoint in {Path(folder) / SUBDIR}")


def latest(folder: str | Path) -> Path | None:
    """The newest complete checkpoint folder under ``folder``, or None."""
    found = _numbered(Path(folder) / SUBDIR)
    return found[0][1] if found else None


def load(
    folder: str | Path,
    ident: dict,
    template: Callable[[str, bool], Any],
    scope: Callable[[str, bool], Any] = lambda stage, handed: contextlib.nullcontext(),
) -> Snapshot:
    """The newest good checkpoint under ``folder`` as a `Snapshot`.

    ``template(stage, handed)`` gives a pytree of the arrays' structure, shapes and dtypes at
    that position, and ``scope(stage, handed)`` the precision scope it is read in. A
    checkpoint whose files fail their checksum (or do not deserialise) is
    skipped with a warning naming the file; one of another run raises
    [`CheckpointError`][cgmpinn_jax.CheckpointError] naming the differing fields."""
    root = _root(folder)
    for _, ckpt in _numbered(root):
        try:
            meta = _read_meta(ckpt)
        except CheckpointError as e:
            warnings.warn(f"skipping a bad checkpoint, using the one before it: {e}", stacklevel=3)
            continue
        saved = meta["identity"]
        if "config" in saved:
            saved = {**saved, "config": without_time_limits(stored_config(saved["config"]))}
        diff = _differences(
            saved,
            {**ident, "config": without_time_limits(ident["config"])}
            if "config" in ident
            else ident,
        )
        if diff:
            raise CheckpointError(
                f"resume: the checkpoint {ckpt} is of another run; differing: " + "; ".join(diff)
            )
        pos = meta["position"]
        try:
            with scope(pos["stage"], bool(pos["handed"])):
                like = template(pos["stage"], bool(pos["handed"]))
                arrays = eqx.tree_deserialise_leaves(
                    ckpt / "arrays.eqx", like, filter_spec=_deserialiser(str(ckpt / "arrays.eqx"))
                )
            with np.load(ckpt / "history.npz") as z:
                history = {k: z[k] for k in z.files if not k.startswith("piece_")}
                piece = (
                    ChunkHistory(**{f: z[f"piece_{f}"] for f in ChunkHistory._fields})
                    if pos.get("piece")
                    else None
                )
        except Exception as e:  # noqa: BLE001 - any failure to read is a bad checkpoint
            warnings.warn(
                f"skipping a bad checkpoint, using the one before it: {ckpt}: "
                f"{type(e).__name__}: {e}",
                stacklevel=3,
            )
            continue
        return Snapshot(
            arrays=arrays,
            history=history,
            stage=pos["stage"],
            chunk=int(pos["chunk"]),
            handed=bool(pos["handed"]),
            done=int(pos["done"]),
            statuses={k: np.asarray(v, np.int64) for k, v in meta["statuses"].items()},
            compile_seconds=float(meta["compile_seconds"]),
            elapsed=float(meta["elapsed"]),
            piece=piece,
            stage_elapsed=float(pos.get("stage_elapsed", 0.0)),
        )
    raise CheckpointError(f"resume: no readable checkpoint in {root}")


# --------------------------------------------------------------------------------------
# the recorder's arrays


def recorder_arrays(rec, tracker_rows: list | None) -> dict:
    """The host-side histories as named arrays (for ``history.npz``)."""
    out = {"rows_k": np.concatenate(rec.rows["k"], 0) if rec.rows["k"] else np.zeros(0, np.int64)}
    for name in ("loss", "terms", "raw", "lambdas", "evals"):
        if rec.rows[name]:
            out[f"rows_{name}"] = np.concatenate(rec.rows[name], 1)
    out["refresh_k"] = np.asarray(rec.refresh["k"], np.int64)
    for name in ("tau", "spread", "status"):
        if rec.refresh[name]:
            out[f"refresh_{name}"] = np.stack(rec.refresh[name], 0)
    if rec.weights:
        out["weights"] = np.stack(rec.weights, 0)
    if rec.coeffs:
        out["coeff_k"] = np.asarray([k for k, _ in rec.coeffs], np.int64)
        out["coeff_v"] = np.stack([v for _, v in rec.coeffs], 0)
    if tracker_rows is not None:
        out["tracker"] = np.asarray(tracker_rows, float).reshape(-1, 3)
    return out


def restore_recorder(rec, arrays: dict) -> list | None:
    """Fill ``rec`` from `recorder_arrays`' output; returns the error tracker's rows."""
    if arrays["rows_k"].size:
        rec.rows["k"] = [arrays["rows_k"]]
        for name in ("loss", "terms", "raw", "lambdas", "evals"):
            rec.rows[name] = [arrays[f"rows_{name}"]]
    rec.refresh["k"] = [int(k) for k in arrays["refresh_k"]]
    for name in ("tau", "spread", "status"):
        rec.refresh[name] = list(arrays[f"refresh_{name}"]) if f"refresh_{name}" in arrays else []
    rec.weights = list(arrays["weights"]) if "weights" in arrays else []
    rec.coeffs = (
        list(zip(arrays["coeff_k"].tolist(), list(arrays["coeff_v"])))
        if "coeff_k" in arrays
        else []
    )
    return [tuple(r) for r in arrays["tracker"].tolist()] if "tracker" in arrays else None


# --------------------------------------------------------------------------------------
# Ctrl-C


@contextlib.contextmanager
def sigint_flag(active: bool = True) -> Iterator[Callable[[], bool]]:
    """Within the block, the first Ctrl-C (SIGINT) only sets a flag (read by the returned
    callable) so the run can stop at the next call boundary after checkpointing; a second
    Ctrl-C interrupts at once. Outside the main thread, with ``active`` False, or in a process
    that ignores SIGINT (``SIG_IGN``: a job started with ``&`` from a script, which a shell
    keeps deaf to the terminal's Ctrl-C), nothing is installed and the flag stays False."""
    hit = {"n": 0}
    if (
        not active
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        yield lambda: False
        return

    def handler(signum, frame):
        hit["n"] += 1
        if hit["n"] > 1:
            raise KeyboardInterrupt
        print(
            "\n[cgmpinn-jax] Ctrl-C: stopping at the next call boundary after a checkpoint "
            "(Ctrl-C again to stop now)",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: hit["n"] > 0
    finally:
        signal.signal(signal.SIGINT, previous)
