"""The benchmark studies, run from the repository root as ``python -m benchmarks.<study>``.

Not part of the installed package (``cgmpinn_jax``): the studies share one harness,
``runcache`` (run records), ``machine`` (where and at which commit a run ran) and ``tracking``
(first reach of an error, a cached Adam start); ``retired`` runs a retired study at its commit.
"""
