"""The ``cgmpinn-jax`` command: ``run``, ``infer`` and ``list``."""

from ._main import main as main

__all__ = ["main"]
