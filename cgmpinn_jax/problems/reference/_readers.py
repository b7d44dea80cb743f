"""The readers of reference solutions (COMSOL text exports, CSV, whitespace tables, ``.npy`` and
``.npz``, each optionally gzipped), the `Reference` they return and the PINNacle files shipped
with the package. Public through `cgmpinn_jax.problems.reference`."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import re
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence, cast

import numpy as np

__all__ = [
    "Reference",
    "read_comsol",
    "read_table",
    "load_reference",
    "file_sha256",
    "pinnacle_reference",
    "PINNACLE_FILES",
]

PINNACLE_FILES = ("burgers1d.dat.gz", "poisson1_cg_data.dat.gz", "lid_driven_a4.dat.gz")
"""The file names of the PINNacle reference solutions shipped in ``cgmpinn_jax/data/pinnacle``,
the names [`pinnacle_reference`][cgmpinn_jax.problems.pinnacle_reference] reads: 1-D Burgers
(``x, t -> u``), the Poisson problem on a square with holes (``x, y -> u``) and the lid-driven
cavity at ``a = 4`` (``x, y -> u, v, p``)."""
_SUFFIXES = ".dat, .txt, .csv, .npy or .npz, each optionally followed by .gz"
# one COMSOL column label: name, an optional "(unit)", an optional "@ p=v[, q=w]" parameter label
_LABEL = re.compile(r"[^\s@()]+(?:\s+\([^()]*\))?(?:\s*@\s*[^\s,@]+(?:,\s*[^\s,@]+)*)?")
_NUMBER = re.compile(
    r"[-+]?(?:nan|inf(?:inity)?|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.IGNORECASE
)
_TIME = re.compile(r"(?:^|[\s,])t\s*=\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def _names(coords, fields) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """coords and fields as tuples of names; a ValueError for a bare string, an empty list or a
    duplicate."""
    out = []
    for what, names in (("coords", coords), ("fields", fields)):
        ok = (
            isinstance(names, (tuple, list))
            and names
            and all(isinstance(n, str) and n for n in names)
        )
        if not ok:
            raise ValueError(
                f"{what} must be a non-empty tuple of names, e.g. ('x', 't'), got {names!r}"
            )
        out.append(tuple(names))
    if len(set(out[0] + out[1])) < len(out[0] + out[1]):
        dup = sorted({n for n in out[0] + out[1] if (out[0] + out[1]).count(n) > 1})
        raise ValueError(f"duplicate field names {dup} in coords={out[0]} and fields={out[1]}")
    return out[0], out[1]


def _columns(a: np.ndarray, n: int) -> np.ndarray:  # (M,) as one column where one is expected
    return a[:, None] if a.ndim == 1 and n == 1 else a


@dataclasses.dataclass(frozen=True, eq=False)
class Reference:
    """A reference solution as data: ``values[i]`` are the fields at ``points[i]``.

    Made by the readers ([`load_reference`][cgmpinn_jax.problems.load_reference],
    [`read_table`][cgmpinn_jax.problems.read_table],
    [`read_comsol`][cgmpinn_jax.problems.read_comsol],
    [`pinnacle_reference`][cgmpinn_jax.problems.pinnacle_reference]) or by
    [`from_arrays`][cgmpinn_jax.problems.Reference.from_arrays]. Construction copies both arrays
    to float64, makes them read-only and checks their shapes and that every value is finite (a
    ValueError otherwise). Compare references by ``sha256``, not with ``==``.

    Attributes:
        points: the coordinates, a read-only float64 array of shape ``(M, d)``, its columns in
            the order of ``coords``.
        values: the fields at the points, a read-only float64 array of shape ``(M, F)``, its
            columns in the order of ``fields``.
        coords: the names of the ``d`` coordinates, e.g. ``("x", "t")``.
        fields: the names of the ``F`` fields, e.g. ``("u",)``.
        source: the file's name (never a path of the machine that read it) or a description
            such as ``"arrays"``; error messages name it.
        sha256: the hex sha256 of the file's bytes as stored (compressed, for a ``.gz``), or of
            the arrays' shapes and bytes for ``from_arrays``: what a saved model records to
            detect changed data.

    Examples:
        >>> ref = Reference.from_arrays(
        ...     [[0.0], [0.5], [1.0]], [0.0, 0.25, 1.0], coords=("x",), fields=("u",)
        ... )
        >>> ref.points.shape, ref.values.shape, ref.field("u").tolist()
        ((3, 1), (3, 1), [0.0, 0.25, 1.0])
    """

    points: np.ndarray
    values: np.ndarray
    coords: tuple[str, ...]
    fields: tuple[str, ...]
    source: str
    sha256: str

    def __post_init__(self):
        coords, fields = _names(self.coords, self.fields)
        pts, vals = (np.array(a, dtype=np.float64, order="C") for a in (self.points, self.values))
        if (
            pts.ndim != 2
            or vals.ndim != 2
            or pts.shape[0] != vals.shape[0]
            or pts.shape[0] == 0
            or (pts.shape[1], vals.shape[1]) != (len(coords), len(fields))
        ):
            raise ValueError(
                f"{self.source}: points {pts.shape} and values {vals.shape} must be (M, d) and "
                f"(M, F) with M > 0 for coords={coords} and fields={fields}"
            )
        _check_finite(np.concatenate([pts, vals], axis=1), self.source, coords + fields)
        for a in (pts, vals):
            a.setflags(write=False)
        for k, v in (("points", pts), ("values", vals), ("coords", coords), ("fields", fields)):
            object.__setattr__(self, k, v)

    def __repr__(self) -> str:
        return (
            f"Reference(source={self.source!r}, M={self.points.shape[0]}, coords={self.coords}, "
            f"fields={self.fields}, sha256={self.sha256[:12]!r}...)"
        )

    def field(self, name: str) -> np.ndarray:
        """The values of one field.

        Args:
            name: one of ``fields``.

        Returns:
            A read-only float64 array of shape ``(M,)`` (a column of ``values``).

        Raises:
            ValueError: ``name`` is not a field; the message lists the fields there are.

        Examples:
            >>> ref = Reference.from_arrays(
            ...     [0.0, 1.0], [[1.0, 2.0], [3.0, 4.0]], coords=("x",), fields=("u", "v")
            ... )
            >>> ref.field("v").tolist()
            [2.0, 4.0]
        """
        if name not in self.fields:
            raise ValueError(f"{self.source}: no field {name!r}; the fields are {self.fields}")
        return self.values[:, self.fields.index(name)]

    def check_domain(
        self,
        contains: Callable[[np.ndarray], np.ndarray] | None = None,
        lower=None,
        upper=None,
        *,
        tol: float = 1e-9,
    ) -> None:
        """Raise a ValueError when a point lies outside the domain.

        Give at least one of ``contains``, ``lower`` and ``upper``; a point must satisfy all
        that are given. The message names the source, how many points are outside and the
        first of them.

        Args:
            contains: a function of the ``(M, d)`` float64 points returning ``(M,)`` booleans,
                True inside (with any tolerance of its own), e.g. a
                [`Geometry`][cgmpinn_jax.problems.Geometry]'s ``contains``; None to check
                the box only.
            lower: the box's lower bound: a number for every coordinate, or ``d`` numbers;
                None for no lower bound.
            upper: the box's upper bound, as ``lower``; None for no upper bound.
            tol: the slack allowed outside ``lower`` and ``upper``.

        Raises:
            ValueError: a point is outside, or none of the three checks is given.

        Examples:
            >>> ref = Reference.from_arrays(
            ...     [0.0, 0.5, 1.0], [0.0, 0.25, 1.0], coords=("x",), fields=("u",)
            ... )
            >>> ref.check_domain(lower=0.0, upper=1.0)
            >>> ref.check_domain(lower=0.0, upper=0.9)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
            Traceback (most recent call last):
            ...
            ValueError: arrays: 1 of 3 points are outside the domain (...); the first is
            row 2: (x=1.0)
        """
        if contains is None and lower is None and upper is None:
            raise ValueError("check_domain needs contains, lower or upper")
        m, d = self.points.shape
        inside = np.ones(m, dtype=bool)
        for bound, sign in [(v, sg) for v, sg in ((lower, 1.0), (upper, -1.0)) if v is not None]:
            b = np.asarray(bound, dtype=np.float64)
            b = np.full(d, b) if b.ndim == 0 else b
            if b.shape != (d,):
                raise ValueError(
                    f"check_domain: a bound needs {d} numbers for coords {self.coords}, "
                    f"got {bound!r}"
                )
            inside &= np.all(sign * (self.points - b) >= -tol, axis=1)
        if contains is not None:
            got = np.asarray(contains(self.points))
            if got.shape != (m,):
                raise ValueError(
                    f"check_domain: contains(points) must return ({m},) booleans, "
                    f"got shape {got.shape}"
                )
            inside &= got.astype(bool)
        if not inside.all():
            i = int(np.argmin(inside))
            what = [f"{k}={v!r}" for k, v in (("lower", lower), ("upper", upper)) if v is not None]
            what += (
                [f"contains={getattr(contains, '__name__', contains)}"]
                if contains is not None
                else []
            )
            first = ", ".join(f"{c}={float(v)!r}" for c, v in zip(self.coords, self.points[i]))
            raise ValueError(
                f"{self.source}: {m - int(inside.sum())} of {m} points are outside the domain "
                f"({', '.join(what)}, tol={tol:g}); the first is row {i}: ({first})"
            )

    @classmethod
    def from_arrays(cls, points, values, *, coords, fields, source: str = "arrays") -> "Reference":
        """A Reference from arrays in memory (say, a solution computed by another solver).

        Args:
            points: the coordinates, array-like of shape ``(M, d)``, or ``(M,)`` for one
                coordinate.
            values: the fields, array-like of shape ``(M, F)``, or ``(M,)`` for one field.
            coords: the names of the ``d`` coordinates, a tuple of strings.
            fields: the names of the ``F`` fields, a tuple of strings.
            source: a description for messages and the record of a saved model.

        Returns:
            A [`Reference`][cgmpinn_jax.problems.Reference] whose ``sha256`` hashes the arrays'
                shapes and float64 bytes.

        Raises:
            ValueError: the shapes do not match the names, a value is NaN or infinite, or a
                name is repeated.

        Examples:
            >>> import numpy as np
            >>> x = np.linspace(0.0, 1.0, 5)
            >>> ref = Reference.from_arrays(
            ...     x, np.sin(x), coords=("x",), fields=("u",), source="sin"
            ... )
            >>> ref.points.shape, ref.values.shape, ref.source, len(ref.sha256)
            ((5, 1), (5, 1), 'sin', 64)
        """
        coords, fields = _names(coords, fields)
        pts = _columns(np.array(points, dtype=np.float64, order="C"), len(coords))
        vals = _columns(np.array(values, dtype=np.float64, order="C"), len(fields))
        digest = hashlib.sha256(
            repr((pts.shape, vals.shape)).encode() + pts.tobytes() + vals.tobytes()
        ).hexdigest()
        return cls(pts, vals, coords, fields, source, digest)


def _check_finite(table: np.ndarray, name: str, labels=None, linenos=None) -> None:
    bad = ~np.isfinite(table)
    if bad.any():
        r, c = (int(k) for k in np.argwhere(bad)[0])
        where = f"line {linenos[r]}" if linenos is not None else f"row {r}"
        col = f" ({labels[c]!r})" if labels is not None and c < len(labels) else ""
        raise ValueError(
            f"{name}: {int(bad.sum())} NaN or Inf values; the first at {where}, "
            f"column {c + 1}{col}: {table[r, c]}"
        )


def _existing(path) -> Path:
    p = Path(path)
    if not p.is_file():
        what = "is a directory, not a file" if p.is_dir() else "does not exist"
        raise FileNotFoundError(
            f"reference file {str(p)!r} {what} (resolved: {p.resolve()}); check the path, "
            f"the working directory and the suffix ({_SUFFIXES})"
        )
    return p


def file_sha256(path) -> str:
    """The sha256 of a file's bytes as stored (a ``.gz`` file's compressed bytes).

    The same digest a reader records in [`Reference.sha256`][cgmpinn_jax.problems.Reference]
    for the file, so it tells whether a file is the one a reference (or a saved model) was
    read from.

    Args:
        path: the file, a string or ``pathlib.Path``.

    Returns:
        The digest as 64 lowercase hex characters.

    Raises:
        FileNotFoundError: ``path`` does not exist or is a directory.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "u.csv"
        ...     _ = path.write_text("x,u\\n0.0,1.0\\n")
        ...     file_sha256(path) == read_table(path, coords=("x",), fields=("u",)).sha256
        True
    """
    return hashlib.sha256(_existing(path).read_bytes()).hexdigest()


def _text_rows(text: str):
    """(header lines starting with '%', data lines, their 1-based line numbers); '#' lines are
    comments."""
    header: list[str] = []
    rows: list[str] = []
    linenos: list[int] = []
    for k, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if s.startswith("%") and not rows:
            header.append(s)
        elif s and s[0] not in "#%":
            rows.append(s)
            linenos.append(k)
    return header, rows, linenos


def _parse_rows(rows, linenos, name: str, delimiter=None) -> np.ndarray:
    if not rows:
        raise ValueError(f"{name}: no data rows (an empty file?)")
    counts = [len(r.split(delimiter)) for r in rows]
    if min(counts) != max(counts):
        k = next(i for i, c in enumerate(counts) if c != counts[0])
        raise ValueError(
            f"{name}: line {linenos[k]} has {counts[k]} columns but line {linenos[0]} "
            f"has {counts[0]}"
        )
    try:
        return np.loadtxt(rows, delimiter=delimiter, dtype=np.float64, ndmin=2)
    except ValueError as e:
        raise ValueError(
            f"{name}: cannot read the data rows (from line {linenos[0]}) as numbers: {e}"
        ) from None


def _match_fields(file_fields, fields, name: str) -> list[int]:
    """For each wanted field, its index among the file's fields (which must be the same names)."""
    dup = sorted({f for f in file_fields if list(file_fields).count(f) > 1})
    if dup:
        raise ValueError(
            f"{name}: duplicate field names {dup} in the file (fields {tuple(file_fields)})"
        )
    if set(file_fields) != set(fields):
        unknown = [f for f in fields if f not in file_fields]
        extra = [f for f in file_fields if f not in fields]
        raise ValueError(
            f"{name}: fields={tuple(fields)} do not match the file's fields {tuple(file_fields)}"
            + (f"; not in the file: {unknown}" if unknown else "")
            + (f"; in the file but not asked for: {extra}" if extra else "")
        )
    return [list(file_fields).index(f) for f in fields]


