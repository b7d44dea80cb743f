"""The benchmark harness's tests (``python -m pytest -q -p no:xdist benchmarks/tests``), apart from
the library's suite in tests/: nothing there imports ``benchmarks``."""
