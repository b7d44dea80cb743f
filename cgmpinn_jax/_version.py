"""The installed package's version (from its metadata), in a module that imports nothing else
of the package."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("cgmpinn-jax")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
    __version__ = "0+unknown"
