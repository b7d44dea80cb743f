"""Reference solutions as data: points ``(M, d)`` and values ``(M, F)`` of named fields, read
from COMSOL text exports, CSV, whitespace tables, ``.npy`` or ``.npz`` (each optionally gzipped),
with the sha256 of the bytes they came from. Every failure is a ``ValueError``
(``FileNotFoundError`` for a missing file) naming the file and the culprit: the column count, a
NaN or Inf, a field name, a point outside the domain. Three reference files of the PINNacle
benchmark ship with the package (`pinnacle_reference`; see ``data/pinnacle/README.md``).
"""

from __future__ import annotations

from ._readers import (
    PINNACLE_FILES,
    Reference,
    file_sha256,
    load_reference,
    pinnacle_reference,
    read_comsol,
    read_table,
)

__all__ = [
    "Reference",
    "read_comsol",
    "read_table",
    "load_reference",
    "file_sha256",
    "pinnacle_reference",
    "PINNACLE_FILES",
]