def _column_count(ncol: int, coords, fields, name: str) -> None:
    if ncol != len(coords) + len(fields):
        raise ValueError(
            f"{name}: the rows have {ncol} columns but coords={coords} and fields={fields} "
            f"need {len(coords) + len(fields)} ({len(coords)} + {len(fields)})"
        )


def _comsol_labels(line: str, ncol: int, name: str) -> list[str]:
    """The column labels of COMSOL's last header line (split on 2+ spaces, else by the label
    grammar)."""
    body = line.lstrip("%").strip()
    labels = [s for s in re.split(r"\s{2,}|\t", body) if s]
    if len(labels) != ncol:
        labels = _LABEL.findall(body)
    if len(labels) != ncol:
        raise ValueError(
            f"{name}: the header line {line!r} names {len(labels)} columns but the rows have {ncol}"
        )
    return labels


def _split_label(label: str):
    """'u (1) @ t=0.1' -> ('u', '0.1'); 'u @ Re=100' -> ('u', None); 'X' -> ('X', None)."""
    head, at, param = label.partition("@")
    field = re.sub(r"\s*\([^()]*\)\s*$", "", head.strip()).strip()
    m = _TIME.search(param) if at else None
    return field, (m.group(1) if m else None)


def _comsol_series(table, labels, coords, fields, time_coord, name):
    """Wide time-series columns -> points (x..., t) with t at coords.index(time_coord),
    values (M0*T, F)."""
    tc = coords[-1] if time_coord is None else time_coord
    if tc not in coords:
        raise ValueError(f"{name}: time_coord={tc!r} is not one of coords={coords}")
    ns = len(coords) - 1
    parsed = [_split_label(lab) for lab in labels]
    n_space = next((i for i, (_, t) in enumerate(parsed) if t is not None), len(parsed))
    if n_space != ns or any(t is None for _, t in parsed[ns:]):
        raise ValueError(
            f"{name}: a time series of {n_space} spatial column(s) {tuple(labels[:n_space])} "
            f"then columns '<field> @ t=<time>', so coords needs {n_space + 1} names, the spatial "
            f"ones and the time (time_coord, by default the last name), got coords={coords}"
        )
    file_fields = list(dict.fromkeys(f for f, _ in parsed[ns:]))
    order = _match_fields(file_fields, fields, name)
    times = list(dict.fromkeys(t for _, t in parsed[ns:]))
    col = {(f, t): j for j, (f, t) in enumerate(parsed[ns:], start=ns)}
    if len(col) != len(labels) - ns or len(col) != len(file_fields) * len(times):
        missing = [f"{f} @ t={t}" for t in times for f in file_fields if (f, t) not in col]
        raise ValueError(
            f"{name}: the time series needs one column per field and time: "
            f"{len(labels) - ns - len(col)} duplicated, no column for {missing[:5]}"
        )
    pts = [np.insert(table[:, :ns], coords.index(tc), float(t), axis=1) for t in times]
    vals = [table[:, [col[file_fields[o], t] for o in order]] for t in times]
    return np.concatenate(pts), np.concatenate(vals)


