"""The benchmark studies, run from the repository root as ``python -m benchmarks.<study>``.

Not part of the installed package (``cgmpinn_jax``): the scripts share ``runcache`` (run
records, machine description, thread flags) and ``tables_lib`` (tables from the records).
"""