def _read_comsol_text(text: str, name: str, coords, fields, time_coord):
    header, rows, linenos = _text_rows(text)
    if not header:
        raise ValueError(f"{name}: not a COMSOL export (no header lines starting with '%')")
    table = _parse_rows(rows, linenos, name)
    labels = _comsol_labels(header[-1], table.shape[1], name)
    _check_finite(table, name, labels, linenos)
    if any(_split_label(lab)[1] is not None for lab in labels):
        return _comsol_series(table, labels, coords, fields, time_coord, name)
    if time_coord is not None:
        raise ValueError(
            f"{name}: time_coord={time_coord!r} given but the header has no '@ t=' time columns"
        )
    _column_count(table.shape[1], coords, fields, name)
    d = len(coords)
    order = _match_fields([_split_label(lab)[0] for lab in labels[d:]], fields, name)
    return table[:, :d], table[:, [d + o for o in order]]


def _split_table(table, names, coords, fields, name, linenos=None):
    """A (M, d+F) table -> points, values; optional header names select the columns by name."""
    _column_count(table.shape[1], coords, fields, name)
    _check_finite(table, name, names, linenos)
    d = len(coords)
    if names is None:
        return table[:, :d], table[:, d:]
    if set(names) == set(coords + fields) and len(set(names)) == len(names):
        return table[:, [names.index(c) for c in coords]], table[
            :, [names.index(f) for f in fields]
        ]
    order = _match_fields(names[d:], fields, name)
    return table[:, :d], table[:, [d + o for o in order]]


def _read_text_table(text: str, name: str, coords, fields, delimiter):
    header, rows, linenos = _text_rows(text)
    if header:
        raise ValueError(
            f"{name}: starts with '%' lines, a COMSOL export: read it with read_comsol or "
            f"load_reference"
        )
    cells = [c.strip().strip("\"'") for c in rows[0].split(delimiter)] if rows else []
    # a header line
    names = cells if cells and not any(_NUMBER.fullmatch(c) for c in cells) else None
    if names:
        rows, linenos = rows[1:], linenos[1:]
    table = _parse_rows(rows, linenos, name, delimiter)
    return _split_table(table, names, coords, fields, name, linenos)


def _numeric(a, name: str, key: str) -> np.ndarray:
    if a.dtype.kind not in "biuf" or a.size == 0:
        raise ValueError(
            f"{name}: {key} is empty (shape {a.shape}); no data rows"
            if a.size == 0
            else f"{name}: {key} has dtype {a.dtype}, not numbers"
        )
    return a.astype(np.float64)


def _read_arrays(content: bytes, name: str, suffix: str, coords, fields):
    try:
        loaded = np.load(io.BytesIO(content), allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - re-raised naming the file
        raise ValueError(f"{name}: cannot read as {suffix} ({type(e).__name__}: {e})") from None
    if suffix == ".npy":
        tables = {"the array": loaded}
    else:
        with loaded:
            tables = {k: loaded[k] for k in loaded.files}
        if {"points", "values"} <= set(
            tables
        ):  # shapes and values checked by Reference, naming the file
            pts, vals = (_numeric(tables[k], name, repr(k)) for k in ("points", "values"))
            return _columns(pts, len(coords)), _columns(vals, len(fields))
        if len(tables) != 1:
            raise ValueError(
                f"{name}: an .npz needs keys 'points' and 'values' or one 2-D array, "
                f"has {sorted(tables)}"
            )
    ((key, table),) = tables.items()
    table = _numeric(table, name, repr(key) if suffix == ".npz" else key)
    if table.ndim != 2:
        raise ValueError(
            f"{name}: {key} has shape {table.shape}; need (M, {len(coords) + len(fields)}) columns "
            f"for coords={coords} and fields={fields}"
        )
    return _split_table(table, None, coords, fields, name)


def _load_bytes(
    raw: bytes, file_name: str, source: str, coords, fields, kind: str, time_coord=None
) -> Reference:
    """Read a file's bytes: kind 'comsol', 'table' or 'auto' (COMSOL when the text starts with '%');
    the suffixes of ``file_name`` say the format, messages name ``source``."""
    coords, fields = _names(coords, fields)
    name, gz = source, file_name.lower().endswith(".gz")
    suffix = Path(file_name[:-3] if gz else file_name).suffix.lower()
    if suffix not in (".dat", ".txt", ".csv", ".npy", ".npz") or (
        kind == "comsol" and suffix[:3] == ".np"
    ):
        expected = ".dat, .txt or .csv for a COMSOL export" if kind == "comsol" else _SUFFIXES
        raise ValueError(f"{name}: unknown suffix {suffix!r}; expected {expected}")
    try:
        content = gzip.decompress(raw) if gz else raw
    except (OSError, EOFError) as e:
        raise ValueError(f"{name}: not a valid gzip file ({e})") from None
    text = None if suffix[:3] == ".np" else content.decode("utf-8", errors="replace")
    comsol = text is not None and (
        kind == "comsol" or (kind == "auto" and text.lstrip().startswith("%"))
    )
    if time_coord is not None and not comsol:
        raise ValueError(f"{name}: time_coord applies to COMSOL time series only")
    if comsol:
        pts, vals = _read_comsol_text(cast(str, text), name, coords, fields, time_coord)
    elif text is None:
        pts, vals = _read_arrays(content, name, suffix, coords, fields)
    else:
        pts, vals = _read_text_table(text, name, coords, fields, "," if suffix == ".csv" else None)
    return Reference(pts, vals, coords, fields, source, hashlib.sha256(raw).hexdigest())


def _read_path(path, coords, fields, kind: str, time_coord=None) -> Reference:
    _names(coords, fields)
    p = _existing(path)
    return _load_bytes(p.read_bytes(), p.name, p.name, coords, fields, kind, time_coord)


def _time_coord(fn: str, kw: dict):
    if set(kw) - {"time_coord"}:
        raise TypeError(
            f"{fn}: unknown keyword arguments {sorted(set(kw) - {'time_coord'})}; "
            "the only one is time_coord"
        )
    return kw.get("time_coord")


def read_comsol(
    path, *, coords: Sequence[str], fields: Sequence[str], time_coord: str | None = None
) -> Reference:
    """Read a COMSOL text export: ``%`` header lines, the last naming the columns.

    Two layouts are understood:

    * plain columns, ``% x  y  u @ Re=100  v @ Re=100``: the ``d`` coordinates, then the ``F``
      fields (``@ ...`` is a parameter label, ignored);
    * a time series of wide columns, ``% X  u (1) @ t=0  u (1) @ t=0.1 ...``: the spatial
      coordinates, then one column per field and time. It is expanded to one point
      ``(x..., t)`` per row and time, blocked by time (all rows at the first time, then the
      next), with ``t`` at the position of ``time_coord`` in ``coords``.

    The fields are matched by their labels' names (units such as ``(1)`` dropped) and come in
    the order of ``fields``; every field of the file must be asked for. ``#`` lines are
    comments.

    Args:
        path: a ``.dat``, ``.txt`` or ``.csv`` file, optionally gzipped (``.gz``).
        coords: the names of the coordinates, a tuple of strings (for a time series, the
            spatial ones and the time).
        fields: the names of the fields, a tuple of strings, as the header labels them.
        time_coord: for a time series, which of ``coords`` is the time; None for the last.

    Returns:
        A [`Reference`][cgmpinn_jax.problems.Reference], ``source`` the file's name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file is not a COMSOL export, its columns do not match ``coords`` and
            ``fields``, or a value is NaN or infinite; the message names the file and line.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "series.txt"
        ...     _ = path.write_text("% X  u (1) @ t=0  u (1) @ t=0.5\\n-1 0.0 0.1\\n1 1.0 0.9\\n")
        ...     ref = read_comsol(path, coords=("x", "t"), fields=("u",))
        >>> ref.points.tolist(), ref.values[:, 0].tolist()
        ([[-1.0, 0.0], [1.0, 0.0], [-1.0, 0.5], [1.0, 0.5]], [0.0, 1.0, 0.1, 0.9])
    """
    return _read_path(path, coords, fields, "comsol", time_coord)


def read_table(path, *, coords: Sequence[str], fields: Sequence[str]) -> Reference:
    """Read a table of ``d`` coordinate columns then ``F`` field columns.

    The suffix says the format, each optionally gzipped (``.gz``):

    * ``.csv`` (comma separated) or whitespace-separated ``.dat`` / ``.txt``, with an optional
      header line of names: the fields are then matched by name, and when the header names
      every coordinate and field, every column is (in any order); ``#`` lines are comments;
    * ``.npy``: one ``(M, d + F)`` array;
    * ``.npz``: the keys ``points`` ``(M, d)`` and ``values`` ``(M, F)`` (or ``(M,)``), or a
      single ``(M, d + F)`` array.

    Args:
        path: the file, a string or ``pathlib.Path``.
        coords: the names of the ``d`` coordinates, a tuple of strings.
        fields: the names of the ``F`` fields, a tuple of strings.

    Returns:
        A [`Reference`][cgmpinn_jax.problems.Reference], ``source`` the file's name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: an unknown suffix, a column count or header that does not match ``coords``
            and ``fields``, a ragged or non-numeric row, or a NaN or infinite value; the
            message names the file and line.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "u.csv"
        ...     _ = path.write_text("x,t,u\\n0.0,0.0,1.0\\n0.5,0.0,0.5\\n")
        ...     ref = read_table(path, coords=("x", "t"), fields=("u",))
        >>> ref.source, ref.points.tolist(), ref.values.tolist()
        ('u.csv', [[0.0, 0.0], [0.5, 0.0]], [[1.0], [0.5]])
    """
    return _read_path(path, coords, fields, "table")


def load_reference(path, *, coords: Sequence[str], fields: Sequence[str], **kw) -> Reference:
    """Read a reference file, whatever its format.

    A text file that starts with ``%`` lines is read as a COMSOL export (as
    [`read_comsol`][cgmpinn_jax.problems.read_comsol] does), anything else as a table (as
    [`read_table`][cgmpinn_jax.problems.read_table] does); ``.gz`` files are decompressed
    transparently.

    Args:
        path: a ``.dat``, ``.txt``, ``.csv``, ``.npy`` or ``.npz`` file, optionally gzipped.
        coords: the names of the ``d`` coordinates, a tuple of strings.
        fields: the names of the ``F`` fields, a tuple of strings.
        **kw: only ``time_coord=``, for a COMSOL time series (see ``read_comsol``).

    Returns:
        A [`Reference`][cgmpinn_jax.problems.Reference], ``source`` the file's name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file cannot be read as ``coords`` and ``fields`` (the message says
            why, naming the file and line).
        TypeError: a keyword other than ``time_coord``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "cavity.txt"
        ...     _ = path.write_text(
        ...         "% x  y  u @ Re=100  v @ Re=100\\n0 0 0.0 0.0\\n0.5 1 1.0 0.0\\n"
        ...     )
        ...     ref = load_reference(path, coords=("x", "y"), fields=("u", "v"))
        >>> ref.fields, ref.values.tolist()
        (('u', 'v'), [[0.0, 0.0], [1.0, 0.0]])
    """
    return _read_path(path, coords, fields, "auto", _time_coord("load_reference", kw))


def pinnacle_reference(
    name: str, *, coords: Sequence[str], fields: Sequence[str], **kw
) -> Reference:
    """Read one of the PINNacle reference solutions shipped with the package.

    The files are listed in [`PINNACLE_FILES`][cgmpinn_jax.problems.reference.PINNACLE_FILES]
    (their provenance and licence: ``cgmpinn_jax/data/pinnacle/README.md``):

    | ``name`` | ``coords`` | ``fields`` | points |
    | --- | --- | --- | --- |
    | ``burgers1d`` | ``("x", "t")`` | ``("u",)`` | 1111 |
    | ``poisson1_cg_data`` | ``("x", "y")`` | ``("u",)`` | 1246 |
    | ``lid_driven_a4`` | ``("x", "y")`` | ``("u", "v", "p")`` | 10201 |

    Args:
        name: the file name, with or without ``.dat.gz`` (``"burgers1d"`` or
            ``"burgers1d.dat.gz"``).
        coords: the names to give the coordinates, a tuple of strings, as in the table.
        fields: the names of the fields, a tuple of strings, as in the table (the order may
            differ: the values' columns follow it).
        **kw: only ``time_coord=``, as for
            [`read_comsol`][cgmpinn_jax.problems.read_comsol].

    Returns:
        A [`Reference`][cgmpinn_jax.problems.Reference] with ``source`` ``"pinnacle/<file>"``.

    Raises:
        ValueError: ``name`` is not a shipped file, or ``coords`` / ``fields`` do not match it.
        FileNotFoundError: the package was installed without its data files.

    Examples:
        >>> ref = pinnacle_reference("burgers1d", coords=("x", "t"), fields=("u",))
        >>> (
        ...     ref.source,
        ...     ref.points.shape,
        ...     ref.points.min(axis=0).tolist(),
        ...     ref.points.max(axis=0).tolist(),
        ... )
        ('pinnacle/burgers1d.dat.gz', (1111, 2), [-1.0, 0.0], [1.0, 1.0])
    """
    file = re.sub(r"(\.dat)?(\.gz)?$", "", name) + ".dat.gz"
    if file not in PINNACLE_FILES:
        raise ValueError(f"no PINNacle reference {name!r}; the shipped ones are {PINNACLE_FILES}")
    res = resources.files("cgmpinn_jax") / "data" / "pinnacle" / file
    if not res.is_file():
        raise FileNotFoundError(
            f"package data cgmpinn_jax/data/pinnacle/{file} is not installed; reinstall "
            "cgmpinn-jax (its wheel must include cgmpinn_jax/data/pinnacle/*)"
        )
    return _load_bytes(
        res.read_bytes(),
        file,
        f"pinnacle/{file}",
        coords,
        fields,
        "auto",
        _time_coord("pinnacle_reference", kw),
    )
